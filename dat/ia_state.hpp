// Process-wide facts the front end learns from the ia_query it issues inside dat_ia_openv
// (docs/dat-abi.md §5.4 step 7):
//  - whether any IA opened so far supports extensions (gates dat_extension_op, §10.2);
//  - per open IA, the provider's "debug_query" / "debug_modify" functions (dat_trace.h),
//    which dat_trclvl_*(DAPL) forwards to.
#pragma once

#include "api.hpp"

#include <cstdint>

namespace opendat::dat {

void set_extensions_available() noexcept;
bool extensions_available() noexcept;

// Remembers the debug functions of the IA at `index` (either may be NULL). Fails only
// for lack of memory; the IA works regardless.
void remember_debug_hooks(std::uintptr_t index, DAT_TRCLVL_QUERY_FUNC query,
                          DAT_TRCLVL_MODIFY_FUNC modify) noexcept;
// Forgets them; called before the provider can be unloaded.
void forget_debug_hooks(std::uintptr_t index) noexcept;

// dat_trclvl_*(DAPL): DAT_INVALID_STATE when no open IA reports the function.
DAT_RETURN query_provider_level(DAT_UINT32 *level) noexcept;
DAT_RETURN modify_provider_level(DAT_UINT32 level) noexcept;

}  // namespace opendat::dat

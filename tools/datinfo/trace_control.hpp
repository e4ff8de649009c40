// --trace: reading and changing trace levels in *this* process. The DAT component is this
// process's libdat2 (dat_trclvl_query/modify); a provider's level is reached through the
// "debug_query"/"debug_modify" function pointers among the attributes of an IA datinfo
// opened. Another process's levels live in its own memory and cannot be changed from here.
#pragma once

#include "document.hpp"
#include "options.hpp"

#include <dat2/dat_trace.h>

#include <vector>

namespace datinfo {

// Applies the dat=N changes; returns {"before", "after"} (or an error) for the report.
// *failed is set when a change could not be applied.
Node apply_dat_trace(const std::vector<TraceChange> &changes, bool *failed);

// The provider's trace functions, found among an open IA's attributes.
struct ProviderTraceFns {
    DAT_TRCLVL_QUERY_FUNC query = nullptr;
    DAT_TRCLVL_MODIFY_FUNC modify = nullptr;
    bool vendor_extension = false;  // "vendor_extension" present
};

ProviderTraceFns find_trace_fns(const DAT_NAMED_ATTR *a, DAT_COUNT na, const DAT_NAMED_ATTR *b,
                                DAT_COUNT nb);

// Shows (and with dapl=N changes) the level of one open provider.
Node provider_trace(const ProviderTraceFns &fns, const std::vector<TraceChange> &changes,
                    bool *failed);

}  // namespace datinfo

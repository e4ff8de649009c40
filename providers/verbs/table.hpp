// The verbs provider's DAT_PROVIDER table: util's, with the slots whose behaviour depends
// on the device replaced (IA query, PZ/LMR/RMR, CQ-backed EVDs).
#pragma once

#include "util/objects.hpp"

namespace opendat::verbs {

// Idempotent; called before the first IA of `inst` exists (from make_transport), so no
// handle of this instance has been dispatched through the table yet.
void patch_table(util::ProviderInstance *inst) noexcept;

}  // namespace opendat::verbs

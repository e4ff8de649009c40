// DAT_IA_ATTR / DAT_PROVIDER_ATTR / default DAT_EP_ATTR builders, and the vendor
// attributes every OpenDAT provider reports (see <dat2/dat_trace.h>).
#pragma once

#include "util/objects.hpp"

namespace opendat::util {

// The IA's provider-specific attributes (Ia::specific) from its transport's limits; once,
// when the IA opens.
void build_specific_attrs(Ia *ia) noexcept;
void fill_ia_attr(Ia *ia, DAT_IA_ATTR *out) noexcept;
void fill_provider_attr(Ia *ia, DAT_PROVIDER_ATTR *out) noexcept;
void default_ep_attr(const Limits &lim, DAT_EP_ATTR *out) noexcept;

}  // namespace opendat::util

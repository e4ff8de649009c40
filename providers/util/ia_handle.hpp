// Consumer-visible IA handles.
//
// The registry hands providers raw IA pointers, but consumers hold whatever the hosting
// libdat2 gave them (the reference: small integers). Any IA handle a provider returns to a
// consumer (query results, events) goes through consumer_ia_handle(), which asks the host's
// dats_get_ia_handle() for the reverse mapping. The symbol is looked up at run time so the
// provider also loads under a libdat2 that does not have it (then the raw pointer is used).
#pragma once

#include <dat2/udat.h>

namespace opendat::util {

DAT_IA_HANDLE consumer_ia_handle(DAT_IA_HANDLE raw) noexcept;

}  // namespace opendat::util

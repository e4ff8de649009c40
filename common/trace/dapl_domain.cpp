// The DAPL domain (providers) and the module constructor that configures it.
//
// Each domain lives in its own object file of the static library, so a module links, and
// configures at load, exactly the domains it traces in: libdat2 gets DAT, a provider DAPL,
// a program using both gets both. A module therefore never reports problems with the
// other domain's variables.
#include "trace/trace.hpp"
#include "tunables/tunables.hpp"

namespace opendat::trace {

constinit Domain g_dapl_domain{DomainSpec{"DAPL", tunables::kDaplTraceLevel.name,
                                          tunables::kDaplTraceDest.name,
                                          tunables::kDaplDbgType.name, tunables::kDaplDbgDest.name,
                                          tunables::kDaplTraceSubsys.name, kError}};

namespace {
// Runs when the module is loaded, before any of its code can trace.
__attribute__((constructor)) void configure_dapl_domain() noexcept {
    g_dapl_domain.configure_from_environment();
}
// Runs when the module is unloaded (a provider's dlclose, or exit): gives the destination
// sets back, so unloading a provider leaks neither memory nor trace-file descriptors.
__attribute__((destructor)) void release_dapl_domain() noexcept {
    g_dapl_domain.release_at_unload();
}
}  // namespace

}  // namespace opendat::trace

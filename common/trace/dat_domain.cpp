// The DAT domain (front end and registry) and the module constructor that configures it.
//
// Each domain lives in its own object file of the static library, so a module links, and
// configures at load, exactly the domains it traces in: libdat2 gets DAT, a provider DAPL,
// a program using both gets both. A module therefore never reports problems with the
// other domain's variables.
#include "trace/trace.hpp"
#include "tunables/tunables.hpp"

namespace opendat::trace {

constinit Domain g_dat_domain{DomainSpec{
    "DAT", tunables::kDatTraceLevel.name, tunables::kDatTraceDest.name, tunables::kDatDbgType.name,
    tunables::kDatDbgDest.name, tunables::kDatTraceSubsys.name, kError}};

namespace {
// Runs when the module is loaded, before any of its code can trace.
__attribute__((constructor)) void configure_dat_domain() noexcept {
    g_dat_domain.configure_from_environment();
}
// Runs when the module is unloaded (a provider's dlclose, or exit): gives the destination
// sets back, so unloading a provider leaks neither memory nor trace-file descriptors.
__attribute__((destructor)) void release_dat_domain() noexcept {
    g_dat_domain.release_at_unload();
}
}  // namespace

}  // namespace opendat::trace

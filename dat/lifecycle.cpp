// Library constructor and destructor. Like the reference, libdat2 reads dat.conf when it
// is loaded, so DAT_OVERRIDE must be in the environment at process start.
#include <registry/registry.hpp>
#include <trace/trace.hpp>

namespace {

__attribute__((constructor)) void dat_init() noexcept {
    opendat::trace::dat_domain().configure_from_environment();
    DAT_TRC(opendat::trace::kInfo, "lifecycle", "libdat2 started");
    opendat::registry::Registry::instance().initialize();
}

__attribute__((destructor)) void dat_fini() noexcept {
    opendat::registry::Registry::instance().shutdown();
    DAT_TRC(opendat::trace::kInfo, "lifecycle", "libdat2 stopped");
}

}  // namespace

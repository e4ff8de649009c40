// dat_registry_add_provider / remove_provider / list_providers: argument checks, then the
// registry. Providers resolve the first two from the global scope (docs/dat-abi.md §5.2).
#include "dispatch.hpp"

#include <registry/registry.hpp>

using namespace opendat::dat;
using opendat::registry::Registry;

extern "C" {

DAT_RETURN dat_registry_add_provider(const DAT_PROVIDER *provider, const DAT_PROVIDER_INFO *info) {
    if (provider == nullptr) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    // The reference dereferences a NULL info (crash); we refuse it.
    if (info == nullptr) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    DAT_TRC(opendat::trace::kInfo, "api", "dat_registry_add_provider(%.*s %u.%u %d)",
            DAT_NAME_MAX_LENGTH, info->ia_name, info->dapl_version_major, info->dapl_version_minor,
            info->is_thread_safe);
    const DAT_RETURN r = Registry::instance().add_provider(provider, info);
    if (r == DAT_SUCCESS) opendat::dat::handles::provider_added(provider);
    return r;
}

DAT_RETURN dat_registry_remove_provider(const DAT_PROVIDER *provider,
                                        const DAT_PROVIDER_INFO *info) {
    if (provider == nullptr) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    if (info == nullptr) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    DAT_TRC(opendat::trace::kInfo, "api", "dat_registry_remove_provider(%.*s)", DAT_NAME_MAX_LENGTH,
            info->ia_name);
    const DAT_RETURN r = Registry::instance().remove_provider(provider, info);
    if (r == DAT_SUCCESS) opendat::dat::handles::provider_removed(provider);
    return r;
}

DAT_RETURN dat_registry_list_providers(DAT_COUNT max, DAT_COUNT *count, DAT_PROVIDER_INFO *list[]) {
    if (count == nullptr) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (max > 0 && list == nullptr) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    return Registry::instance().list_providers(max, count, list);
}

}  // extern "C"

// The plugin's two exported entry points (see cmake/provider.map).
#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include "util/provider_table.hpp"
#include "verbs/transport.hpp"

extern "C" __attribute__((visibility("default"))) void dat_provider_init(
    const DAT_PROVIDER_INFO *info, const char *instance_data) {
    opendat::util::provider_init(info, instance_data, &opendat::verbs::make_transport);
}

extern "C" __attribute__((visibility("default"))) void dat_provider_fini(
    const DAT_PROVIDER_INFO *info) {
    opendat::util::provider_fini(info);
}

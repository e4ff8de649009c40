// Building a provider's DAT_PROVIDER table and registering it with the hosting registry.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <memory>

#include "util/objects.hpp"

namespace opendat::util {

using MakeTransportFn = DAT_RETURN (*)(ProviderInstance *inst, Ia *ia,
                                       std::unique_ptr<Transport> *out);

// A provider's own entry points for its hottest calls, in place of util's, which reach the
// endpoint through the Transport's virtual call (ia -> transport -> vtable: lines a polled
// ping-pong fetches again after every system call; docs/benchmarks.md). Each makes the
// same checks as util's (ep_checks.hpp: send_checks, recv_checks) inside a grace::Guard,
// then calls its endpoint directly: a provider library serves one Transport type, so every
// EP that reaches its table has that type's impl. A null member keeps util's.
struct HotEntries {
    DAT_EP_POST_SEND_FUNC ep_post_send = nullptr;
    DAT_EP_POST_RECV_FUNC ep_post_recv = nullptr;
};

// dat_provider_init's body: creates the instance for `info` (one per IA name), fills its
// table with the util entry points (and `hot`'s, where given) — every slot we do not
// implement gets a typed stub returning DAT_NOT_IMPLEMENTED, because the reference libdat2
// calls slots unchecked — and registers it with dat_registry_add_provider.
void provider_init(const DAT_PROVIDER_INFO *info, const char *ia_params, MakeTransportFn make,
                   const HotEntries *hot = nullptr) noexcept;
// dat_provider_fini's body: unregisters and destroys the instance for `info`.
void provider_fini(const DAT_PROVIDER_INFO *info) noexcept;
// The instance serving IA name `name` (ia_open receives only the name).
ProviderInstance *find_instance(const char *name) noexcept;

}  // namespace opendat::util

// A provider plugin's two exports (cmake/provider.map keeps only these): one line in the
// provider's provider.cpp, OPENDAT_PROVIDER_ENTRY_POINTS(&foo::make_transport), or
// OPENDAT_PROVIDER_ENTRY_POINTS(&foo::make_transport, &foo::kHotEntries).
#define OPENDAT_PROVIDER_ENTRY_POINTS(make_transport_fn, ...)                          \
    extern "C" __attribute__((visibility("default"))) void dat_provider_init(          \
        const DAT_PROVIDER_INFO *info, const char *instance_data) {                    \
        ::opendat::util::provider_init(info, instance_data,                            \
                                       (make_transport_fn)__VA_OPT__(, ) __VA_ARGS__); \
    }                                                                                  \
    extern "C" __attribute__((visibility("default"))) void dat_provider_fini(          \
        const DAT_PROVIDER_INFO *info) {                                               \
        ::opendat::util::provider_fini(info);                                          \
    }

// What libdat2 provides to provider plugins, reduced to the registry: the two C entry
// points, exported from the test executable (ENABLE_EXPORTS) so that plugins dlopened with
// RTLD_GLOBAL resolve them, plus a hook through which the fake provider reports events.
#include "registry_test_support.hpp"

#include <cstring>
#include <mutex>

#define TEST_EXPORT extern "C" __attribute__((visibility("default")))

TEST_EXPORT DAT_RETURN dat_registry_add_provider(const DAT_PROVIDER *provider,
                                                 const DAT_PROVIDER_INFO *info) {
    return opendat::registry::Registry::instance().add_provider(provider, info);
}

TEST_EXPORT DAT_RETURN dat_registry_remove_provider(const DAT_PROVIDER *provider,
                                                    const DAT_PROVIDER_INFO *info) {
    return opendat::registry::Registry::instance().remove_provider(provider, info);
}

namespace registry_test {
namespace {
std::mutex g_mu;
std::vector<Event> g_events;
}  // namespace

std::vector<Event> events() {
    std::lock_guard lk(g_mu);
    return g_events;
}

void clear_events() {
    std::lock_guard lk(g_mu);
    g_events.clear();
}

int count(const std::string &event, const std::string &ia_name) {
    std::lock_guard lk(g_mu);
    int n = 0;
    for (const auto &e : g_events)
        if (e.event == event && e.ia_name == ia_name) ++n;
    return n;
}
}  // namespace registry_test

TEST_EXPORT void opendat_test_hook(const char *event, const char *ia_name, int value) {
    std::lock_guard lk(registry_test::g_mu);
    registry_test::g_events.push_back({event, ia_name, value});
}

namespace {
DAT_PROVIDER_INFO test_key(const char *ia_name) {
    DAT_PROVIDER_INFO k{};
    std::strncpy(k.ia_name, ia_name, DAT_NAME_MAX_LENGTH - 1);
    k.dapl_version_major = 2;
    return k;
}
}  // namespace

// For the fake provider's "open:<name>" mode: a provider that opens another IA name
// (as a consumer would) from inside its dat_provider_init.
TEST_EXPORT DAT_RETURN opendat_test_open(const char *ia_name) {
    const DAT_PROVIDER *p = nullptr;
    return opendat::registry::Registry::instance().open_provider(test_key(ia_name), &p);
}

TEST_EXPORT DAT_RETURN opendat_test_close(const char *ia_name) {
    return opendat::registry::Registry::instance().close_provider(test_key(ia_name));
}

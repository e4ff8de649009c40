// The registry with real dlopen()ed fake providers: load/unload and reference counts,
// chained duplicates, failure reasons, the dynamic registry's error codes, concurrency.
#include "registry_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

using namespace opendat::registry;
using registry_test::clear_events;
using registry_test::count;

namespace {

constexpr DAT_RETURN kNotFound = 0x800A0064;
constexpr DAT_RETURN kInvalidArg1 = 0x80060025;
constexpr DAT_RETURN kInvalidArg2 = 0x80060026;
constexpr DAT_RETURN kInvalidArg3 = 0x80060027;
constexpr DAT_RETURN kInvalidState = 0x80070000;
constexpr DAT_RETURN kAlreadyRegistered = 0x80100000;
constexpr DAT_RETURN kInUse = 0x80110000;

const std::string kFake = REGISTRY_TEST_FAKE_PROVIDER;

DAT_PROVIDER_INFO key(const std::string &name, bool thread_safe = false, DAT_UINT32 major = 2,
                      DAT_UINT32 minor = 0) {
    DAT_PROVIDER_INFO k{};
    std::strncpy(k.ia_name, name.c_str(), DAT_NAME_MAX_LENGTH - 1);
    k.dapl_version_major = major;
    k.dapl_version_minor = minor;
    k.is_thread_safe = thread_safe ? DAT_TRUE : DAT_FALSE;
    return k;
}

std::string entry(const std::string &name, const std::string &lib,
                  const std::string &params = "dev 0",
                  const std::string &rest = "u2.0 nonthreadsafe default") {
    return name + " " + rest + " \"" + lib + "\" opendat.2.0 \"" + params + "\" \"\"\n";
}

bool has_reason(const std::vector<LoadFailure> &v, const std::string &part) {
    for (const auto &f : v)
        if (f.reason.find(part) != std::string::npos) return true;
    return false;
}

class RegistryLoader : public ::testing::Test {
  protected:
    Registry &reg = Registry::instance();
    std::filesystem::path dir;

    void SetUp() override {
        char tmpl[] = "/tmp/opendat-registry-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir = tmpl;
        clear_events();
    }
    void TearDown() override {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        unsetenv("DAT_OVERRIDE");
    }
    // Writes the configuration, points DAT_OVERRIDE at it and re-reads the registry.
    void use_config(const std::string &text, const std::string &name = "dat.conf") {
        const auto path = (dir / name).string();
        FILE *f = std::fopen(path.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
        setenv("DAT_OVERRIDE", path.c_str(), 1);
        reg.initialize();
        ASSERT_TRUE(reg.initialized());
        ASSERT_EQ(reg.snapshot().path, path);
        ASSERT_EQ(reg.snapshot().reason, "DAT_OVERRIDE");
    }
    const DAT_PROVIDER *open_ok(const std::string &name) {
        const DAT_PROVIDER *p = nullptr;
        const auto k = key(name);
        EXPECT_EQ(reg.open_provider(k, &p), DAT_SUCCESS) << name;
        return p;
    }
};

}  // namespace

TEST_F(RegistryLoader, InitOnFirstOpenFiniOnLastCloseReinitAfterReopen) {
    use_config(entry("fake-a", kFake));
    const DAT_PROVIDER *p1 = open_ok("fake-a");
    ASSERT_NE(p1, nullptr);
    EXPECT_STREQ(p1->device_name, "fake-a");
    EXPECT_EQ(count("init", "fake-a"), 1);
    EXPECT_EQ(count("add", "fake-a"), 1);
    const DAT_PROVIDER *p2 = open_ok("fake-a");
    EXPECT_EQ(p2, p1);
    EXPECT_EQ(count("init", "fake-a"), 1);  // 1 -> 2: no second init

    EXPECT_EQ(reg.close_provider(key("fake-a")), DAT_SUCCESS);
    EXPECT_EQ(count("fini", "fake-a"), 0);
    EXPECT_EQ(reg.close_provider(key("fake-a")), DAT_SUCCESS);
    EXPECT_EQ(count("fini", "fake-a"), 1);  // 1 -> 0: fini, which removed the provider
    for (const auto &e : registry_test::events())
        if (e.event == "remove" || e.event == "add") {
            EXPECT_EQ(e.value, 0) << e.event;
        }
    EXPECT_EQ(reg.close_provider(key("fake-a")), kNotFound);  // not open any more

    ASSERT_NE(open_ok("fake-a"), nullptr);
    EXPECT_EQ(count("init", "fake-a"), 2);  // fresh load
    EXPECT_EQ(reg.close_provider(key("fake-a")), DAT_SUCCESS);
    EXPECT_EQ(count("fini", "fake-a"), 2);
}

TEST_F(RegistryLoader, OneLibrarySeveralIaNames) {
    use_config(entry("multi-1", kFake, "d 1") + entry("multi-2", kFake, "d 2"));
    const DAT_PROVIDER *a = open_ok("multi-1");
    const DAT_PROVIDER *b = open_ok("multi-2");
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_NE(a, b);
    EXPECT_STREQ(b->device_name, "multi-2");
    EXPECT_EQ(count("init", "multi-1"), 1);
    EXPECT_EQ(count("init", "multi-2"), 1);
    EXPECT_EQ(reg.close_provider(key("multi-1")), DAT_SUCCESS);
    EXPECT_EQ(reg.close_provider(key("multi-2")), DAT_SUCCESS);
    EXPECT_EQ(count("fini", "multi-1"), 1);
    EXPECT_EQ(count("fini", "multi-2"), 1);
}

TEST_F(RegistryLoader, ChainedDuplicatesTriedInFileOrder) {
    use_config(entry("dup", "/nonexistent/libfirst.so") + entry("dup", kFake) +
               entry("dup", REGISTRY_TEST_NO_ENTRY_POINTS));
    ASSERT_NE(open_ok("dup"), nullptr);
    EXPECT_EQ(count("init", "dup"), 1);
    auto why = reg.last_failures("dup");  // the skipped candidate is still explained
    ASSERT_EQ(why.size(), 1u);
    EXPECT_EQ(why[0].library, "/nonexistent/libfirst.so");
    EXPECT_NE(why[0].reason.find("No such file"), std::string::npos) << why[0].reason;
    DAT_COUNT n = 0;
    EXPECT_EQ(reg.list_providers(0, &n, nullptr), kInvalidArg1);
    EXPECT_EQ(n, 1);  // one static-registry entry per key
    EXPECT_EQ(reg.close_provider(key("dup")), DAT_SUCCESS);
    EXPECT_EQ(count("fini", "dup"), 1);
}

TEST_F(RegistryLoader, MissingPathReportsDlerror) {
    use_config(entry("missing", "/nonexistent/libmissing.so"));
    const DAT_PROVIDER *p = reinterpret_cast<const DAT_PROVIDER *>(1);
    EXPECT_EQ(reg.open_provider(key("missing"), &p), kNotFound);
    EXPECT_EQ(p, nullptr);
    auto why = reg.last_failures("missing");
    ASSERT_FALSE(why.empty());
    EXPECT_EQ(why[0].library, "/nonexistent/libmissing.so");
    EXPECT_TRUE(has_reason(why, "cannot open shared object file")) << why[0].reason;
}

TEST_F(RegistryLoader, UndefinedSymbolFailsToLoad) {
    use_config(entry("undef", REGISTRY_TEST_UNDEFINED_SYMBOL));
    const DAT_PROVIDER *p = nullptr;
    EXPECT_EQ(reg.open_provider(key("undef"), &p), kNotFound);
    EXPECT_TRUE(has_reason(reg.last_failures("undef"), "undefined symbol"));
}

TEST_F(RegistryLoader, LibraryWithoutEntryPoints) {
    use_config(entry("noentry", REGISTRY_TEST_NO_ENTRY_POINTS));
    const DAT_PROVIDER *p = nullptr;
    EXPECT_EQ(reg.open_provider(key("noentry"), &p), kNotFound);
    EXPECT_TRUE(has_reason(reg.last_failures("noentry"), "no dat_provider_init entry point"));
}

TEST_F(RegistryLoader, InitThatRegistersNothing) {
    use_config(entry("quiet", kFake, "noregister"));
    const DAT_PROVIDER *p = nullptr;
    EXPECT_EQ(reg.open_provider(key("quiet"), &p), kNotFound);
    EXPECT_EQ(count("init", "quiet"), 1);
    EXPECT_EQ(count("fini", "quiet"), 1);  // the reference we took is given back
    EXPECT_TRUE(has_reason(reg.last_failures("quiet"), "registered no provider"));
}

TEST_F(RegistryLoader, KeyMustMatchVersionAndThreadSafety) {
    use_config(entry("keyed", kFake));
    const DAT_PROVIDER *p = nullptr;
    EXPECT_EQ(reg.open_provider(key("keyed", true), &p), kNotFound);
    EXPECT_EQ(reg.open_provider(key("keyed", false, 2, 1), &p), kNotFound);
    EXPECT_EQ(reg.open_provider(key("keye"), &p), kNotFound);
    EXPECT_EQ(count("init", "keyed"), 0);
    EXPECT_TRUE(has_reason(reg.last_failures("keyed"), "as u2.0 nonthreadsafe"));
}

TEST_F(RegistryLoader, KernelAndNondefaultEntriesAreParsedButNotLoaded) {
    use_config(entry("kern", kFake, "x", "k2.0 nonthreadsafe default") +
               entry("nd", kFake, "x", "u2.0 nonthreadsafe nondefault") + entry("yes", kFake));
    ConfigSnapshot s = reg.snapshot();
    ASSERT_EQ(s.entries.size(), 3u);
    EXPECT_FALSE(s.entries[0].loadable);
    EXPECT_NE(s.entries[0].not_loaded_reason.find("kernel"), std::string::npos);
    EXPECT_FALSE(s.entries[1].loadable);
    EXPECT_NE(s.entries[1].not_loaded_reason.find("nondefault"), std::string::npos);
    EXPECT_TRUE(s.entries[2].loadable);

    DAT_COUNT n = 0;
    EXPECT_EQ(reg.list_providers(0, &n, nullptr), kInvalidArg1);
    EXPECT_EQ(n, 1);
    const DAT_PROVIDER *p = nullptr;
    EXPECT_EQ(reg.open_provider(key("nd"), &p), kNotFound);
    EXPECT_TRUE(has_reason(reg.last_failures("nd"), "nondefault"));
    EXPECT_EQ(count("init", "nd"), 0);
}

TEST_F(RegistryLoader, ListProvidersEdgeCases) {
    use_config(entry("l-1", kFake) + entry("l-2", kFake, "x", "u2.0 threadsafe default") +
               entry("l-3", kFake));
    DAT_COUNT n = -1;
    EXPECT_EQ(reg.list_providers(0, &n, nullptr), kInvalidArg1);
    EXPECT_EQ(n, 3);
    EXPECT_EQ(reg.list_providers(5, nullptr, nullptr), kInvalidArg2);
    EXPECT_EQ(reg.list_providers(5, &n, nullptr), kInvalidArg3);

    DAT_PROVIDER_INFO infos[5];
    std::memset(infos, 0xAB, sizeof infos);
    DAT_PROVIDER_INFO *list[5] = {&infos[0], &infos[1], &infos[2], &infos[3], &infos[4]};
    EXPECT_EQ(reg.list_providers(2, &n, list), DAT_SUCCESS);
    EXPECT_EQ(n, 2);
    EXPECT_STREQ(infos[0].ia_name, "l-1");
    EXPECT_STREQ(infos[1].ia_name, "l-2");
    EXPECT_EQ(infos[1].is_thread_safe, DAT_TRUE);
    EXPECT_EQ(infos[2].dapl_version_major, 0xABABABABu);  // untouched
    EXPECT_EQ(reg.list_providers(5, &n, list), DAT_SUCCESS);
    EXPECT_EQ(n, 3);
    EXPECT_STREQ(infos[2].ia_name, "l-3");
    EXPECT_EQ(infos[2].dapl_version_major, 2u);
    EXPECT_EQ(infos[2].dapl_version_minor, 0u);
}

TEST_F(RegistryLoader, AddRemoveErrorCodes) {
    use_config("");
    DAT_PROVIDER table{};
    const auto k = key("manual");
    EXPECT_EQ(reg.add_provider(nullptr, &k), kInvalidArg1);
    EXPECT_EQ(reg.add_provider(&table, nullptr), kInvalidArg2);  // the reference crashes here
    EXPECT_EQ(reg.remove_provider(nullptr, &k), kInvalidArg1);
    EXPECT_EQ(reg.remove_provider(&table, &k), kNotFound);
    EXPECT_EQ(reg.add_provider(&table, &k), DAT_SUCCESS);
    EXPECT_EQ(reg.add_provider(&table, &k), kAlreadyRegistered);
    const auto k_ts = key("manual", true);  // a different key
    EXPECT_EQ(reg.add_provider(&table, &k_ts), DAT_SUCCESS);

    // A provider registered without any static entry can be opened and closed.
    const DAT_PROVIDER *p = nullptr;
    EXPECT_EQ(reg.open_provider(k, &p), DAT_SUCCESS);
    EXPECT_EQ(p, &table);
    EXPECT_EQ(reg.remove_provider(&table, &k), kInUse);
    EXPECT_EQ(reg.close_provider(k), DAT_SUCCESS);
    EXPECT_EQ(reg.remove_provider(&table, &k), DAT_SUCCESS);
    EXPECT_EQ(reg.remove_provider(&table, &k_ts), DAT_SUCCESS);
    EXPECT_EQ(reg.remove_provider(&table, &k), kNotFound);
}

TEST_F(RegistryLoader, RemoveWhileOpenIsInUse) {
    use_config(entry("busy", kFake));
    const DAT_PROVIDER *p = open_ok("busy");
    const auto k = key("busy");
    EXPECT_EQ(reg.remove_provider(p, &k), kInUse);
    EXPECT_EQ(reg.close_provider(k), DAT_SUCCESS);
    EXPECT_EQ(count("fini", "busy"), 1);
}

TEST_F(RegistryLoader, NotInitialised) {
    use_config(entry("state", kFake));
    reg.shutdown();
    EXPECT_FALSE(reg.initialized());
    const DAT_PROVIDER *p = nullptr;
    EXPECT_EQ(reg.open_provider(key("state"), &p), kInvalidState);
    DAT_PROVIDER table{};
    const auto k = key("state");
    EXPECT_EQ(reg.add_provider(&table, &k), kInvalidState);
    DAT_COUNT n = 0;
    EXPECT_EQ(reg.list_providers(0, &n, nullptr), kInvalidState);
    reg.initialize();
    EXPECT_TRUE(reg.initialized());
}

TEST_F(RegistryLoader, ShutdownAndReinitializeKeepOpenLibraries) {
    use_config(entry("kept", kFake));
    ASSERT_NE(open_ok("kept"), nullptr);
    use_config(entry("other", kFake));  // re-read: 'kept' is no longer configured
    reg.shutdown();
    EXPECT_EQ(count("fini", "kept"), 0);
    EXPECT_EQ(reg.close_provider(key("kept")), DAT_SUCCESS);  // still finalised properly
    EXPECT_EQ(count("fini", "kept"), 1);
    for (const auto &e : registry_test::events())
        if (e.event == "remove") {
            EXPECT_EQ(e.value, 0);
        }
    reg.initialize();
}

TEST_F(RegistryLoader, BadOverrideHasNoFallback) {
    setenv("DAT_OVERRIDE", "/nonexistent/dat.conf", 1);
    reg.initialize();
    ConfigSnapshot s = reg.snapshot();
    EXPECT_EQ(s.path, "/nonexistent/dat.conf");
    EXPECT_EQ(s.reason, "DAT_OVERRIDE");
    EXPECT_FALSE(s.opened);
    EXPECT_TRUE(s.entries.empty());
    ASSERT_EQ(s.diagnostics.size(), 1u);
    EXPECT_EQ(s.diagnostics[0].message, "DAT_OVERRIDE, bad filename - /nonexistent/dat.conf");
    const DAT_PROVIDER *p = nullptr;
    EXPECT_EQ(reg.open_provider(key("ofa-v2-ib0"), &p), kNotFound);
    EXPECT_TRUE(has_reason(reg.last_failures("ofa-v2-ib0"), "no configuration file was read"));
}

// DAT_OVERRIDE="" reads no file, like any bad DAT_OVERRIDE; it used to do so without a
// single error line, so every program simply found no providers.
TEST_F(RegistryLoader, EmptyOverrideIsReported) {
    setenv("DAT_OVERRIDE", "", 1);
    reg.initialize();
    ConfigSnapshot s = reg.snapshot();
    EXPECT_EQ(s.reason, "DAT_OVERRIDE");
    EXPECT_FALSE(s.opened);
    EXPECT_TRUE(s.entries.empty());
    ASSERT_EQ(s.diagnostics.size(), 1u);
    EXPECT_EQ(s.diagnostics[0].field, "file");
    EXPECT_EQ(s.diagnostics[0].message, "DAT_OVERRIDE is set but empty: no file is read");
}

TEST_F(RegistryLoader, DiagnosticsReachTheSnapshot) {
    use_config("ok u2.0 nonthreadsafe default lib.so dapl.2.0 \"\" \"\"\nbroken u2.0\n");
    ConfigSnapshot s = reg.snapshot();
    EXPECT_TRUE(s.opened);
    ASSERT_EQ(s.entries.size(), 1u);
    ASSERT_EQ(s.diagnostics.size(), 1u);
    EXPECT_EQ(s.diagnostics[0].line, 2);
    EXPECT_EQ(s.diagnostics[0].field, "thread_safety");
    EXPECT_EQ(s.diagnostics[0].file, (dir / "dat.conf").string());
}

TEST_F(RegistryLoader, YamlConfigurationWithTraceLevelAndSettings) {
    unsetenv("DAPL_TRACE_LEVEL");
    use_config(
        "providers:\n"
        "  - name: yaml-fake\n"
        "    api: u2.0\n"
        "    library: " +
            kFake +
            "\n"
            "    ia_params: \"lo 0\"\n"
            "    trace_level: 4\n"
            "    settings: {keepalive_ms: 5000}\n",
        "dat.yaml");
    ConfigSnapshot s = reg.snapshot();
    ASSERT_EQ(s.entries.size(), 1u);
    ASSERT_EQ(s.entries[0].settings.size(), 1u);
    EXPECT_EQ(s.entries[0].settings[0].second, "5000");
    ASSERT_NE(open_ok("yaml-fake"), nullptr);
    ASSERT_NE(std::getenv("DAPL_TRACE_LEVEL"), nullptr);
    EXPECT_STREQ(std::getenv("DAPL_TRACE_LEVEL"), "4");
    EXPECT_EQ(reg.close_provider(key("yaml-fake")), DAT_SUCCESS);
    unsetenv("DAPL_TRACE_LEVEL");
}

TEST_F(RegistryLoader, InitMayOpenAnotherEntry) {
    use_config(entry("outer", kFake, "open:inner") + entry("inner", kFake));
    ASSERT_NE(open_ok("outer"), nullptr);  // no deadlock: the loader lock is recursive
    EXPECT_EQ(count("init", "inner"), 1);
    auto ev = registry_test::events();
    auto nested =
        std::find_if(ev.begin(), ev.end(), [](const auto &e) { return e.event == "nested-open"; });
    ASSERT_NE(nested, ev.end());
    EXPECT_EQ(nested->value, 0);
    EXPECT_EQ(reg.close_provider(key("outer")), DAT_SUCCESS);
    EXPECT_EQ(count("fini", "outer"), 1);
    EXPECT_EQ(count("fini", "inner"), 1);  // outer's fini closed inner, the last user
    EXPECT_EQ(count("nested-close", "outer"), 1);
}

TEST_F(RegistryLoader, InitReopeningItsOwnEntryIsRefusedNotDeadlocked) {
    use_config(entry("selfish", kFake, "open:selfish"));
    ASSERT_NE(open_ok("selfish"), nullptr);
    auto ev = registry_test::events();
    auto nested =
        std::find_if(ev.begin(), ev.end(), [](const auto &e) { return e.event == "nested-open"; });
    ASSERT_NE(nested, ev.end());
    EXPECT_EQ(static_cast<DAT_RETURN>(nested->value), kNotFound);
    EXPECT_EQ(reg.close_provider(key("selfish")), DAT_SUCCESS);
    EXPECT_EQ(count("fini", "selfish"), 1);
    EXPECT_EQ(count("nested-close", "selfish"), 0);
}

TEST_F(RegistryLoader, OpenProviderNullOutput) {
    use_config("");
    EXPECT_EQ(reg.open_provider(key("x"), nullptr), kInvalidArg2);
}

TEST_F(RegistryLoader, ConcurrentOpenCloseOfTheSameEntries) {
    use_config(entry("conc-1", kFake, "slow") + entry("conc-2", kFake, "slow") +
               entry("conc-bad", "/nonexistent/libx.so"));
    constexpr int kThreads = 8;
    constexpr int kRounds = 400;
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            const auto k1 = key("conc-1"), k2 = key("conc-2"), kb = key("conc-bad");
            for (int i = 0; i < kRounds; ++i) {
                const auto &k = (t + i) % 3 == 0 ? k2 : k1;
                const DAT_PROVIDER *p = nullptr;
                if (reg.open_provider(k, &p) != DAT_SUCCESS || !p) {
                    ++errors;
                    continue;
                }
                if (std::strcmp(p->device_name, k.ia_name) != 0) ++errors;
                if (i % 5 == 0) std::this_thread::yield();
                if (reg.close_provider(k) != DAT_SUCCESS) ++errors;
                if (i % 10 == 0 && reg.open_provider(kb, &p) != kNotFound) ++errors;
                if (i % 25 == 0) (void)reg.snapshot();
            }
        });
    }
    for (auto &th : threads) th.join();
    EXPECT_EQ(errors.load(), 0);
    for (const char *n : {"conc-1", "conc-2"}) {
        EXPECT_GE(count("init", n), 1) << n;
        EXPECT_EQ(count("init", n), count("fini", n)) << n;  // every load was unloaded
        EXPECT_EQ(count("overlap", n), 0) << n;              // init/fini never ran concurrently
    }
    for (const auto &e : registry_test::events())
        if (e.event == "add" || e.event == "remove") {
            EXPECT_EQ(e.value, 0) << e.event << " " << e.ia_name;
        }
    EXPECT_EQ(reg.close_provider(key("conc-1")), kNotFound);  // nothing left open
}

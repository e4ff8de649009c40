// Which configuration file is chosen, with fake inputs.
#include "config_locator.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>
#include <set>

using namespace opendat::registry;

namespace {

LocatorInputs inputs(std::set<std::string> existing) {
    LocatorInputs in;
    in.module_dir = "/usr/lib/x86_64-linux-gnu";
    in.build_lib_dir = "/src/build/lib";
    in.build_conf = "/src/build/conf/dat.conf";
    in.installed_conf = "/usr/local/etc/dat.conf";
    in.readable = [existing](const std::string &p) { return existing.count(p) > 0; };
    return in;
}

}  // namespace

TEST(ConfigLocator, OverrideWins) {
    auto in = inputs({"/tmp/my.conf", "/usr/local/etc/dat.conf"});
    in.dat_override = "/tmp/my.conf";
    auto r = locate_config(in);
    EXPECT_TRUE(r.found);
    EXPECT_EQ(r.path, "/tmp/my.conf");
    EXPECT_EQ(r.reason, "DAT_OVERRIDE");
}

TEST(ConfigLocator, BadOverrideDoesNotFallBack) {
    auto in = inputs({"/usr/local/etc/dat.conf", "/etc/dat.conf"});
    in.dat_override = "/tmp/missing.conf";
    auto r = locate_config(in);
    EXPECT_FALSE(r.found);
    EXPECT_EQ(r.path, "/tmp/missing.conf");
    EXPECT_EQ(r.reason, "DAT_OVERRIDE");
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_EQ(r.notes[0], "DAT_OVERRIDE, bad filename - /tmp/missing.conf");
}

TEST(ConfigLocator, OverrideIgnoredWhenSetuid) {
    auto in = inputs({"/tmp/my.conf", "/usr/local/etc/dat.conf"});
    in.dat_override = "/tmp/my.conf";
    in.setuid = true;
    auto r = locate_config(in);
    EXPECT_EQ(r.path, "/usr/local/etc/dat.conf");
    EXPECT_EQ(r.reason, "installed default");
    ASSERT_FALSE(r.notes.empty());
    EXPECT_NE(r.notes[0].find("setuid"), std::string::npos);
}

TEST(ConfigLocator, BuildTreeOnlyWhenRunningFromIt) {
    auto in = inputs({"/src/build/conf/dat.conf", "/usr/local/etc/dat.conf"});
    EXPECT_EQ(locate_config(in).reason, "installed default");
    in.module_dir = "/src/build/lib";
    auto r = locate_config(in);
    EXPECT_EQ(r.path, "/src/build/conf/dat.conf");
    EXPECT_EQ(r.reason, "build tree");
    in.module_dir = "/src/build/lib/../lib";  // compared after normalisation
    EXPECT_EQ(locate_config(in).reason, "build tree");
}

TEST(ConfigLocator, BuildTreeConfigMissingFallsBackToInstalled) {
    auto in = inputs({"/usr/local/etc/dat.conf"});
    in.module_dir = "/src/build/lib";
    auto r = locate_config(in);
    EXPECT_EQ(r.reason, "installed default");
    EXPECT_FALSE(r.notes.empty());
}

TEST(ConfigLocator, ReferenceDefaultLast) {
    auto r = locate_config(inputs({"/etc/dat.conf"}));
    EXPECT_TRUE(r.found);
    EXPECT_EQ(r.path, "/etc/dat.conf");
    EXPECT_EQ(r.reason, "reference default");
}

TEST(ConfigLocator, NothingFound) {
    auto r = locate_config(inputs({}));
    EXPECT_FALSE(r.found);
    EXPECT_EQ(r.path, "/usr/local/etc/dat.conf");
    ASSERT_FALSE(r.notes.empty());
    EXPECT_NE(r.notes.back().find("no configuration file found"), std::string::npos);
}

TEST(ConfigLocator, RealInputsDescribeThisProcess) {
    LocatorInputs in = current_locator_inputs();
    EXPECT_FALSE(in.module_dir.empty());  // dladdr found the test executable
    EXPECT_FALSE(in.installed_conf.empty());
    EXPECT_TRUE(static_cast<bool>(in.readable));
}

// An installation moved elsewhere (or installed with cmake --install --prefix) finds the
// dat.conf that sits at the same relative place next to its libdat2.
TEST(ConfigLocator, RelocatedInstallFindsItsOwnConf) {
    auto in = inputs({"/opt/x/etc/dat.conf", "/usr/local/etc/dat.conf"});
    in.module_dir = "/opt/x/lib/x86_64-linux-gnu";
    in.libdir_to_conf = "../../etc/dat.conf";
    auto r = locate_config(in);
    EXPECT_TRUE(r.found);
    EXPECT_EQ(r.path, "/opt/x/etc/dat.conf");
    EXPECT_EQ(r.reason, "installed (relocated)");

    // Not there: the configured installed path is next.
    in.module_dir = "/elsewhere/lib/x86_64-linux-gnu";
    r = locate_config(in);
    EXPECT_EQ(r.path, "/usr/local/etc/dat.conf");
    EXPECT_EQ(r.reason, "installed default");
}

// The build tree wins over the relocation rule: its lib/ is not an installation.
TEST(ConfigLocator, RelocationDoesNotApplyToTheBuildTree) {
    auto in = inputs({"/src/build/conf/dat.conf", "/src/etc/dat.conf"});
    in.module_dir = "/src/build/lib";
    in.libdir_to_conf = "../../etc/dat.conf";
    auto r = locate_config(in);
    EXPECT_EQ(r.reason, "build tree");
}

// datinfo links the locator statically but must describe libdat2: module_dir then comes from
// the module that holds the address it passes (here a plugin), not from this executable.
TEST(ConfigLocator, InputsForAnotherModuleUseThatModulesDirectory) {
    void *h = dlopen(REGISTRY_TEST_NO_ENTRY_POINTS, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    void *sym = dlsym(h, "opendat_test_not_a_provider");
    ASSERT_NE(sym, nullptr) << dlerror();
    LocatorInputs in = current_locator_inputs(sym);
    const auto plugin_dir =
        std::filesystem::weakly_canonical(REGISTRY_TEST_NO_ENTRY_POINTS).parent_path();
    EXPECT_EQ(in.module_dir, plugin_dir.string());
    EXPECT_NE(in.module_dir, current_locator_inputs().module_dir);
    // Everything else is what the no-argument form gives.
    EXPECT_EQ(in.installed_conf, current_locator_inputs().installed_conf);
    EXPECT_EQ(in.build_lib_dir, current_locator_inputs().build_lib_dir);
    dlclose(h);

    // The build-tree rule follows the module passed in: a module in the build lib/ directory
    // selects the build-tree dat.conf, whatever executable runs the code.
    in.module_dir = in.build_lib_dir;
    in.readable = [&](const std::string &p) { return p == in.build_conf; };
    EXPECT_EQ(locate_config(in).reason, "build tree");
}

TEST(ConfigLocator, InputsForNoModuleLeaveModuleDirEmpty) {
    EXPECT_TRUE(current_locator_inputs(nullptr).module_dir.empty());
}

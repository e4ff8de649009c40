// Provider-ABI compatibility, loading side: our libdat2 hosts the real Debian DAPL providers
// (libdaplofa / libdaploscm / libdaploucm) and every open ends exactly as it does on the
// reference stack. On this kind of machine (no RDMA device) each provider fails in its own
// way, which makes the comparison meaningful: the error is the provider's, carried through
// our registry unchanged.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "child_process.hpp"

namespace fs = std::filesystem;
using opendat::testing::ChildOptions;
using opendat::testing::run_child;

namespace {

const char *const kDtest = "/usr/bin/dtest";
const char *const kDapltest = "/usr/bin/dapltest";
const char *const kReferenceLibDir = "/usr/lib/x86_64-linux-gnu";

class DebianProviders : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const char *f : {kDtest, kDapltest}) {
            if (!fs::exists(f)) GTEST_SKIP() << f << " missing: install dapl2-utils";
        }
        if (!fs::exists(std::string(kReferenceLibDir) + "/libdaplofa.so.2"))
            GTEST_SKIP() << "libdaplofa.so.2 missing: install libdapl2";
        if (fs::exists("/sys/class/infiniband") && !fs::is_empty("/sys/class/infiniband"))
            GTEST_SKIP() << "this machine has RDMA devices; the expected errors assume none";

        dir_ = fs::temp_directory_path() / ("opendat-compat-" + std::to_string(getpid()));
        fs::create_directories(dir_);
        conf_ = dir_ / "dat.conf";
        std::ofstream(conf_)
            << "# the reference providers, by soname as Debian's /etc/dat.conf names them\n"
               "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n"
               "ofa-v2-mlx4_0-1 u2.0 nonthreadsafe default libdaploscm.so.2 dapl.2.0 "
               "\"mlx4_0 1\" \"\"\n"
               "ofa-v2-mlx4_0-1u u2.0 nonthreadsafe default libdaploucm.so.2 dapl.2.0 "
               "\"mlx4_0 1\" \"\"\n"
               "ofa-v2-mcm-1 u2.0 nonthreadsafe default libdaplomcm.so.2 dapl.2.0 "
               "\"mlx4_0 1\" \"\"\n";
    }
    void TearDown() override {
        std::error_code ec;
        if (!dir_.empty()) fs::remove_all(dir_, ec);
    }

    // Runs a dapl2-utils program with the reference libdat2 (ours == false) or ours.
    opendat::testing::ChildResult run(std::vector<std::string> argv, bool ours) const {
        ChildOptions o;
        o.env["DAT_OVERRIDE"] = conf_.string();
        o.timeout = std::chrono::seconds(30);
        if (ours) {
            o.env["LD_LIBRARY_PATH"] = OPENDAT_LIB_DIR;
            for (auto &[k, v] : opendat::testing::sanitizer_env_for_system_binaries()) o.env[k] = v;
        } else {
            o.unset_env.push_back("LD_LIBRARY_PATH");
        }
        return run_child(argv, o);
    }

    fs::path dir_;
    fs::path conf_;
};

// dtest prints "<pid>: Error Adaptor open: <major> <minor>" on stderr when dat_ia_open fails.
std::string adaptor_open_error(const std::string &err) {
    static const std::regex re("Error Adaptor open: ([^\n]*)");
    std::smatch m;
    return std::regex_search(err, m, re) ? m[1].str() : std::string("<no error line>");
}

struct Case {
    const char *ia;
    const char *expected;  // what the reference stack prints on a machine without RDMA
};

TEST_F(DebianProviders, DtestOpenFailsExactlyAsOnTheReferenceStack) {
    const Case cases[] = {
        {"ofa-v2-ib0", "DAT_INVALID_ADDRESS "},                              // cma: no ib0 netdev
        {"ofa-v2-mlx4_0-1", "DAT_INTERNAL_ERROR "},                          // scm: no verbs device
        {"ofa-v2-mlx4_0-1u", "DAT_INTERNAL_ERROR "},                         // ucm: no verbs device
        {"ofa-v2-mcm-1", "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED"},  // library absent
        {"no-such-ia", "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.ia);
        auto ref = run({kDtest, "-P", c.ia}, false);
        auto ours = run({kDtest, "-P", c.ia}, true);
        EXPECT_FALSE(ours.timed_out);
        EXPECT_EQ(adaptor_open_error(ref.err), c.expected) << "reference stderr:\n" << ref.err;
        EXPECT_EQ(adaptor_open_error(ours.err), c.expected) << "ours stderr:\n"
                                                            << ours.err << "\nstdout:\n"
                                                            << ours.out;
        EXPECT_EQ(ours.exit_code, ref.exit_code);
        // No dynamic-linker trouble with our library.
        EXPECT_EQ(ours.err.find("symbol lookup error"), std::string::npos) << ours.err;
        EXPECT_EQ(ours.err.find("version information"), std::string::npos) << ours.err;
    }
}

TEST_F(DebianProviders, DapltestServerReportsTheProvidersError) {
    auto ref = run({kDapltest, "-T", "S", "-D", "ofa-v2-ib0"}, false);
    auto ours = run({kDapltest, "-T", "S", "-D", "ofa-v2-ib0"}, true);
    const std::string line = "Could not open ofa-v2-ib0 (DAT_INVALID_ADDRESS )";
    EXPECT_NE(ref.out.find(line), std::string::npos) << ref.out;
    EXPECT_NE(ours.out.find(line), std::string::npos) << ours.out << ours.err;
    EXPECT_EQ(ours.exit_code, ref.exit_code);
}

// The provider's own diagnostic (printed by libdaplofa itself) shows it really ran inside
// our process: the failure is not a registry shortcut.
TEST_F(DebianProviders, TheReferenceProviderCodeRuns) {
    auto ours = run({kDtest, "-P", "ofa-v2-ib0"}, true);
    EXPECT_NE(ours.out.find("getaddr_netdev ERROR"), std::string::npos) << "stdout:\n"
                                                                        << ours.out << "\nstderr:\n"
                                                                        << ours.err;
}

}  // namespace

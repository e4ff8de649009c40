// The readers: the environment's value when valid; otherwise the default and one DAPL
// warning that names the variable, the bad value and the default. Never a crash.
#include "trace/trace.hpp"
#include "tunables/tunables.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace tun = opendat::tunables;

namespace {

class TunablesRead : public ::testing::Test {
  protected:
    void SetUp() override {
        char dir[] = "/tmp/tunables_test_XXXXXX";
        ASSERT_NE(mkdtemp(dir), nullptr);
        dir_ = dir;
        log_ = dir_ + "/trace.log";
        setenv("DAPL_TRACE_DEST", log_.c_str(), 1);
        setenv("DAPL_TRACE_LEVEL", "2", 1);
        opendat::trace::dapl_domain().configure_from_environment();
    }
    void TearDown() override {
        for (const tun::Spec *s : tun::all()) unsetenv(s->name);
        opendat::trace::dapl_domain().configure_from_environment();
        std::remove(log_.c_str());
        rmdir(dir_.c_str());
    }
    std::string log() const {
        std::ifstream in(log_);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
    std::string dir_, log_;
};

TEST_F(TunablesRead, UnsetGivesTheDefaultSilently) {
    unsetenv(tun::kTcpConnectRetryMs.name);
    EXPECT_EQ(tun::read_int(tun::kTcpConnectRetryMs), 3000);
    const tun::Keepalive k = tun::read_keepalive(tun::kTcpKeepalive);
    EXPECT_TRUE(k.on);
    EXPECT_EQ(k.idle, 10);
    EXPECT_EQ(log(), "");
}

TEST_F(TunablesRead, ValidValueIsUsed) {
    setenv(tun::kTcpConnectRetryMs.name, "250", 1);
    EXPECT_EQ(tun::read_int(tun::kTcpConnectRetryMs), 250);
    setenv(tun::kTcpKeepalive.name, "0", 1);
    EXPECT_FALSE(tun::read_keepalive(tun::kTcpKeepalive).on);
    EXPECT_EQ(log(), "");
}

TEST_F(TunablesRead, InvalidIntGivesTheDefaultAndOneClearWarning) {
    setenv(tun::kTcpConnectRetryMs.name, "3 seconds", 1);
    EXPECT_EQ(tun::read_int(tun::kTcpConnectRetryMs), 3000);
    const std::string l = log();
    EXPECT_NE(l.find("DAPL WRN"), std::string::npos) << l;
    EXPECT_NE(l.find("tunables"), std::string::npos) << l;
    EXPECT_NE(l.find("DAT_TCP_CONNECT_RETRY_MS=\"3 seconds\": not a whole decimal number; "
                     "using the default 3000"),
              std::string::npos)
        << l;
}

TEST_F(TunablesRead, OutOfRangeAndBadKeepaliveFallBack) {
    setenv(tun::kVerbsMaxInline.name, "1000000", 1);
    EXPECT_EQ(tun::read_int(tun::kVerbsMaxInline), 0);
    setenv(tun::kTcpKeepalive.name, "10,2", 1);
    const tun::Keepalive k = tun::read_keepalive(tun::kTcpKeepalive);
    EXPECT_TRUE(k.on);
    EXPECT_EQ(k.interval, 2);
    const std::string l = log();
    EXPECT_NE(l.find("OPENDAT_VERBS_MAX_INLINE=\"1000000\": outside 0..65536; using the default 0"),
              std::string::npos)
        << l;
    EXPECT_NE(l.find("DAT_TCP_KEEPALIVE=\"10,2\""), std::string::npos) << l;
}

// An empty DAT_OVERRIDE is not "unset": libdat2 takes it as a file name it cannot read.
TEST_F(TunablesRead, AnEmptyPathIsInvalid) {
    char why[80] = {};
    EXPECT_FALSE(tun::check(tun::kDatOverride, "", why, sizeof why));
    EXPECT_STREQ(why, "empty file name");
    EXPECT_TRUE(tun::check(tun::kDatOverride, "/x/dat.conf", why, sizeof why));
}

}  // namespace

namespace {

// At the default trace level (1, errors only) a bad value used to give no line at all,
// although README and docs/configuration.md promise one warning; and a provider that reads
// the variable at every dat_ia_open repeated it per IA.
TEST_F(TunablesRead, WarningAtTheDefaultLevelAndOnlyOnce) {
    setenv("DAPL_TRACE_LEVEL", "1", 1);
    opendat::trace::dapl_domain().configure_from_environment();
    setenv(tun::kTcpTxBatch.name, "0", 1);
    EXPECT_EQ(tun::read_int(tun::kTcpTxBatch), 64);
    EXPECT_EQ(tun::read_int(tun::kTcpTxBatch), 64);  // the next IA opens
    setenv(tun::kTcpProgress.name, "fast", 1);
    EXPECT_EQ(tun::read_choice(tun::kTcpProgress), 0);
    const std::string l = log();
    const std::string batch = "DAT_TCP_TX_BATCH=\"0\"";
    const auto first = l.find(batch);
    ASSERT_NE(first, std::string::npos) << l;
    EXPECT_EQ(l.find(batch, first + 1), std::string::npos) << "warned twice:\n" << l;
    EXPECT_NE(l.find("DAPL WRN"), std::string::npos) << l;
    EXPECT_NE(l.find("DAT_TCP_PROGRESS=\"fast\""), std::string::npos) << l;
}

// Level 0 is off: not even configuration warnings.
TEST_F(TunablesRead, NoWarningAtLevelZero) {
    setenv("DAPL_TRACE_LEVEL", "0", 1);
    opendat::trace::dapl_domain().configure_from_environment();
    setenv(tun::kTcpHandshakeMs.name, "soon", 1);
    EXPECT_EQ(tun::read_int(tun::kTcpHandshakeMs), 5000);
    EXPECT_EQ(log(), "");
}

}  // namespace

// Trace lines that help on a bad day: function and line at detail levels, the subsystem
// filter (<WHO>_TRACE_SUBSYS), the rate-limited macro, and the frame level (10).
#include "trace_test_util.hpp"

#include "trace/environment.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace tr = opendat::trace;
using namespace trace_test;

namespace {

class TraceBadDay : public ::testing::Test {
  protected:
    void SetUp() override {
        set_env("DAT_TRACE_DEST", log_);
        set_env("DAPL_TRACE_DEST", log_);
    }
    std::vector<std::string> lines() const { return split_lines(read_file(log_)); }
    // The where field (group 6) of every line, or the whole line if it does not parse.
    std::vector<std::string> wheres() const {
        std::vector<std::string> out;
        for (const auto &l : lines()) {
            std::smatch m;
            out.push_back(std::regex_match(l, m, line_regex()) ? m[6].str() : l);
        }
        return out;
    }

    CleanEnvironment env_;
    TempDir dir_;
    std::string log_ = dir_.file("badday.log");
};

TEST_F(TraceBadDay, FunctionAndLineFromDetailLevelOn) {
    set_env("DAPL_TRACE_LEVEL", "7");
    reconfigure();
    const int line = __LINE__ + 1;
    DAPL_TRC(tr::kNormal, "tcp", "detail line");
    DAPL_TRC(tr::kError, "tcp", "error line");  // errors carry it too at this level
    const auto w = wheres();
    ASSERT_EQ(w.size(), 2u) << read_file(log_);
    EXPECT_EQ(w[0], "tcp(TestBody:" + std::to_string(line) + ")");
    EXPECT_EQ(w[1], "tcp(TestBody:" + std::to_string(line + 1) + ")");
}

TEST_F(TraceBadDay, NoLocationBelowDetailLevel) {
    set_env("DAPL_TRACE_LEVEL", "6");
    reconfigure();
    DAPL_TRC(tr::kNormal, "tcp", "plain line");
    DAPL_TRC(tr::kError, "tcp", "plain error");
    EXPECT_EQ(wheres(), (std::vector<std::string>{"tcp", "tcp"}));
}

TEST_F(TraceBadDay, SubsystemFilterKeepsItsTagsAndTheirChildren) {
    set_env("DAPL_TRACE_LEVEL", "10");
    set_env("DAPL_TRACE_SUBSYS", "tcp, util");
    reconfigure();
    DAPL_TRC(tr::kNormal, "tcp", "kept");
    DAPL_TRC(tr::kData, "tcp.frame", "kept: child tag");
    DAPL_TRC(tr::kNormal, "util", "kept");
    DAPL_TRC(tr::kNormal, "ia", "dropped: other tag");
    DAPL_TRC(tr::kNormal, "tcpx", "dropped: only a prefix of the name");
    DAPL_TRC(tr::kError, "ia", "kept: errors always pass");
    DAPL_TRC(tr::kWarn, "evd", "kept: warnings always pass");
    const auto l = lines();
    ASSERT_EQ(l.size(), 5u) << read_file(log_);
    for (const auto &x : l) EXPECT_EQ(x.find("dropped"), std::string::npos) << x;
    EXPECT_TRUE(tr::dapl_domain().selects(tr::kNormal, "tcp.frame"));
    EXPECT_FALSE(tr::dapl_domain().selects(tr::kNormal, "ia"));
    EXPECT_TRUE(tr::dapl_domain().selects(tr::kError, "ia"));
    // The DAT domain has its own filter: unset, so everything passes.
    EXPECT_TRUE(tr::dat_domain().selects(tr::kNormal, "registry"));
}

TEST_F(TraceBadDay, BadSubsystemFilterTracesEverythingAndSaysWhy) {
    set_env("DAPL_TRACE_LEVEL", "3");
    set_env("DAPL_TRACE_SUBSYS", "tcp;ia");
    reconfigure();
    DAPL_TRC(tr::kNormal, "ia", "kept: the filter was refused");
    const std::string text = read_file(log_);
    const auto w = warning_lines(text);
    ASSERT_EQ(w.size(), 1u) << text;
    EXPECT_NE(w[0].find("DAPL_TRACE_SUBSYS=\"tcp;ia\""), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("tracing every tag"), std::string::npos) << w[0];
    EXPECT_NE(text.find("kept: the filter was refused"), std::string::npos) << text;
}

TEST(TraceSubsysSelects, Rules) {
    using tr::detail::subsys_selects;
    EXPECT_TRUE(subsys_selects("", "anything"));
    EXPECT_TRUE(subsys_selects(nullptr, "anything"));
    EXPECT_TRUE(subsys_selects("tcp", "tcp"));
    EXPECT_TRUE(subsys_selects("tcp", "tcp.frame"));
    EXPECT_FALSE(subsys_selects("tcp", "tcpx"));
    EXPECT_FALSE(subsys_selects("tcp.frame", "tcp"));
    EXPECT_TRUE(subsys_selects("ia,tcp.frame", "tcp.frame"));
    EXPECT_FALSE(subsys_selects("ia,ep", "evd"));
    EXPECT_FALSE(subsys_selects("ia", nullptr));
}

TEST(TraceRateLimit, AdmitsNPerSecondThenCountsTheRest) {
    tr::RateLimit rl;
    unsigned dropped = 99;
    // Stay clear of a second boundary so that the whole burst falls into one second.
    using namespace std::chrono;
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    if (ts.tv_nsec > 800'000'000) std::this_thread::sleep_for(milliseconds(250));
    int admitted = 0;
    for (int i = 0; i < 100; ++i)
        if (rl.admit(3, &dropped)) {
            ++admitted;
            EXPECT_EQ(dropped, 0u);
        }
    EXPECT_EQ(admitted, 3);
    std::this_thread::sleep_for(milliseconds(1100));
    ASSERT_TRUE(rl.admit(3, &dropped));
    EXPECT_EQ(dropped, 97u);  // reported once, with the next admitted line
    ASSERT_TRUE(rl.admit(3, &dropped));
    EXPECT_EQ(dropped, 0u);
}

TEST_F(TraceBadDay, RateLimitedMacroSaysHowManyWereSuppressed) {
    set_env("DAPL_TRACE_LEVEL", "1");
    reconfigure();
    auto burst = [](int n) {
        for (int i = 0; i < n; ++i) DAPL_TRC_RL(tr::kError, "tcp", 5, "bad frame %d", i);
    };
    const auto start = std::chrono::steady_clock::now();
    burst(1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    burst(1);
    const auto took = std::chrono::steady_clock::now() - start;
    const auto l = lines();
    unsigned written = 0, suppressed = 0;
    for (const auto &x : l) {
        std::smatch m;
        ASSERT_TRUE(std::regex_match(x, m, line_regex())) << x;
        unsigned n = 0;
        if (std::sscanf(m[7].str().c_str(), "%u similar lines suppressed (limit 5 per second)",
                        &n) == 1)
            suppressed += n;
        else
            ++written;
    }
    // Every one of the 1001 calls is either written or counted as suppressed.
    EXPECT_EQ(written + suppressed, 1001u) << read_file(log_);
    EXPECT_GT(suppressed, 0u);
    // At most 5 a second: the burst may straddle a second boundary or two.
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(took).count();
    EXPECT_LE(written, 5u * static_cast<unsigned>(seconds + 2)) << read_file(log_);
}

TEST_F(TraceBadDay, FrameLevelIsTen) {
    set_env("DAPL_TRACE_LEVEL", "9");
    reconfigure();
    DAPL_TRC_FRAME("tcp.frame", "rx op %u", 1u);
    EXPECT_TRUE(lines().empty());
    set_env("DAPL_TRACE_LEVEL", "10");
    reconfigure();
    DAPL_TRC_FRAME("tcp.frame", "rx op %u", 1u);
    const auto w = wheres();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].rfind("tcp.frame(", 0), 0u) << w[0];
}

}  // namespace

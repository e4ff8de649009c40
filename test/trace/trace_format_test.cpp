// Line format: who, kind, UTC time with microseconds, pid, kernel tid, where, message;
// truncation, newlines, errno preservation.
#include "trace_test_util.hpp"

#include "trace/line.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>
#include <syslog.h>
#include <unistd.h>

namespace tr = opendat::trace;
using namespace trace_test;

namespace {

class TraceFormat : public ::testing::Test {
  protected:
    void SetUp() override {
        set_env("DAT_TRACE_DEST", log_);
        set_env("DAPL_TRACE_DEST", log_);
        reconfigure();
    }
    std::vector<std::string> lines() const { return split_lines(read_file(log_)); }

    CleanEnvironment env_;
    TempDir dir_;
    std::string log_ = dir_.file("format.log");
};

TEST_F(TraceFormat, LineHasWhoKindTimePidTidWhereMessage) {
    // The same clock as the facility: time() is the coarse clock and may lag by a tick.
    auto now_us = [] {
        timespec ts{};
        clock_gettime(CLOCK_REALTIME, &ts);
        return static_cast<long long>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
    };
    const long long before = now_us();
    DAT_TRC(tr::kError, "registry", "bad line %d in %s", 12, "dat.conf");
    const long long after = now_us();
    const auto l = lines();
    ASSERT_EQ(l.size(), 1u);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[0], m, line_regex())) << l[0];
    EXPECT_EQ(m[1], "DAT");
    EXPECT_EQ(m[2], "ERR");
    EXPECT_EQ(m[4], std::to_string(getpid()));
    EXPECT_EQ(m[5], std::to_string(gettid()));
    EXPECT_EQ(m[6], "registry");
    EXPECT_EQ(m[7], "bad line 12 in dat.conf");

    std::tm tm{};
    int usec = -1;
    ASSERT_EQ(std::sscanf(m[3].str().c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ", &tm.tm_year,
                          &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &usec),
              7);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    ASSERT_GE(usec, 0);
    ASSERT_LE(usec, 999999);
    const long long t = static_cast<long long>(timegm(&tm)) * 1000000 + usec;
    EXPECT_GE(t, before);
    EXPECT_LE(t, after);
}

TEST_F(TraceFormat, KindFollowsLevel) {
    tr::dapl_domain().set_level(tr::kData);
    for (int level : {1, 2, 3, 5, 7, 10}) DAPL_TRC(level, "ucm", "level %d", level);
    const auto l = lines();
    ASSERT_EQ(l.size(), 6u);
    const char *kinds[] = {"ERR", "WRN", "EVT", "EVT", "EVT", "EVT"};
    for (std::size_t i = 0; i < l.size(); ++i) {
        std::smatch m;
        ASSERT_TRUE(std::regex_match(l[i], m, line_regex())) << l[i];
        EXPECT_EQ(m[1], "DAPL");
        EXPECT_EQ(m[2], kinds[i]) << l[i];
    }
}

TEST(TraceLineKind, NamesAndSyslogPriorities) {
    EXPECT_STREQ(tr::detail::kind_name(0), "ERR");
    EXPECT_STREQ(tr::detail::kind_name(1), "ERR");
    EXPECT_STREQ(tr::detail::kind_name(2), "WRN");
    EXPECT_STREQ(tr::detail::kind_name(3), "EVT");
    EXPECT_STREQ(tr::detail::kind_name(10), "EVT");
    EXPECT_EQ(tr::detail::syslog_priority(1), LOG_ERR);
    EXPECT_EQ(tr::detail::syslog_priority(2), LOG_WARNING);
    EXPECT_EQ(tr::detail::syslog_priority(3), LOG_INFO);
    EXPECT_EQ(tr::detail::syslog_priority(5), LOG_INFO);
    EXPECT_EQ(tr::detail::syslog_priority(6), LOG_DEBUG);
    EXPECT_EQ(tr::detail::syslog_priority(10), LOG_DEBUG);
}

TEST(TraceLineTime, MatchesGmtime) {
    const std::time_t samples[] = {0, 951782400 /* 2000-02-29 */, 1709164800 /* 2024-02-29 */,
                                   1795270801, 4102444799 /* 2099-12-31T23:59:59 */};
    for (std::time_t s : samples) {
        timespec ts{s, 123456789};
        char got[40];
        ASSERT_EQ(tr::detail::format_utc(got, sizeof got, ts), 27u);
        std::tm tm{};
        gmtime_r(&s, &tm);
        char want[40];
        std::strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S.123456Z", &tm);
        EXPECT_STREQ(got, want);
    }
}

TEST_F(TraceFormat, LongMessageIsTruncatedWithMarker) {
    const std::string big(20000, 'x');
    DAT_TRC(tr::kError, "big", "%s", big.c_str());
    const std::string text = read_file(log_);
    ASSERT_EQ(text.size(), tr::detail::kLineMax);
    ASSERT_EQ(text.back(), '\n');
    const auto l = lines();
    ASSERT_EQ(l.size(), 1u);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[0], m, line_regex()));
    const std::string msg = m[7];
    EXPECT_EQ(msg.substr(msg.size() - std::strlen(tr::detail::kTruncatedMarker)),
              tr::detail::kTruncatedMarker);
    EXPECT_EQ(msg.find_first_not_of('x'), msg.size() - std::strlen(tr::detail::kTruncatedMarker));
}

TEST_F(TraceFormat, MessageThatExactlyFitsIsNotTruncated) {
    // Find the prefix length from a short line, then fill the buffer exactly.
    DAT_TRC(tr::kError, "fit", "%s", "");
    const std::size_t prefix = read_file(log_).size() - 1;  // minus the newline
    ASSERT_EQ(::truncate(log_.c_str(), 0), 0);              // O_APPEND: the next line starts at 0
    const std::string fill(tr::detail::kLineMax - prefix - 1, 'y');
    DAT_TRC(tr::kError, "fit", "%s", fill.c_str());
    const std::string text = read_file(log_);
    EXPECT_EQ(text.size(), tr::detail::kLineMax);
    EXPECT_EQ(text.find("truncated"), std::string::npos);
}

TEST_F(TraceFormat, NewlinesDoNotSplitTheLine) {
    DAT_TRC(tr::kError, "nl", "first\nsecond\r\n");
    DAT_TRC(tr::kError, "nl", "\n");
    const auto l = lines();
    ASSERT_EQ(l.size(), 2u) << read_file(log_);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[0], m, line_regex()));
    EXPECT_EQ(m[7], "first second");
    ASSERT_TRUE(std::regex_match(l[1], m, line_regex()));
    EXPECT_EQ(m[7], "");
}

TEST_F(TraceFormat, ErrnoIsPreservedAndAvailableToPercentM) {
    errno = ENOSPC;
    DAT_TRC(tr::kError, "io", "write failed: %m");
    EXPECT_EQ(errno, ENOSPC);
    errno = EAGAIN;
    tr::dat_domain().configure_from_environment();
    EXPECT_EQ(errno, EAGAIN);
    const auto l = lines();
    ASSERT_EQ(l.size(), 1u);
    EXPECT_NE(l[0].find(std::string("write failed: ") + std::strerror(ENOSPC)), std::string::npos)
        << l[0];
}

TEST_F(TraceFormat, NullWhereAndLongWhere) {
    tr::dat_domain().emit(tr::kError, nullptr, "no tag");
    tr::dat_domain().emit(tr::kError, std::string(200, 'w').c_str(), "long tag");
    const auto l = lines();
    ASSERT_EQ(l.size(), 2u);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l[0], m, line_regex()));
    EXPECT_EQ(m[6], "-");
    ASSERT_TRUE(std::regex_match(l[1], m, line_regex()));
    EXPECT_EQ(m[6], std::string(64, 'w'));
    EXPECT_EQ(m[7], "long tag");
}

}  // namespace

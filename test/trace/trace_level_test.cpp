// Levels: *_TRACE_LEVEL (strict 0..10), legacy *_DBG_TYPE mapping and precedence, run-time
// set_level, and trace points whose arguments are not evaluated when disabled.
#include "trace_test_util.hpp"

#include "trace/environment.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tr = opendat::trace;
using namespace trace_test;

namespace {

class TraceLevel : public ::testing::Test {
  protected:
    CleanEnvironment env_;
    TempDir dir_;
    // Configuration warnings go to a file we can read (instead of our stderr).
    std::string log_ = dir_.file("trace.log");
};

struct DomainCase {
    tr::Domain *domain;
    const char *level_env;
    const char *dest_env;
    const char *type_env;
};

std::vector<DomainCase> both_domains() {
    return {{&tr::dat_domain(), "DAT_TRACE_LEVEL", "DAT_TRACE_DEST", "DAT_DBG_TYPE"},
            {&tr::dapl_domain(), "DAPL_TRACE_LEVEL", "DAPL_TRACE_DEST", "DAPL_DBG_TYPE"}};
}

TEST_F(TraceLevel, DefaultIsErrorsOnlyToStderr) {
    for (const auto &c : both_domains()) {
        EXPECT_EQ(c.domain->level(), tr::kError);
        EXPECT_EQ(c.domain->destinations(), unsigned{tr::kDestStderr});
        EXPECT_EQ(c.domain->file_path(0), nullptr);
        EXPECT_TRUE(c.domain->enabled(tr::kError));
        EXPECT_FALSE(c.domain->enabled(tr::kWarn));
    }
}

TEST_F(TraceLevel, GoodValuesForBothDomains) {
    for (const auto &c : both_domains()) {
        for (int v = 0; v <= 10; ++v) {
            set_env(c.level_env, std::to_string(v));
            c.domain->configure_from_environment();
            EXPECT_EQ(c.domain->level(), v) << c.level_env << "=" << v;
        }
        set_env(c.level_env, "07");  // leading zeros are still decimal
        c.domain->configure_from_environment();
        EXPECT_EQ(c.domain->level(), 7);
    }
}

TEST_F(TraceLevel, DomainsAreIndependent) {
    set_env("DAT_TRACE_LEVEL", "7");
    set_env("DAPL_TRACE_LEVEL", "3");
    reconfigure();
    EXPECT_EQ(tr::dat_domain().level(), 7);
    EXPECT_EQ(tr::dapl_domain().level(), 3);
    tr::dat_domain().set_level(0);
    EXPECT_EQ(tr::dapl_domain().level(), 3);
}

TEST_F(TraceLevel, BadValuesKeepDefaultWithOneWarning) {
    const char *bad[] = {
        "", "abc", "-1", "11", "3x", " 3", "3 ", "+3", "0x3", "3.0", "99999999999999999999"};
    for (const auto &c : both_domains()) {
        set_env(c.dest_env, log_);
        for (const char *v : bad) {
            std::remove(log_.c_str());
            c.domain->set_level(7);  // the default is restored, not the previous level kept
            set_env(c.level_env, v);
            c.domain->configure_from_environment();
            EXPECT_EQ(c.domain->level(), tr::kError) << c.level_env << "=\"" << v << "\"";
            const auto warnings = warning_lines(read_file(log_));
            ASSERT_EQ(warnings.size(), 1u) << c.level_env << "=\"" << v << "\"\n"
                                           << read_file(log_);
            const std::string expect = std::string(c.level_env) + "=\"" + v + "\"";
            EXPECT_NE(warnings[0].find(expect), std::string::npos) << warnings[0];
            EXPECT_NE(warnings[0].find("using the default level 1"), std::string::npos)
                << warnings[0];
            EXPECT_EQ(warnings[0].rfind(
                          c.level_env == std::string("DAT_TRACE_LEVEL") ? "DAT " : "DAPL ", 0),
                      0u)
                << warnings[0];
        }
    }
}

TEST_F(TraceLevel, NonPrintableBadValueIsQuotedSafely) {
    set_env("DAT_TRACE_DEST", log_);
    set_env("DAT_TRACE_LEVEL", "4\n\x1b[31m");
    tr::dat_domain().configure_from_environment();
    const auto warnings = warning_lines(read_file(log_));
    ASSERT_EQ(warnings.size(), 1u) << read_file(log_);
    EXPECT_NE(warnings[0].find("DAT_TRACE_LEVEL=\"4??[31m\""), std::string::npos) << warnings[0];
}

TEST(TraceLegacyMask, MapsBitsToLevels) {
    struct {
        unsigned long mask;
        int level;
    } cases[] = {
        {0x0, 0},   {0x1, 1},    {0x2, 3},     {0x3, 3},         {0x4, 7},   {0x5, 7},
        {0x10, 7},  {0x20, 7},   {0x21, 7},    {0x7f, 7},        {0x100, 7}, {0x1000000, 7},
        {0xff, 10}, {0x1fe, 10}, {0xffff, 10}, {0xffffffff, 10},
    };
    for (const auto &c : cases)
        EXPECT_EQ(tr::detail::level_from_legacy_mask(c.mask), c.level)
            << std::hex << "0x" << c.mask;
}

TEST(TraceLegacyMask, ParsesLikeStrtolBaseZero) {
    unsigned long m = 0;
    EXPECT_TRUE(tr::detail::parse_mask("0x1f", &m));
    EXPECT_EQ(m, 0x1fu);
    EXPECT_TRUE(tr::detail::parse_mask("010", &m));
    EXPECT_EQ(m, 8u);
    EXPECT_TRUE(tr::detail::parse_mask("255", &m));
    EXPECT_EQ(m, 255u);
    EXPECT_TRUE(tr::detail::parse_mask("-1", &m));
    EXPECT_EQ(m, 0xffffffffu);
    EXPECT_FALSE(tr::detail::parse_mask("", &m));
    EXPECT_FALSE(tr::detail::parse_mask("zz", &m));
    EXPECT_FALSE(tr::detail::parse_mask("0x", &m));
    EXPECT_FALSE(tr::detail::parse_mask("12abc", &m));
}

TEST_F(TraceLevel, LegacyTypeFromEnvironment) {
    struct {
        const char *value;
        int level;
    } cases[] = {{"0", 0},   {"1", 1},     {"0x2", 3}, {"0x3", 3},    {"0x4", 7},
                 {"010", 7}, {"0xff", 10}, {"-1", 10}, {"0xffff", 10}};
    for (const auto &c : both_domains()) {
        for (const auto &k : cases) {
            set_env(c.type_env, k.value);
            c.domain->configure_from_environment();
            EXPECT_EQ(c.domain->level(), k.level) << c.type_env << "=" << k.value;
        }
    }
}

TEST_F(TraceLevel, BadLegacyTypeKeepsDefaultWithWarning) {
    set_env("DAPL_TRACE_DEST", log_);
    set_env("DAPL_DBG_TYPE", "lots");
    tr::dapl_domain().configure_from_environment();
    EXPECT_EQ(tr::dapl_domain().level(), tr::kError);
    const auto warnings = warning_lines(read_file(log_));
    ASSERT_EQ(warnings.size(), 1u) << read_file(log_);
    EXPECT_NE(warnings[0].find("DAPL_DBG_TYPE=\"lots\""), std::string::npos) << warnings[0];
}

TEST_F(TraceLevel, TraceLevelWinsOverDbgType) {
    for (const auto &c : both_domains()) {
        set_env(c.type_env, "0xff");
        set_env(c.level_env, "5");
        c.domain->configure_from_environment();
        EXPECT_EQ(c.domain->level(), 5);
        set_env(c.level_env, "0");
        c.domain->configure_from_environment();
        EXPECT_EQ(c.domain->level(), 0);
        // A set but invalid *_TRACE_LEVEL still wins: its default is used, not DBG_TYPE.
        set_env(c.level_env, "high");
        c.domain->configure_from_environment();
        EXPECT_EQ(c.domain->level(), tr::kError);
    }
}

TEST_F(TraceLevel, SetLevelClampsAndReturnsLevelInForce) {
    auto &d = tr::dat_domain();
    EXPECT_EQ(d.set_level(-3), 0);
    EXPECT_EQ(d.level(), 0);
    EXPECT_EQ(d.set_level(42), 10);
    EXPECT_EQ(d.level(), 10);
    EXPECT_EQ(d.set_level(3), 3);
    EXPECT_TRUE(d.enabled(3));
    EXPECT_FALSE(d.enabled(4));
}

TEST_F(TraceLevel, RunTimeSetLevelTakesEffectAtNextTracePoint) {
    set_env("DAT_TRACE_DEST", log_);
    set_env("DAPL_TRACE_DEST", log_);
    reconfigure();
    tr::dat_domain().set_level(tr::kNormal);
    DAT_TRC(tr::kNormal, "test", "normal-1");
    DAT_TRC(tr::kDetail, "test", "detail-1");
    tr::dat_domain().set_level(tr::kDetail);
    DAT_TRC(tr::kDetail, "test", "detail-2");
    DAT_TRC(tr::kData, "test", "data-1");
    tr::dat_domain().set_level(tr::kOff);
    DAT_TRC(tr::kError, "test", "error-1");
    DAPL_TRC(tr::kError, "prov", "dapl-error-1");  // DAPL still at its default (1)
    DAPL_TRC(tr::kWarn, "prov", "dapl-warn-1");

    std::vector<std::string> messages;
    for (const auto &l : split_lines(read_file(log_))) {
        std::smatch m;
        ASSERT_TRUE(std::regex_match(l, m, line_regex())) << l;
        messages.push_back(m[1].str() + ":" + m[7].str());
    }
    EXPECT_EQ(messages,
              (std::vector<std::string>{"DAT:normal-1", "DAT:detail-2", "DAPL:dapl-error-1"}));
}

TEST_F(TraceLevel, DisabledTracePointDoesNotEvaluateArguments) {
    set_env("DAT_TRACE_DEST", log_);
    tr::dat_domain().configure_from_environment();
    int calls = 0;
    auto side_effect = [&calls] { return ++calls; };
    tr::dat_domain().set_level(tr::kNormal);
    DAT_TRC(tr::kDetail, "test", "value %d", side_effect());
    DAPL_TRC(tr::kWarn, "test", "value %d", side_effect());  // DAPL at 1
    EXPECT_EQ(calls, 0);
    DAT_TRC(tr::kNormal, "test", "value %d", side_effect());
    EXPECT_EQ(calls, 1);
    tr::dat_domain().set_level(tr::kDetail);
    DAT_TRC(tr::kDetail, "test", "value %d", side_effect());
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(split_lines(read_file(log_)).size(), 2u);
}

TEST_F(TraceLevel, LevelZeroSilencesConfigurationWarnings) {
    set_env("DAT_TRACE_LEVEL", "0");
    set_env("DAT_TRACE_DEST", log_ + "," + dir_.file("missing/x.log"));
    tr::dat_domain().configure_from_environment();
    EXPECT_EQ(tr::dat_domain().level(), 0);
    EXPECT_EQ(read_file(log_), "");
}

TEST_F(TraceLevel, ConfiguringAgainWithSameEnvironmentDoesNotRepeatWarnings) {
    // libdat2's constructor configures the DAT domain again after the facility's own.
    set_env("DAT_TRACE_DEST", log_ + "," + dir_.file("missing/x.log"));
    set_env("DAT_TRACE_LEVEL", "loud");
    tr::dat_domain().configure_from_environment();
    tr::dat_domain().set_level(9);
    tr::dat_domain().configure_from_environment();
    tr::dat_domain().configure_from_environment();
    EXPECT_EQ(tr::dat_domain().level(), tr::kError);  // the level is still re-applied
    EXPECT_EQ(tr::dat_domain().destinations(), unsigned{tr::kDestFile | tr::kDestStderr});
    EXPECT_EQ(warning_lines(read_file(log_)).size(), 2u) << read_file(log_);  // level + file

    // A changed environment is read again (and reported again).
    set_env("DAT_TRACE_LEVEL", "louder");
    tr::dat_domain().configure_from_environment();
    EXPECT_EQ(warning_lines(read_file(log_)).size(), 4u) << read_file(log_);
}

TEST(TraceLevelParse, StrictDecimal) {
    int l = -1;
    EXPECT_TRUE(tr::detail::parse_level("0", &l));
    EXPECT_EQ(l, 0);
    EXPECT_TRUE(tr::detail::parse_level("10", &l));
    EXPECT_EQ(l, 10);
    for (const char *bad : {"", "11", "-0", "+1", " 1", "1 ", "1a", "0x1", "100"})
        EXPECT_FALSE(tr::detail::parse_level(bad, &l)) << '"' << bad << '"';
    EXPECT_FALSE(tr::detail::parse_level(nullptr, &l));
}

}  // namespace

// The table: unique names, sane defaults and ranges, and check() on good and bad values.
#include "tunables/tunables.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

namespace tun = opendat::tunables;

namespace {

TEST(TunablesTable, NamesAreUniqueAndFindable) {
    std::set<std::string> names;
    for (const tun::Spec *s : tun::all()) {
        EXPECT_TRUE(names.insert(s->name).second) << s->name << " declared twice";
        EXPECT_EQ(tun::find(s->name), s);
        EXPECT_GT(std::string(s->help).size(), 20u) << s->name << " needs a real help text";
    }
    EXPECT_GE(names.size(), 15u);
    EXPECT_EQ(tun::find("DAT_NO_SUCH_THING"), nullptr);
    EXPECT_EQ(tun::find(nullptr), nullptr);
}

TEST(TunablesTable, IntDefaultsLieInTheirRangeAndMatchTheirText) {
    for (const tun::Spec *s : tun::all()) {
        if (s->type != tun::Type::kInt) continue;
        EXPECT_LE(s->min, s->default_value) << s->name;
        EXPECT_LE(s->default_value, s->max) << s->name;
        EXPECT_EQ(std::to_string(s->default_value), s->default_text) << s->name;
        long v = -1;
        EXPECT_TRUE(tun::parse_int(*s, s->default_text, &v)) << s->name;
        EXPECT_EQ(v, s->default_value);
    }
}

TEST(TunablesCheck, IntRefusesJunkSuffixesAndOutOfRange) {
    char why[128];
    const tun::Spec &s = tun::kTcpConnectRetryMs;
    EXPECT_TRUE(tun::check(s, "0", why, sizeof why));
    EXPECT_TRUE(tun::check(s, "600000", why, sizeof why));
    EXPECT_FALSE(tun::check(s, "600001", why, sizeof why));
    EXPECT_STREQ(why, "outside 0..600000");
    EXPECT_FALSE(tun::check(s, "-1", why, sizeof why));
    EXPECT_FALSE(tun::check(s, "3s", why, sizeof why));
    EXPECT_STREQ(why, "not a whole decimal number");
    EXPECT_FALSE(tun::check(s, "", why, sizeof why));
    EXPECT_FALSE(tun::check(s, "99999999999999999999999", why, sizeof why));
    EXPECT_TRUE(tun::check(s, nullptr, why, sizeof why));  // unset is always fine
    EXPECT_STREQ(why, "unset");
}

TEST(TunablesCheck, KeepaliveIsOffOrThreePositiveNumbers) {
    tun::Keepalive k;
    ASSERT_TRUE(tun::parse_keepalive("0", &k));
    EXPECT_FALSE(k.on);
    ASSERT_TRUE(tun::parse_keepalive("30,5,3", &k));
    EXPECT_TRUE(k.on);
    EXPECT_EQ(k.idle, 30);
    EXPECT_EQ(k.interval, 5);
    EXPECT_EQ(k.probes, 3);
    for (const char *bad :
         {"", "5", "1,2", "1,2,3,4", "1,,3", "1,0,3", "a,b,c", "-1", "1,2,3x", "99999,1,1"})
        EXPECT_FALSE(tun::parse_keepalive(bad, &k)) << bad;
    char why[128];
    EXPECT_FALSE(tun::check(tun::kTcpKeepalive, "10,2", why, sizeof why));
    EXPECT_NE(std::string(why).find("idle,interval,probes"), std::string::npos) << why;
}

TEST(TunablesCheck, TraceVariablesAreJudgedAsTheTraceFacilityParsesThem) {
    char why[128];
    EXPECT_TRUE(tun::check(tun::kDaplTraceLevel, "10", why, sizeof why));
    EXPECT_FALSE(tun::check(tun::kDaplTraceLevel, "11", why, sizeof why));
    EXPECT_FALSE(tun::check(tun::kDatTraceLevel, "+5", why, sizeof why));
    EXPECT_TRUE(tun::check(tun::kDatDbgType, "0xff", why, sizeof why));
    EXPECT_FALSE(tun::check(tun::kDatDbgType, "lots", why, sizeof why));
    EXPECT_TRUE(tun::check(tun::kDaplDbgDest, "0x3", why, sizeof why));
    EXPECT_FALSE(tun::check(tun::kDaplDbgDest, "4", why, sizeof why));
    EXPECT_TRUE(tun::check(tun::kDaplTraceDest, "stderr,/tmp/x-%p.log", why, sizeof why));
    EXPECT_FALSE(tun::check(tun::kDaplTraceDest, " , ", why, sizeof why));
    EXPECT_TRUE(tun::check(tun::kDaplTraceSubsys, "tcp,ia, tcp.frame", why, sizeof why));
    EXPECT_FALSE(tun::check(tun::kDaplTraceSubsys, "tcp;ia", why, sizeof why));
    EXPECT_FALSE(tun::check(tun::kDaplTraceSubsys, ",", why, sizeof why));
    // A tab separates like a space does, as tracing reads it.
    EXPECT_TRUE(tun::check(tun::kDaplTraceSubsys, "tcp\tutil", why, sizeof why));
    // What tracing would ignore as too long, the checker refuses too.
    const std::string too_long(300, 'a');
    EXPECT_FALSE(tun::check(tun::kDaplTraceSubsys, too_long.c_str(), why, sizeof why));
    EXPECT_NE(std::string(why).find("too long"), std::string::npos) << why;
    EXPECT_TRUE(tun::check(tun::kDatOverride, "/etc/dat.conf", why, sizeof why));
    EXPECT_FALSE(tun::check(tun::kDatOverride, "", why, sizeof why));
}

}  // namespace

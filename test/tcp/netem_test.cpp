// The netem fault matrix (issue 9, "Faults on the path"): the verified stream of
// fault_stream.hpp between two network namespaces joined by a veth link, with `tc netem`
// on both ends of the link: loss, delay with jitter, reordering, duplication, a link that
// goes down and comes back, and one that stays down beyond the dead-peer deadlines.
//
// It needs root, `ip netns` and the sch_netem module, which this host's kernel does not
// have: it runs in the project's VM (Debian's kernel; test/vm, CTest test vm_netem), where
// a missing piece is a failure, not a skip. The target runs in one namespace, the initiator
// in the other, each on an IA bound to its end of the link (tcp-veth, "odtveth 0").
// Each case prints one line of what it verified.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"
#include "fault_checks.hpp"
#include "netns.hpp"

using namespace faults;
using dattest::Channel;
namespace netns = dattest::netns;

namespace {

constexpr const char *kIa = "tcp-veth";
constexpr DAT_CONN_QUAL kQual = 47100;  // the namespaces are private to this run

std::string g_netns_error;  // why the namespaces could not be made (empty: they were)

struct Case {
    const char *id = "";
    std::string netem;  // tc netem arguments on both ends; empty: none
    int flap_ms = 0;    // the link goes down this long, then comes back
    bool cut = false;   // the link goes down and stays down: the connection must break
    int bound_ms = 0;   // ... with BROKEN on both sides within this (after the cut)
    StreamPlan plan;
    bool link_fault() const { return flap_ms > 0 || cut; }
};

void PrintTo(const Case &c, std::ostream *os) {
    *os << c.id;
}

StreamPlan vm_plan(std::uint64_t seed, bool delayed_ack) {
    StreamPlan p;
    p.seed = seed;
    p.ops = 150;
    p.max_size = 128 * 1024;  // a few MiB per case: TCG is slow
    p.delayed_ack = delayed_ack;
    p.run_ms = 120000;
    return p;
}

Case netem(const char *id, const char *args, std::uint64_t seed, bool delayed_ack) {
    Case c;
    c.id = id;
    c.netem = args;
    c.plan = vm_plan(seed, delayed_ack);
    return c;
}

Case flap(const char *id, int ms, std::uint64_t seed) {
    Case c;
    c.id = id;
    c.flap_ms = ms;
    c.plan = vm_plan(seed, true);
    c.plan.ops = 2000;  // still running when the link comes back (checked): 600 were done in
                        // 0.35 s on a quiet machine, before the flap mattered
    return c;
}

// The link is cut for good: the side with unacknowledged data ends by TCP_USER_TIMEOUT
// (1.5 s, checked at the retransmission times), the idle side by keepalive (1 s idle, 2
// probes 1 s apart): both within a few seconds natively; under TCG on a loaded host the
// VM measured 4 to 7 s, hence the slack.
Case cut(const char *id, std::uint64_t seed) {
    Case c;
    c.id = id;
    c.cut = true;
    c.bound_ms = 15000;
    c.plan = vm_plan(seed, true);
    c.plan.ops = 4000;  // still running when the link goes: the cut, a process the test
                        // spawns after the target's word, took as long as 480 messages
    return c;
}

// Link faults strike once the target has verified this many messages, of the roughly
// 1000 (flap) or 2000 (cut) the plan's operations carry: well under way, far from done.
constexpr std::uint32_t kFaultAfter = 100;

const Case kCases[] = {
    netem("loss_5pct", "loss 5%", 31, true),
    netem("delay_20ms_jitter_10ms", "delay 20ms 10ms", 32, false),
    netem("reorder", "delay 10ms reorder 25% 50%", 33, true),
    netem("duplicate_5pct", "duplicate 5%", 34, false),
    netem("all_at_once", "delay 5ms 5ms loss 2% duplicate 2% reorder 10%", 35, true),
    flap("link_down_1500ms_up", 1500, 36),
    cut("link_down_beyond_deadlines", 37),
};

std::string describe(const Case &c) {
    if (!c.netem.empty()) return "netem " + c.netem;
    if (c.flap_ms > 0) return "link down " + std::to_string(c.flap_ms) + "ms, then up";
    return "link down for good (user timeout 1.5s, keepalive 1,1,2)";
}

bool set_link(const std::string &ns, bool up) {
    return netns::run_in(ns, std::string("ip link set ") + netns::kDevice + (up ? " up" : " down"));
}

class NetemMatrix : public ::testing::TestWithParam<Case> {
  protected:
    void TearDown() override {
        if (!netns::active()) return;
        for (const std::string &ns : {netns::parent_ns(), netns::child_ns()}) {
            netns::run_in(ns, std::string("tc qdisc del dev ") + netns::kDevice + " root");
            set_link(ns, true);
        }
        dattest::topology().child_netns.clear();
    }
};

TEST_P(NetemMatrix, StreamVerified) {
    ASSERT_TRUE(g_netns_error.empty()) << "network namespaces: " << g_netns_error;
    const Case &c = GetParam();
    if (!c.netem.empty()) {
        for (const std::string &ns : {netns::parent_ns(), netns::child_ns()})
            ASSERT_TRUE(netns::run_in(
                ns, std::string("tc qdisc add dev ") + netns::kDevice + " root netem " + c.netem))
                << "tc qdisc add ... netem " << c.netem << " failed (is sch_netem loaded?)";
    }
    auto child_env = [&] {
        if (c.cut) {
            setenv("DAT_TCP_USER_TIMEOUT_MS", "1500", 1);
            setenv("DAT_TCP_KEEPALIVE", "1,1,2", 1);
        }
    };

    Channel tch, ich;
    dattest::topology().child_netns.clear();  // the target stays in the parent's namespace
    int tpid = dattest::spawn([&] {
        tch.child_side();
        child_env();
        SideReport rep;
        Target t(c.plan, &rep);
        bool told = false;  // the test reads "established" (1) or, before it, a failure (0)
        t.on_established([&] { told = tch.send(1); });
        // Link faults: the test then reads "under way" (1) or, if the stream never got that
        // far, 0, and cuts the link on the 1: a fixed delay after the connection was
        // established met a stream already finished on a fast machine.
        bool told_progress = false;
        if (c.link_fault()) t.on_verified(kFaultAfter, [&] { told_progress = tch.send(1); });
        if (t.open(kIa)) {
            DAT_RETURN rc = t.listen(kQual);
            if (rc == DAT_SUCCESS) {
                CHILD_CHECK(tch.send(1));
                t.serve();
            } else {
                rep.fail("target: dat_psp_create(%llu) failed: 0x%x",
                         static_cast<unsigned long long>(kQual), rc);
            }
        }
        if (!told) tch.send(0);  // unblocks the test's wait
        if (told && c.link_fault() && !told_progress) tch.send(0);
        CHILD_CHECK(tch.send(rep));
        return 0;
    });
    tch.parent_side();
    int listening = 0;
    ASSERT_TRUE(tch.recv(&listening, 60000));
    dattest::topology().child_netns = netns::child_ns();
    int ipid = dattest::spawn([&] {
        ich.child_side();
        child_env();
        SideReport rep;
        Initiator in(c.plan, &rep);
        if (in.open(kIa)) in.run(dattest::peer_address(), kQual);
        CHILD_CHECK(ich.send(rep));
        return 0;
    });
    ich.parent_side();
    ASSERT_GT(tpid, 0);
    ASSERT_GT(ipid, 0);

    // Link events once the stream is under way.
    std::int64_t fault_ns = 0;
    int established = 0, under_way = 0;
    if (listening == 1 && tch.recv(&established, 60000) && established == 1 && c.link_fault() &&
        tch.recv(&under_way, 60000) && under_way == 1) {
        fault_ns = mono_ns();
        EXPECT_TRUE(set_link(netns::child_ns(), false));
        if (c.flap_ms > 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(c.flap_ms));
            EXPECT_TRUE(set_link(netns::child_ns(), true));
        }
    }

    SideReport irep, trep;
    const int wait_ms = c.plan.run_ms + 30000;
    bool got_i = ich.recv(&irep, wait_ms);
    bool got_t = tch.recv(&trep, wait_ms);
    EXPECT_EQ(dattest::reap(ipid, 30), 0);
    EXPECT_EQ(dattest::reap(tpid, 30), 0);
    ASSERT_TRUE(got_i) << "no report from the initiator";
    ASSERT_TRUE(got_t) << "no report from the target";

    expect_sound(irep, trep);
    std::string line;
    if (!c.cut) {
        expect_complete(c.plan, irep, trep);
        if (c.flap_ms > 0) {
            EXPECT_GT(ms_between(fault_ns, irep.finish_ns), c.flap_ms)
                << "the stream ended before the link came back: the flap tested nothing";
        }
        line = complete_line(describe(c), c.plan, irep, trep);
    } else {
        expect_broken(irep, trep);
        EXPECT_LE(ms_between(fault_ns, irep.end_ns), c.bound_ms) << "initiator's event came late";
        EXPECT_LE(ms_between(fault_ns, trep.end_ns), c.bound_ms) << "target's event came late";
        line = broken_line(describe(c), irep, trep, fault_ns, c.bound_ms, c.bound_ms);
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    RecordProperty("verified", line);
}

INSTANTIATE_TEST_SUITE_P(Netem, NetemMatrix, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &i) {
                             return std::string(i.param.id);
                         });

class NetnsEnvironment : public ::testing::Environment {
  public:
    void SetUp() override {
        if (!netns::create(&g_netns_error) && g_netns_error.empty())
            g_netns_error = "could not be created";
        dattest::Topology &t = dattest::topology();
        t.parent_addr = netns::kParentAddr;
        t.child_addr = netns::kChildAddr;
        t.ia = kIa;
    }
    void TearDown() override { netns::destroy(); }
};

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new NetnsEnvironment);
    return RUN_ALL_TESTS();
}

// The host fault matrix (issue 9, "Faults on the path"): two processes run a verified stream
// of sends, RDMA writes and RDMA reads (fault_stream.hpp) through a fault-injecting TCP
// relay of our own (fault_relay.hpp), one fault per case.
//
//  - Faults the stream must ride out (delay, jitter, tiny segments, short stalls): every
//    message, write and read is checked byte for byte, in order, none missing or repeated,
//    and the connection ends with the graceful disconnect (DISCONNECTED on both sides).
//  - Faults that end the connection (a reset, a half-close, a stall longer than
//    DAT_TCP_USER_TIMEOUT_MS): both sides get DAT_CONNECTION_EVENT_BROKEN within the bound
//    docs/tcp-provider.md gives, every posted operation completes, and nothing completed
//    with success that did not arrive (the stream runs with delayed_ack, under which a send
//    or write succeeds only once the target placed it).
//
// Processes: the target (passive) and the initiator are forked children; the test process
// runs the relay. The target listens on qualifier Q of an IA with port base 0 (TCP port
// Q); the initiator's IA has port base 1 (dat.conf entry tcp-lo-relay), so its connect to
// qualifier Q goes to TCP port Q + 1, where the relay listens and forwards to port Q.
// Both sides use the same qualifier, as two applications would.
//
// Each case prints one line of what it verified (and records it as the test property
// "verified").
#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"
#include "fault_checks.hpp"
#include "fault_relay.hpp"
#include "fault_stream.hpp"

using namespace faults;
using dattest::Channel;

namespace {

constexpr const char *kTargetIa = "ofa-v2-tcp-lo";  // port base 0
constexpr const char *kRelayIa = "tcp-lo-relay";    // port base 1: lands on the relay
constexpr int kRelayBase = 1;

struct Case {
    const char *id = "";
    Fault fault;
    StreamPlan plan;
    bool ends = false;        // the fault ends the connection
    int user_timeout_ms = 0;  // DAT_TCP_USER_TIMEOUT_MS on both sides (0: not set)
    // Bounds (ms after the fault fired) within which each side must see BROKEN.
    int initiator_within_ms = 0, target_within_ms = 0;
    int initiator_after_ms = 0;  // ... and not before (the user timeout)
};

// gtest names a failing case by this, not by the bytes of the struct.
void PrintTo(const Case &c, std::ostream *os) {
    *os << c.id;
}

StreamPlan plan(std::uint64_t seed, int ops, std::uint32_t max_size, bool delayed_ack) {
    StreamPlan p;
    p.seed = seed;
    p.ops = ops;
    p.max_size = max_size;
    p.delayed_ack = delayed_ack;
    return p;
}

Fault delay(int ms, int jitter) {
    Fault f;
    f.kind = Fault::Kind::Delay;
    f.delay_ms = ms;
    f.jitter_ms = jitter;
    return f;
}
Fault segments(std::size_t n, bool random) {
    Fault f;
    f.kind = Fault::Kind::Segments;
    f.segment = n;
    f.random_segments = random;
    return f;
}
Fault stall(int ms, std::size_t after, std::size_t every) {
    Fault f;
    f.kind = Fault::Kind::Stall;
    f.stall_ms = ms;
    f.after_bytes = after;
    f.stall_every = every;
    return f;
}
Fault cut(Fault::Kind k, std::size_t after, Dir d) {
    Fault f;
    f.kind = k;
    f.after_bytes = after;
    f.dir = d;
    return f;
}

// A reset or a half-close reaches the provider as soon as the relay acts: the bound is
// what a loaded 2-CPU machine needs to schedule the progress thread and the consumer.
constexpr int kPromptMs = 2000;

Case rides(const char *id, const Fault &f, const StreamPlan &p) {
    Case c;
    c.id = id;
    c.fault = f;
    c.plan = p;
    return c;
}
Case ends(const char *id, const Fault &f, const StreamPlan &p, int initiator_within_ms,
          int target_within_ms, int user_timeout_ms = 0) {
    Case c = rides(id, f, p);
    c.ends = true;
    c.initiator_within_ms = initiator_within_ms;
    c.target_within_ms = target_within_ms;
    c.user_timeout_ms = user_timeout_ms;
    c.initiator_after_ms = user_timeout_ms;
    return c;
}

// Every operation at least 256 KiB: the 8 sends/writes the initiator keeps in flight then
// always hold more than the stalled relay can take in (its 256 KiB queue and 64 KiB buffer),
// so the initiator's window closes with data unsent, which is what the user timeout is
// about. (With small operations the stall could swallow everything in flight: then no data
// is unacknowledged and the connection rightly survives the stall.)
StreamPlan big_plan(std::uint64_t seed) {
    StreamPlan p = plan(seed, 300, MiB, true);
    p.min_size = 256 * 1024;
    return p;
}

Fault long_stall() {
    Fault f = stall(5000, 2 * MiB, 0);
    f.rcvbuf = 64 * 1024;
    return f;
}

const Case kCases[] = {
    rides("none", Fault{}, plan(11, 400, MiB, false)),
    rides("delay_5ms", delay(5, 0), plan(12, 300, MiB, true)),
    rides("delay_jitter", delay(2, 8), plan(13, 300, MiB, false)),
    rides("one_byte_segments", segments(1, false), plan(14, 300, 4096, true)),
    rides("small_segments", segments(1460, true), plan(15, 300, MiB, false)),
    rides("stalls", stall(300, 4 * MiB, 4 * MiB), plan(16, 300, MiB, true)),
    ends("reset_to_server", cut(Fault::Kind::Reset, 3 * MiB, Dir::ToServer),
         plan(17, 300, MiB, true), kPromptMs, kPromptMs),
    ends("reset_to_client", cut(Fault::Kind::Reset, 3 * MiB, Dir::ToClient),
         plan(18, 300, MiB, true), kPromptMs, kPromptMs),
    ends("half_close_server", cut(Fault::Kind::HalfClose, 2 * MiB, Dir::ToServer),
         plan(19, 300, MiB, true), kPromptMs, kPromptMs),
    ends("half_close_client", cut(Fault::Kind::HalfClose, 3 * MiB, Dir::ToClient),
         plan(20, 300, MiB, true), kPromptMs, kPromptMs),
    // The relay stops forwarding for 5 s with small buffers: the initiator's unsent data
    // meets a closed window, and TCP_USER_TIMEOUT (1 s) ends its connection; the target
    // learns of it when the relay, resuming, passes on the initiator's reset (or from its
    // own user timeout, when read responses were waiting).
    ends("stall_beyond_user_timeout", long_stall(), big_plan(21), 1000 + 3000, 5000 + kPromptMs,
         1000),
};

std::int64_t ns_of(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

class FaultMatrix : public ::testing::TestWithParam<Case> {};

TEST_P(FaultMatrix, StreamVerified) {
    const Case &c = GetParam();
    const std::string ut = std::to_string(c.user_timeout_ms);
    auto child_env = [&] {
        if (c.user_timeout_ms > 0) setenv("DAT_TCP_USER_TIMEOUT_MS", ut.c_str(), 1);
    };

    Channel tch, ich;
    int tpid = dattest::spawn([&] {
        tch.child_side();
        child_env();
        SideReport rep;
        Target t(c.plan, &rep);
        int opened = t.open(kTargetIa) ? 1 : 0;
        CHILD_CHECK(tch.send(opened));
        if (!opened) return tch.send(rep) ? 0 : 3;
        // The test names qualifiers until one is free here (its relay port is free there).
        for (;;) {
            DAT_CONN_QUAL q = 0;
            CHILD_CHECK(tch.recv(&q, 30000));
            DAT_RETURN rc = t.listen(q);
            CHILD_CHECK(tch.send(rc));
            if (rc == DAT_SUCCESS) break;
        }
        t.serve();
        CHILD_CHECK(tch.send(rep));
        return 0;
    });
    tch.parent_side();
    int ipid = dattest::spawn([&] {
        ich.child_side();
        child_env();
        SideReport rep;
        Initiator in(c.plan, &rep);
        DAT_CONN_QUAL q = 0;
        if (in.open(kRelayIa) && ich.recv(&q, 30000)) {
            in_addr lo{};
            lo.s_addr = htonl(INADDR_LOOPBACK);
            in.run(lo, q);
        } else if (rep.status == 0) {
            rep.fail("initiator: no qualifier from the test");
        }
        CHILD_CHECK(ich.send(rep));
        return 0;
    });
    ich.parent_side();
    ASSERT_GT(tpid, 0);
    ASSERT_GT(ipid, 0);

    auto cleanup = [&] {
        kill(tpid, SIGKILL);
        kill(ipid, SIGKILL);
        dattest::reap(tpid);
        dattest::reap(ipid);
    };

    // The relay's port P comes from the kernel; the target listens on Q = P - base.
    FaultRelay relay;
    int opened = 0;
    ASSERT_TRUE(tch.recv(&opened, 30000));
    DAT_CONN_QUAL q = 0;
    bool listening = false;
    for (int attempt = 0; opened && attempt < 20 && !listening; ++attempt) {
        std::uint16_t port = 0;
        ASSERT_TRUE(relay.listen(&port, c.fault.rcvbuf));
        q = port - kRelayBase;
        DAT_RETURN rc = DAT_INTERNAL_ERROR;
        ASSERT_TRUE(tch.send(q) && tch.recv(&rc, 30000));
        listening = rc == DAT_SUCCESS;
    }
    if (!opened || !listening) {
        SideReport rep;
        tch.recv(&rep, 1000);
        cleanup();
        FAIL() << "the target did not listen: " << rep.why;
    }
    in_addr lo{};
    lo.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_TRUE(relay.start(lo, static_cast<std::uint16_t>(q), c.fault));
    ASSERT_TRUE(ich.send(q));

    SideReport irep, trep;
    const int wait_ms = c.plan.run_ms + 25000;
    bool got_i = ich.recv(&irep, wait_ms);
    bool got_t = tch.recv(&trep, wait_ms);
    relay.stop();
    RelayStats rs = relay.stats();
    EXPECT_EQ(dattest::reap(ipid, 20), 0);
    EXPECT_EQ(dattest::reap(tpid, 20), 0);
    ASSERT_TRUE(got_i) << "no report from the initiator";
    ASSERT_TRUE(got_t) << "no report from the target";

    expect_sound(irep, trep);
    EXPECT_TRUE(rs.error.empty()) << "relay: " << rs.error;
    EXPECT_EQ(rs.connections, 1u);

    std::string line;
    char via[256];
    if (!c.ends) {
        expect_complete(c.plan, irep, trep);
        // The fault was there.
        if (c.fault.kind == Fault::Kind::Segments && !c.fault.random_segments) {
            EXPECT_EQ(rs.writes[0], rs.bytes[0]) << "not every segment was one byte";
            EXPECT_EQ(rs.writes[1], rs.bytes[1]) << "not every segment was one byte";
        }
        if (c.fault.kind == Fault::Kind::Stall) {
            EXPECT_GE(rs.stalls, 1u);
        }
        std::snprintf(via, sizeof via,
                      "; relay: %s to the server in %zu segments, %s to the client, %zu stalls",
                      mib(rs.bytes[0]).c_str(), rs.writes[0], mib(rs.bytes[1]).c_str(), rs.stalls);
        line = complete_line(c.fault.describe(), c.plan, irep, trep) + via;
    } else {
        ASSERT_TRUE(rs.fired) << "the fault never fired (" << mib(rs.bytes[0]) << " to server, "
                              << mib(rs.bytes[1]) << " to client)";
        expect_broken(irep, trep);
        const std::int64_t fired = ns_of(rs.fired_at);
        const double i_ms = ms_between(fired, irep.end_ns);
        const double t_ms = ms_between(fired, trep.end_ns);
        EXPECT_LE(i_ms, c.initiator_within_ms) << "initiator's event came late";
        EXPECT_LE(t_ms, c.target_within_ms) << "target's event came late";
        EXPECT_GE(i_ms, c.initiator_after_ms) << "initiator's event came before the deadline";
        std::snprintf(via, sizeof via, "; relay: fired after %s to the server, %s to the client%s",
                      mib(rs.fired_bytes[0]).c_str(), mib(rs.fired_bytes[1]).c_str(),
                      c.user_timeout_ms > 0 ? (", DAT_TCP_USER_TIMEOUT_MS=" + ut).c_str() : "");
        line = broken_line(c.fault.describe(), irep, trep, fired, c.initiator_within_ms,
                           c.target_within_ms) +
               via;
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    RecordProperty("verified", line);
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultMatrix, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &i) {
                             return std::string(i.param.id);
                         });

}  // namespace

// dat_evd_wait sleeping in the tcp provider's own epoll_wait (DAT_TCP_WAIT_SLEEP=epoll, the
// default; docs/configuration.md, "Progress"): the waiter receives on its own thread, so
// everything the progress thread used to do for it must still happen:
//  - a wait ends on arrival, keeps its timeout, and sleeps meanwhile (no CPU);
//  - an event posted from another thread (a send completed by another thread's post) and
//    dat_evd_set_unwaitable from another thread end the wait at once;
//  - two threads waiting on two EVDs of one IA are both served (one sleeps in the
//    progress, the other on its EVD);
//  - once the wait is over, the progress thread takes over again: a peer's RDMA reads
//    against us are answered while the application does nothing;
//  - so it does once a consumer stops polling (dat_evd_dequeue), however long it polled:
//    the thread's looks grow apart while polls go on (at most kBackoffMaxMs, engine.cpp);
//  - a connection a consumer polls leaves the epoll set (Engine::detach_hot), and comes
//    back whenever something else must see it through epoll: an inline wait, the progress
//    thread taking over, another connection becoming the busy one. Each of the three is
//    a case here: without the put-back, the peer's next message is never read.
// Two processes each; the spin before the sleep is off (DAT_TCP_WAIT_SPIN_US=0) so that
// every wait really sleeps in the progress.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"

using namespace dattest;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMsg = 64;

double own_cpu() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double secs_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

class InlineWait : public ::testing::Test {
  protected:
    void SetUp() override {
        setenv("DAT_TCP_WAIT_SPIN_US", "0", 1);
        setenv("DAT_TCP_WAIT_SLEEP", "epoll", 1);
    }
};

DAT_RETURN post_recv(Node &n, DAT_EP_HANDLE ep, Buffer &b, DAT_UINT64 cookie) {
    DAT_LMR_TRIPLET t = b.iov(0, kMsg);
    DAT_DTO_COOKIE ck;
    ck.as_64 = cookie;
    (void)n;
    return dat_ep_post_recv(ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG);
}

DAT_RETURN post_send(DAT_EP_HANDLE ep, Buffer &b, DAT_UINT64 cookie) {
    DAT_LMR_TRIPLET t = b.iov(0, kMsg);
    DAT_DTO_COOKIE ck;
    ck.as_64 = cookie;
    return dat_ep_post_send(ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG);
}

// The child's side of most cases: connect, then echo every message back, changed, until a
// zero-filled one arrives. A message `absorb` says it took (true) is not echoed.
int echo_child(Channel &ch, const std::function<bool(const Buffer &)> &absorb = {}) {
    ch.child_side();
    DAT_CONN_QUAL qual = 0;
    CHILD_CHECK(ch.recv(&qual));
    Node c;
    Buffer in, out;
    CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
    CHILD_CHECK(c.reg(&in, kMsg) == DAT_SUCCESS && c.reg(&out, kMsg) == DAT_SUCCESS);
    CHILD_CHECK(post_recv(c, c.ep, in, 1) == DAT_SUCCESS);
    DAT_EVENT_NUMBER outcome{};
    CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
    for (;;) {
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.recv_evd, &ev, 20'000'000) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        if (in.mem[0] == 0) break;
        if (absorb && absorb(in)) {
            CHILD_CHECK(post_recv(c, c.ep, in, 1) == DAT_SUCCESS);
            continue;
        }
        for (std::size_t i = 0; i < kMsg; ++i)
            out.mem[i] = static_cast<unsigned char>(in.mem[i] + 1);
        CHILD_CHECK(post_recv(c, c.ep, in, 1) == DAT_SUCCESS);
        CHILD_CHECK(post_send(c.ep, out, 2) == DAT_SUCCESS);
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
    }
    return 0;
}

// The server's side: listen, hand the qualifier over, accept.
void serve(Node &s, Channel &ch, bool threadsafe = false) {
    ASSERT_EQ(s.open(threadsafe ? kIaThreadSafe : kIa, threadsafe), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
}

// One echo_child connection, accepted by the Node's EP; `in` and `out` registered.
struct OneConnection {
    Channel ch;
    int pid = -1;
    Buffer in, out;  // declared before the Node, so they outlive it (it frees their LMRs)
    Node s;
};

void serve_one(OneConnection &c, bool threadsafe = false) {
    c.pid = spawn([&] { return echo_child(c.ch); });
    c.ch.parent_side();
    ASSERT_NO_FATAL_FAILURE(serve(c.s, c.ch, threadsafe));
    ASSERT_EQ(c.s.reg(&c.in, kMsg), DAT_SUCCESS);
    ASSERT_EQ(c.s.reg(&c.out, kMsg), DAT_SUCCESS);
}

// Sends the zero-filled message that ends echo_child.
void stop_child(Node &s, Buffer &out) {
    std::memset(out.mem.data(), 0, kMsg);
    ASSERT_EQ(post_send(s.ep, out, 99), DAT_SUCCESS);
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.req_evd, &ev), DAT_SUCCESS);
}

// How many file descriptors this process's epoll sets watch, all sets together (one "tfd:"
// line each in /proc/self/fdinfo of an epoll fd). With one IA open: its engine's set.
int fds_in_epoll() {
    int total = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == nullptr) return -1;
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        char target[64] = {};
        std::string link = std::string("/proc/self/fd/") + e->d_name;
        if (readlink(link.c_str(), target, sizeof target - 1) <= 0) continue;
        if (std::strcmp(target, "anon_inode:[eventpoll]") != 0) continue;
        std::ifstream info(std::string("/proc/self/fdinfo/") + e->d_name);
        for (std::string line; std::getline(info, line);)
            if (line.rfind("tfd:", 0) == 0) ++total;
    }
    closedir(d);
    return total;
}

// Polls `evd` (dat_evd_dequeue, never a wait) until an event comes, for at most 5 s.
bool poll_one(DAT_EVD_HANDLE evd, DAT_EVENT *ev) {
    const auto give_up = Clock::now() + std::chrono::seconds(5);
    for (;;) {
        DAT_RETURN rc = dat_evd_dequeue(evd, ev);
        if (rc == DAT_SUCCESS) return true;
        if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY || Clock::now() >= give_up) return false;
    }
}

// One round trip with an echo_child, polling only; the echo is checked.
::testing::AssertionResult polled_round(Node &s, DAT_EP_HANDLE ep, DAT_EVD_HANDLE recv,
                                        DAT_EVD_HANDLE req, Buffer &in, Buffer &out,
                                        unsigned char tag) {
    if (post_recv(s, ep, in, 10) != DAT_SUCCESS)
        return ::testing::AssertionFailure() << "post_recv";
    std::memset(out.mem.data(), tag, kMsg);
    if (post_send(ep, out, 11) != DAT_SUCCESS) return ::testing::AssertionFailure() << "post_send";
    DAT_EVENT ev;
    if (!poll_one(recv, &ev))
        return ::testing::AssertionFailure() << "no echo within 5 s (the message was not read)";
    if (ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS ||
        in.mem[0] != static_cast<unsigned char>(tag + 1) ||
        in.mem[kMsg - 1] != static_cast<unsigned char>(tag + 1))
        return ::testing::AssertionFailure() << "wrong echo";
    if (!poll_one(req, &ev)) return ::testing::AssertionFailure() << "no send completion";
    return ::testing::AssertionSuccess();
}

// Polled round trips until the set watches `want` descriptors (a connection left it);
// at most 5000 rounds.
::testing::AssertionResult poll_until(int want, Node &s, DAT_EP_HANDLE ep, DAT_EVD_HANDLE recv,
                                      DAT_EVD_HANDLE req, Buffer &in, Buffer &out) {
    for (int r = 0; r < 5000; ++r) {
        auto ok = polled_round(s, ep, recv, req, in, out, static_cast<unsigned char>(1 + r % 100));
        if (!ok) return ok << " (round " << r << ")";
        if (fds_in_epoll() == want) {
            std::printf("[ detach ] out of the epoll set after %d polled round trips\n", r + 1);
            return ::testing::AssertionSuccess();
        }
    }
    return ::testing::AssertionFailure()
           << "still " << fds_in_epoll() << " descriptors in the set, not " << want;
}

TEST_F(InlineWait, EndsOnArrivalKeepsItsTimeoutAndSleeps) {
    OneConnection c;
    ASSERT_NO_FATAL_FAILURE(serve_one(c));
    Node &s = c.s;
    Buffer &in = c.in, &out = c.out;
    const int pid = c.pid;

    // Nothing comes: the wait times out on time, asleep.
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    double cpu0 = own_cpu();
    auto t0 = Clock::now();
    DAT_RETURN rc = dat_evd_wait(s.recv_evd, 500'000, 1, &ev, &nmore);
    double waited = secs_since(t0), cpu = own_cpu() - cpu0;
    std::printf("[ inline wait ] empty wait: %.3f s, %.3f s CPU\n", waited, cpu);
    EXPECT_EQ(DAT_GET_TYPE(rc), DAT_TIMEOUT_EXPIRED);
    EXPECT_GE(waited, 0.49);
    EXPECT_LT(waited, 2.0);
    EXPECT_LT(cpu, 0.1) << "the wait did not sleep";

    // A ping-pong, every message checked.
    constexpr int kRounds = 500;
    t0 = Clock::now();
    for (int r = 0; r < kRounds; ++r) {
        ASSERT_EQ(post_recv(s, s.ep, in, 10), DAT_SUCCESS);
        for (std::size_t i = 0; i < kMsg; ++i) out.mem[i] = static_cast<unsigned char>(r + i + 1);
        if (out.mem[0] == 0) out.mem[0] = 1;
        ASSERT_EQ(post_send(s.ep, out, 11), DAT_SUCCESS);
        ASSERT_EQ(dat_evd_wait(s.recv_evd, 5'000'000, 1, &ev, &nmore), DAT_SUCCESS) << r;
        ASSERT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
        for (std::size_t i = 0; i < kMsg; ++i)
            ASSERT_EQ(in.mem[i], static_cast<unsigned char>(out.mem[i] + 1)) << r << " " << i;
        ASSERT_EQ(dat_evd_wait(s.req_evd, 5'000'000, 1, &ev, &nmore), DAT_SUCCESS);
    }
    std::printf("[ inline wait ] %d round trips in %.3f s\n", kRounds, secs_since(t0));
    ASSERT_NO_FATAL_FAILURE(stop_child(s, out));
    EXPECT_EQ(reap(pid), 0);
}

TEST_F(InlineWait, AnotherThreadsEventsEndTheWait) {
    OneConnection c;
    ASSERT_NO_FATAL_FAILURE(serve_one(c, true));
    Node &s = c.s;
    Buffer &in = c.in, &out = c.out;
    const int pid = c.pid;
    ASSERT_EQ(post_recv(s, s.ep, in, 10), DAT_SUCCESS);

    // This thread sleeps on the request EVD; another posts a send 300 ms later: its
    // completion must end the wait (it may be posted on that other thread).
    std::memset(out.mem.data(), 7, kMsg);
    std::atomic<bool> posted{false};
    Clock::time_point posted_at;
    std::thread poster([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        posted_at = Clock::now();
        posted = post_send(s.ep, out, 11) == DAT_SUCCESS;
    });
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    DAT_RETURN rc = dat_evd_wait(s.req_evd, 5'000'000, 1, &ev, &nmore);
    auto ended = Clock::now();
    poster.join();
    ASSERT_TRUE(posted.load());
    ASSERT_EQ(rc, DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 11u);
    double late = std::chrono::duration<double>(ended - posted_at).count();
    std::printf(
        "[ inline wait ] send completion from another thread ended the wait %.4f s "
        "after the post\n",
        late);
    EXPECT_LT(late, 1.0);
    ASSERT_EQ(dat_evd_wait(s.recv_evd, 5'000'000, 1, &ev, &nmore), DAT_SUCCESS);  // the echo

    // dat_evd_set_unwaitable from another thread ends a sleeping wait at once.
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        posted_at = Clock::now();
        dat_evd_set_unwaitable(s.recv_evd);
    });
    rc = dat_evd_wait(s.recv_evd, 5'000'000, 1, &ev, &nmore);
    ended = Clock::now();
    stopper.join();
    EXPECT_EQ(DAT_GET_TYPE(rc), DAT_INTERRUPTED_CALL);
    late = std::chrono::duration<double>(ended - posted_at).count();
    std::printf("[ inline wait ] set_unwaitable ended the wait %.4f s after the call\n", late);
    EXPECT_LT(late, 1.0);
    ASSERT_EQ(dat_evd_clear_unwaitable(s.recv_evd), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(stop_child(s, out));
    EXPECT_EQ(reap(pid), 0);
}

// Two echo_child connections on one IA: the Node's EP accepts the first; a second EP with
// its own EVDs (ep2, recv2, req2) accepts the second; the four buffers are registered.
struct TwoConnections {
    Channel ch1, ch2;
    int pid1 = -1, pid2 = -1;
    Buffer bufs[4];  // declared before the Node, so they outlive it (it frees their LMRs)
    Node s;
    DAT_EP_HANDLE ep2 = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE recv2 = DAT_HANDLE_NULL, req2 = DAT_HANDLE_NULL;
};

void serve_two(TwoConnections &t, bool threadsafe) {
    t.pid1 = spawn([&] { return echo_child(t.ch1); });
    t.ch1.parent_side();
    t.pid2 = spawn([&] { return echo_child(t.ch2); });
    t.ch2.parent_side();
    Node &s = t.s;
    ASSERT_EQ(s.open(threadsafe ? kIaThreadSafe : kIa, threadsafe), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(s.ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &t.recv2), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(s.ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &t.req2), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_create(s.ia, s.pz, t.recv2, t.req2, s.conn_evd, nullptr, &t.ep2), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(t.ch1.send(qual));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    ASSERT_TRUE(t.ch2.send(qual));
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, t.ep2, 0, nullptr),
              DAT_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    for (Buffer &b : t.bufs) ASSERT_EQ(s.reg(&b, kMsg), DAT_SUCCESS);
}

// Both children reaped, the second EP and its EVDs freed.
void finish_two(TwoConnections &t) {
    EXPECT_EQ(reap(t.pid1), 0);
    EXPECT_EQ(reap(t.pid2), 0);
    ASSERT_EQ(dat_ep_free(t.ep2), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_free(t.recv2), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_free(t.req2), DAT_SUCCESS);
}

TEST_F(InlineWait, TwoWaitersOnTwoEvdsAreBothServed) {
    constexpr int kRounds = 200;
    // One IA (two would each have their own progress), two EPs with their own EVDs.
    TwoConnections t;
    ASSERT_NO_FATAL_FAILURE(serve_two(t, true));
    Node &s = t.s;
    Buffer(&bufs)[4] = t.bufs;
    auto pingpong = [&](DAT_EP_HANDLE ep, DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req,
                        unsigned char tag, Buffer &in, Buffer &out) -> int {
        DAT_EVENT e;
        DAT_COUNT nmore;
        for (int r = 0; r < kRounds; ++r) {
            if (post_recv(s, ep, in, 1) != DAT_SUCCESS) return r;
            std::memset(out.mem.data(), tag, kMsg);
            if (post_send(ep, out, 2) != DAT_SUCCESS) return r;
            if (dat_evd_wait(recv, 5'000'000, 1, &e, &nmore) != DAT_SUCCESS) return r;
            if (in.mem[kMsg - 1] != static_cast<unsigned char>(tag + 1)) return r;
            if (dat_evd_wait(req, 5'000'000, 1, &e, &nmore) != DAT_SUCCESS) return r;
        }
        std::memset(out.mem.data(), 0, kMsg);
        if (post_send(ep, out, 3) != DAT_SUCCESS) return -2;
        if (dat_evd_wait(req, 5'000'000, 1, &e, &nmore) != DAT_SUCCESS) return -2;
        return kRounds;
    };
    int done1 = 0, done2 = 0;
    auto t0 = Clock::now();
    std::thread other([&] { done2 = pingpong(t.ep2, t.recv2, t.req2, 0x40, bufs[2], bufs[3]); });
    done1 = pingpong(s.ep, s.recv_evd, s.req_evd, 0x20, bufs[0], bufs[1]);
    other.join();
    std::printf("[ inline wait ] two threads, %d + %d round trips in %.3f s\n", done1, done2,
                secs_since(t0));
    EXPECT_EQ(done1, kRounds);
    EXPECT_EQ(done2, kRounds);
    ASSERT_NO_FATAL_FAILURE(finish_two(t));
}

// A connection polled for long leaves the epoll set; a dat_evd_wait, which sleeps in that
// set, puts it back first (Engine::wait_inline), or the peer's next message would never
// wake it.
TEST_F(InlineWait, APolledConnectionLeavesEpollAndAWaitPutsItBack) {
    OneConnection c;
    ASSERT_NO_FATAL_FAILURE(serve_one(c));
    Node &s = c.s;
    Buffer &in = c.in, &out = c.out;
    const int pid = c.pid;
    const int all = fds_in_epoll();
    ASSERT_GT(all, 1);
    ASSERT_TRUE(poll_until(all - 1, s, s.ep, s.recv_evd, s.req_evd, in, out));

    // The next wait sleeps in the set while the progress thread stands aside: the echo
    // wakes it only if the connection is back in the set (else it times out). A wait that
    // finds its echo already there never sleeps and leaves the socket out: the progress
    // thread, in a spin that began before the last poll took the socket out, reads it
    // directly too, and on a loaded machine it may have read the first echo before the
    // wait began. So the socket must be back after some round, not after the first.
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    int back_after = -1;
    for (int r = 0; r < 20; ++r) {
        ASSERT_EQ(post_recv(s, s.ep, in, 10), DAT_SUCCESS);
        std::memset(out.mem.data(), 0x33, kMsg);
        ASSERT_EQ(post_send(s.ep, out, 11), DAT_SUCCESS);
        ASSERT_EQ(dat_evd_wait(s.recv_evd, 5'000'000, 1, &ev, &nmore), DAT_SUCCESS) << r;
        EXPECT_EQ(in.mem[kMsg - 1], 0x34);
        ASSERT_EQ(dat_evd_wait(s.req_evd, 5'000'000, 1, &ev, &nmore), DAT_SUCCESS);
        if (back_after < 0 && fds_in_epoll() == all) back_after = r;
    }
    EXPECT_GE(back_after, 0) << "the socket never went back into the set";
    std::printf("[ detach ] back in the set after %d waited round trip(s)\n", back_after + 1);
    ASSERT_NO_FATAL_FAILURE(stop_child(s, out));
    EXPECT_EQ(reap(pid), 0);
}

// The next case's child: echo_child, except that messages tagged kBurstTag are only
// counted, and each time kBurst more of them are in, it tells the parent when
// (steady_clock).
constexpr unsigned char kBurstTag = 0xEE;
constexpr int kBurst = 8;

int burst_child(Channel &ch) {
    int burst = 0;
    bool told = true;
    int rc = echo_child(ch, [&](const Buffer &in) {
        if (in.mem[0] != kBurstTag) return false;
        if (++burst % kBurst == 0)
            told =
                told && ch.send(static_cast<std::int64_t>(Clock::now().time_since_epoch().count()));
        return true;
    });
    CHILD_CHECK(told);
    return rc;
}

// Sends posted back to back while the connection is polled out of the epoll set are held
// for one batch (defer_tx), which the poller's next round sends. A poller that stops
// calling DAT right after the posts must not leave them behind: the held frames put the
// socket back into the set with EPOLLOUT (TcpEp::update_poll), and the progress thread
// sends them, at once if it watches the set, within 2 x kBackoffMaxMs (8 ms) when it takes
// over otherwise. What is asserted is that the burst arrives (within 2 s: room for a
// loaded machine, where the child wakes 8 times); how soon is printed. (Leaving the socket
// out for held frames saved two epoll_ctl calls a batch, no measurable bandwidth, and
// cost a burst like this one 8 ms instead of 0.2: docs/benchmarks.md, "Small RDMA
// reads".)
TEST_F(InlineWait, SendsHeldForABatchLeaveWhenThePollerStops) {
    Buffer burst_buf;  // outlives the Node (it frees the LMR)
    OneConnection c;
    c.pid = spawn([&] { return burst_child(c.ch); });
    c.ch.parent_side();
    ASSERT_NO_FATAL_FAILURE(serve(c.s, c.ch));
    Node &s = c.s;
    ASSERT_EQ(s.reg(&c.in, kMsg), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&c.out, kMsg), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&burst_buf, kMsg), DAT_SUCCESS);
    std::memset(burst_buf.mem.data(), kBurstTag, kMsg);
    const int all = fds_in_epoll();
    ASSERT_GT(all, 1);
    for (int round = 0; round < 2; ++round) {
        ASSERT_TRUE(poll_until(all - 1, s, s.ep, s.recv_evd, s.req_evd, c.in, c.out));
        const auto posted = Clock::now();
        for (int i = 0; i < kBurst; ++i) ASSERT_EQ(post_send(s.ep, burst_buf, 20 + i), DAT_SUCCESS);
        if (round == 0) {
            // The poller goes on: its rounds send the burst.
            DAT_EVENT ev;
            for (int i = 0; i < kBurst; ++i) ASSERT_TRUE(poll_one(s.req_evd, &ev)) << i;
        }
        // Round 1: no DAT call until the child has the burst.
        std::int64_t arrived = 0;
        ASSERT_TRUE(c.ch.recv(&arrived, 5000)) << "the burst never arrived, round " << round;
        const double after =
            std::chrono::duration<double>(Clock::duration(arrived) - posted.time_since_epoch())
                .count();
        std::printf("[ held sends ] round %d: the burst arrived %.2f ms after the posts\n", round,
                    after * 1e3);
        if (round == 1) {
            EXPECT_LT(after, 2.0);
            DAT_EVENT ev;
            for (int i = 0; i < kBurst; ++i) ASSERT_TRUE(poll_one(s.req_evd, &ev)) << i;
        }
    }
    ASSERT_NO_FATAL_FAILURE(stop_child(s, c.out));
    EXPECT_EQ(reap(c.pid), 0);
}

// Two connections on one IA, polled in turn: when the second becomes the busy one, the
// first (out of the set) goes back at once; it is not polled directly any more, so epoll
// must see its messages again.
TEST_F(InlineWait, AnotherBusyConnectionPutsTheFirstBack) {
    TwoConnections t;
    ASSERT_NO_FATAL_FAILURE(serve_two(t, false));
    Node &s = t.s;
    Buffer(&bufs)[4] = t.bufs;
    DAT_EP_HANDLE ep2 = t.ep2;
    DAT_EVD_HANDLE recv2 = t.recv2, req2 = t.req2;
    DAT_EVENT ev;

    const int all = fds_in_epoll();
    ASSERT_GT(all, 2);
    ASSERT_TRUE(poll_until(all - 1, s, s.ep, s.recv_evd, s.req_evd, bufs[0], bufs[1]));
    // One round on the second connection makes it the busy one (found through epoll); the
    // next poll puts the first back, long before the second has been polled enough to
    // leave the set itself.
    // (A poll finds nothing to do while the progress thread dispatches, and the second
    // connection's echo may have been read by the thread, which watches the set while the
    // first is polled alone: poll until the first is back, within a bound.)
    ASSERT_TRUE(polled_round(s, ep2, recv2, req2, bufs[2], bufs[3], 0x40));
    int polls = 0;
    for (const auto t0 = Clock::now(); fds_in_epoll() != all && secs_since(t0) < 2; ++polls)
        EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(s.recv_evd, &ev)), DAT_QUEUE_EMPTY);
    EXPECT_EQ(fds_in_epoll(), all) << "after " << polls << " polls";
    // Both keep working, in turn, polled only.
    for (int r = 0; r < 200; ++r) {
        ASSERT_TRUE(polled_round(s, s.ep, s.recv_evd, s.req_evd, bufs[0], bufs[1], 0x20)) << r;
        ASSERT_TRUE(polled_round(s, ep2, recv2, req2, bufs[2], bufs[3], 0x40)) << r;
    }
    EXPECT_GE(fds_in_epoll(), all - 1);  // at most one connection out at a time
    ASSERT_NO_FATAL_FAILURE(stop_child(s, bufs[1]));
    std::memset(bufs[3].mem.data(), 0, kMsg);
    ASSERT_EQ(post_send(ep2, bufs[3], 99), DAT_SUCCESS);
    ASSERT_EQ(s.next(req2, &ev), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(finish_two(t));
}

// A connection polled out of the set for long: the poller stops asking epoll at all (its
// rounds all read the busy socket) and the progress thread watches the rest of the set
// (Engine::watch). A message on another connection of the IA must still be read at once,
// though the consumer's polls never look at epoll: if nobody watched, it would wait forever.
TEST_F(InlineWait, AnotherConnectionIsServedWhileTheFirstIsPolledAlone) {
    TwoConnections t;
    ASSERT_NO_FATAL_FAILURE(serve_two(t, false));
    Node &s = t.s;
    Buffer(&bufs)[4] = t.bufs;
    DAT_EVENT ev;
    const int all = fds_in_epoll();
    ASSERT_GT(all, 2);
    ASSERT_TRUE(poll_until(all - 1, s, s.ep, s.recv_evd, s.req_evd, bufs[0], bufs[1]));
    // Enough polls after the detach for the epoll turns to stop (a few quiet ones).
    for (int r = 0; r < 50; ++r)
        ASSERT_TRUE(polled_round(s, s.ep, s.recv_evd, s.req_evd, bufs[0], bufs[1], 0x20)) << r;
    for (int r = 0; r < 3; ++r) {
        // The second connection's echo, found while only the first is polled: the consumer
        // polls the first connection's receive EVD (which progresses it alone), then
        // looks at the second's without waiting.
        ASSERT_EQ(post_recv(s, t.ep2, bufs[2], 10), DAT_SUCCESS);
        std::memset(bufs[3].mem.data(), 0x40 + r, kMsg);
        const auto t0 = Clock::now();
        ASSERT_EQ(post_send(t.ep2, bufs[3], 11), DAT_SUCCESS);
        bool got = false;
        while (!got && secs_since(t0) < 5) {
            EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(s.recv_evd, &ev)), DAT_QUEUE_EMPTY);
            DAT_RETURN rc = dat_evd_dequeue(t.recv2, &ev);
            got = rc == DAT_SUCCESS;
        }
        const double took = secs_since(t0);
        std::printf("[ watch ] second connection's echo after %.1f us\n", took * 1e6);
        ASSERT_TRUE(got) << "round " << r << ": the echo on the second connection was not read";
        EXPECT_EQ(bufs[2].mem[kMsg - 1], static_cast<unsigned char>(0x41 + r));
        ASSERT_TRUE(poll_one(t.req2, &ev));
        // And the first connection, polled directly again, keeps working.
        for (int i = 0; i < 40; ++i)
            ASSERT_TRUE(polled_round(s, s.ep, s.recv_evd, s.req_evd, bufs[0], bufs[1], 0x20));
    }
    ASSERT_NO_FATAL_FAILURE(stop_child(s, bufs[1]));
    std::memset(bufs[3].mem.data(), 0, kMsg);
    ASSERT_EQ(post_send(t.ep2, bufs[3], 99), DAT_SUCCESS);
    ASSERT_EQ(s.next(t.req2, &ev), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(finish_two(t));
}

// The reader of the takeover cases: connects, waits for the target to go idle, then RDMA
// reads kReads times and reports how long the first and all took. `first_limit` bounds
// the first (seconds); all must be answered within 2 s.
constexpr int kReads = 100;

int reader_child(Channel &ch, const char *what, double first_limit, bool echo_first = false) {
    ch.child_side();
    DAT_CONN_QUAL qual = 0;
    DAT_RMR_TRIPLET target{};
    CHILD_CHECK(ch.recv(&qual) && ch.recv(&target));
    Node c;
    Buffer dst, in, out;
    CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
    CHILD_CHECK(c.reg(&dst, kMsg) == DAT_SUCCESS);
    CHILD_CHECK(c.reg(&in, kMsg) == DAT_SUCCESS && c.reg(&out, kMsg) == DAT_SUCCESS);
    CHILD_CHECK(post_recv(c, c.ep, in, 1) == DAT_SUCCESS);
    DAT_EVENT_NUMBER outcome{};
    CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
    // The target's polled ping-pong first, as echo_child, until it stops sending.
    for (DAT_TIMEOUT wait = 20'000'000; echo_first; wait = 300'000) {
        DAT_EVENT ev;
        DAT_RETURN rc = c.next(c.recv_evd, &ev, wait);
        if (DAT_GET_TYPE(rc) == DAT_TIMEOUT_EXPIRED) break;
        CHILD_CHECK(rc == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        for (std::size_t i = 0; i < kMsg; ++i)
            out.mem[i] = static_cast<unsigned char>(in.mem[i] + 1);
        CHILD_CHECK(post_recv(c, c.ep, in, 1) == DAT_SUCCESS);
        CHILD_CHECK(post_send(c.ep, out, 2) == DAT_SUCCESS);
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
    }
    int go = 0;
    CHILD_CHECK(ch.recv(&go));  // the target has gone idle
    auto t0 = Clock::now();
    double first = 0;
    for (int i = 0; i < kReads; ++i) {
        DAT_LMR_TRIPLET t = dst.iov();
        DAT_DTO_COOKIE ck;
        ck.as_64 = static_cast<DAT_UINT64>(i);
        CHILD_CHECK(dat_ep_post_rdma_read(c.ep, 1, &t, ck, &target, DAT_COMPLETION_DEFAULT_FLAG) ==
                    DAT_SUCCESS);
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.req_evd, &ev, 5'000'000) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        CHILD_CHECK(dst.mem[0] == 0x5A && dst.mem[kMsg - 1] == 0x5A);
        if (i == 0) first = secs_since(t0);
    }
    double secs = secs_since(t0);
    std::printf(
        "[ takeover ] first RDMA read answered after %.1f ms, %d in %.3f s, while "
        "the target, %s, did nothing\n",
        first * 1e3, kReads, secs, what);
    CHILD_CHECK(first < first_limit && secs < 2.0);
    CHILD_CHECK(ch.send(1));
    return 0;
}

// The target's side: exposes a region, accepts the reader, runs `go_idle` (a long wait or
// a long poll), then does nothing while the reader's reads must be answered.
template <typename GoIdle>
void target_goes_idle(Channel &ch, int pid, GoIdle go_idle) {
    ch.parent_side();
    Buffer region;  // outlives the Node (the LMR goes first)
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&region, kMsg), DAT_SUCCESS);
    std::memset(region.mem.data(), 0x5A, kMsg);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    DAT_RMR_TRIPLET t = region.rmr();
    ASSERT_TRUE(ch.send(qual) && ch.send(t));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    go_idle(s);
    ASSERT_TRUE(ch.send(1));
    int done = 0;
    EXPECT_TRUE(ch.recv(&done, 20000)) << "the peer's RDMA reads were not answered";
    EXPECT_EQ(reap(pid), 0);
}

// After a long inline wait the progress thread must answer a peer's RDMA reads while the
// application does not call DAT at all.
TEST_F(InlineWait, TheProgressThreadTakesOverAfterTheWait) {
    Channel ch;
    int pid = spawn([&] { return reader_child(ch, "after a 1.5 s wait", 2.0); });
    target_goes_idle(ch, pid, [](Node &s) {
        // A wait long enough for the progress thread to stand aside for good.
        DAT_EVENT ev;
        DAT_COUNT nmore = 0;
        EXPECT_EQ(DAT_GET_TYPE(dat_evd_wait(s.recv_evd, 1'500'000, 1, &ev, &nmore)),
                  DAT_TIMEOUT_EXPIRED);
    });
}

// The thread looks at most 2 x kBackoffMaxMs (8 ms) after the last poll; the 0.4 s bound on
// the first read leaves room for a loaded CI machine, and fails looks that grow without a
// limit (with a 1.5 s limit instead of 4 ms, the first read took 525 ms).
TEST_F(InlineWait, TheProgressThreadTakesOverAfterPolling) {
    Channel ch;
    int pid = spawn([&] { return reader_child(ch, "after polling for 0.5 s", 0.4); });
    target_goes_idle(ch, pid, [](Node &s) {
        // Poll long enough for the thread's looks to reach their longest spacing.
        const auto t0 = Clock::now();
        std::uint64_t polls = 0;
        while (secs_since(t0) < 0.5) {
            DAT_EVENT ev;
            ASSERT_EQ(DAT_GET_TYPE(dat_evd_dequeue(s.recv_evd, &ev)), DAT_QUEUE_EMPTY);
            ++polls;
        }
        EXPECT_GT(polls, 100u);
    });
}

// The same once the target's connection was polled for long and left the epoll set: the
// thread puts it back when it takes over, or the reads are never answered.
TEST_F(InlineWait, TheProgressThreadTakesOverAPolledConnection) {
    Channel ch;
    int pid = spawn([&] { return reader_child(ch, "after a polled ping-pong", 0.4, true); });
    Buffer in, out;  // outlive target_goes_idle's Node (it frees their LMRs)
    target_goes_idle(ch, pid, [&in, &out](Node &s) {
        ASSERT_EQ(s.reg(&in, kMsg), DAT_SUCCESS);
        ASSERT_EQ(s.reg(&out, kMsg), DAT_SUCCESS);
        // Polled until the connection is out of the set, then nothing more: the reader's
        // echo loop ends when no message comes for 0.3 s. (The thread's first drain of
        // parked objects, the accepted connection's, puts the connection back once, from
        // outside; then it is polled out again.)
        const int all = fds_in_epoll();
        int out_at_end = 0;
        for (int tries = 0; tries < 3 && out_at_end != all - 1; ++tries) {
            ASSERT_TRUE(poll_until(all - 1, s, s.ep, s.recv_evd, s.req_evd, in, out));
            out_at_end = fds_in_epoll();
        }
        ASSERT_EQ(out_at_end, all - 1);
    });
}

}  // namespace

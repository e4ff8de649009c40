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
//    the thread's looks grow apart while polls go on (at most kBackoffMaxMs, engine.cpp).
// Two processes each; the spin before the sleep is off (DAT_TCP_WAIT_SPIN_US=0) so that
// every wait really sleeps in the progress.
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
// zero-filled one arrives.
int echo_child(Channel &ch) {
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

// Sends the zero-filled message that ends echo_child.
void stop_child(Node &s, Buffer &out) {
    std::memset(out.mem.data(), 0, kMsg);
    ASSERT_EQ(post_send(s.ep, out, 99), DAT_SUCCESS);
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.req_evd, &ev), DAT_SUCCESS);
}

TEST_F(InlineWait, EndsOnArrivalKeepsItsTimeoutAndSleeps) {
    Channel ch;
    int pid = spawn([&] { return echo_child(ch); });
    ch.parent_side();
    Node s;
    Buffer in, out;
    ASSERT_NO_FATAL_FAILURE(serve(s, ch));
    ASSERT_EQ(s.reg(&in, kMsg), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&out, kMsg), DAT_SUCCESS);

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
    Channel ch;
    int pid = spawn([&] { return echo_child(ch); });
    ch.parent_side();
    Node s;
    Buffer in, out;
    ASSERT_NO_FATAL_FAILURE(serve(s, ch, true));
    ASSERT_EQ(s.reg(&in, kMsg), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&out, kMsg), DAT_SUCCESS);
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

TEST_F(InlineWait, TwoWaitersOnTwoEvdsAreBothServed) {
    constexpr int kRounds = 200;
    Channel ch1, ch2;
    int pid1 = spawn([&] { return echo_child(ch1); });
    ch1.parent_side();
    int pid2 = spawn([&] { return echo_child(ch2); });
    ch2.parent_side();
    // One IA (two would each have their own progress), two EPs with their own EVDs.
    Buffer bufs[4];  // outlive the Node: its destructor frees their LMRs
    Node s;
    ASSERT_EQ(s.open(kIaThreadSafe, true), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    DAT_EVD_HANDLE recv2, req2;
    ASSERT_EQ(dat_evd_create(s.ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv2), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(s.ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req2), DAT_SUCCESS);
    DAT_EP_HANDLE ep2;
    ASSERT_EQ(dat_ep_create(s.ia, s.pz, recv2, req2, s.conn_evd, nullptr, &ep2), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch1.send(qual));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    ASSERT_TRUE(ch2.send(qual));
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep2, 0, nullptr),
              DAT_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);

    for (Buffer &b : bufs) ASSERT_EQ(s.reg(&b, kMsg), DAT_SUCCESS);
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
    std::thread other([&] { done2 = pingpong(ep2, recv2, req2, 0x40, bufs[2], bufs[3]); });
    done1 = pingpong(s.ep, s.recv_evd, s.req_evd, 0x20, bufs[0], bufs[1]);
    other.join();
    std::printf("[ inline wait ] two threads, %d + %d round trips in %.3f s\n", done1, done2,
                secs_since(t0));
    EXPECT_EQ(done1, kRounds);
    EXPECT_EQ(done2, kRounds);
    EXPECT_EQ(reap(pid1), 0);
    EXPECT_EQ(reap(pid2), 0);
    ASSERT_EQ(dat_ep_free(ep2), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_free(recv2), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_free(req2), DAT_SUCCESS);
}

// The reader of the takeover cases: connects, waits for the target to go idle, then RDMA
// reads kReads times and reports how long the first and all took. `first_limit` bounds
// the first (seconds); all must be answered within 2 s.
constexpr int kReads = 100;

int reader_child(Channel &ch, const char *what, double first_limit) {
    ch.child_side();
    DAT_CONN_QUAL qual = 0;
    DAT_RMR_TRIPLET target{};
    CHILD_CHECK(ch.recv(&qual) && ch.recv(&target));
    Node c;
    Buffer dst;
    CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
    CHILD_CHECK(c.reg(&dst, kMsg) == DAT_SUCCESS);
    DAT_EVENT_NUMBER outcome{};
    CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
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

}  // namespace

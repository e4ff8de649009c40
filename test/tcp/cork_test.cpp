// Write, then notify (providers/tcp/ep_cork.cpp; docs/tcp-provider.md, "Transmit"): once a
// connection's RDMA writes have each had a SEND follow at once, the next write waits in the
// socket for that SEND, and both leave together. What must hold, seen from a raw peer:
//  - the write is held until the SEND is posted, then both arrive;
//  - a held write no post follows still arrives: at the application's next progress call
//    (a dequeue) at once, or, with no call at all, from the progress thread once it was held
//    for DAT_TCP_CORK_HOLD_MS, or with that at 0 when the kernel sends it (about 200 ms);
//    and the miss ends the holding: the next write leaves at once;
//  - DAT_TCP_CORK_WRITES=off sends every write at once.
// One process: the provider's EP accepts a raw connection; this thread is the application.
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"
#include "raw_peer.hpp"

using namespace dattest;
using opendat::tcp::FrameHeader;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kArrives = 2000;  // ms: anything that is sent arrives well within this
// ms: when the kernel sends a segment held with MSG_MORE that nothing followed (its probe
// timer, TCP_RTO_MIN), and a time far below it: what arrives within that was sent by the
// provider.
constexpr int kKernelPush = 200;
constexpr int kPromptly = 100;

// The IA reads DAT_TCP_CORK_* when it opens. TcpCork holds without a time limit (the
// dequeue's and the kernel's pushes); the fixtures below set what they test.
class TcpCork : public ::testing::Test {
  protected:
    virtual const char *hold_ms() const { return "0"; }
    void SetUp() override {
        ASSERT_EQ(setenv("DAT_TCP_CORK_HOLD_MS", hold_ms(), 1), 0);
        ASSERT_EQ(s_.open(), DAT_SUCCESS);
        ASSERT_EQ(s_.make_ep(), DAT_SUCCESS);
        ASSERT_EQ(s_.reg(&src_, 64), DAT_SUCCESS);
        DAT_CONN_QUAL qual = 0;
        ASSERT_EQ(s_.listen(&qual), DAT_SUCCESS);
        fd_ = attack::connect_tcp(own_address(), static_cast<std::uint16_t>(qual));
        ASSERT_GE(fd_, 0);
        ASSERT_TRUE(attack::send_conn_req(fd_));
        ASSERT_EQ(s_.accept_one(), DAT_SUCCESS);
        ASSERT_TRUE(attack::expect_conn_acc(fd_));
    }
    void TearDown() override {
        if (fd_ >= 0) close(fd_);
        unsetenv("DAT_TCP_CORK_HOLD_MS");
    }

    void post_write() {
        DAT_LMR_TRIPLET iov = src_.iov(0, 8);
        DAT_RMR_TRIPLET remote{};  // the raw peer places nothing: any range will do
        remote.rmr_context = 0x1234;
        remote.virtual_address = 0x10000;
        remote.segment_length = 64;
        DAT_DTO_COOKIE ck{};
        ASSERT_EQ(dat_ep_post_rdma_write(s_.ep, 1, &iov, ck, &remote, DAT_COMPLETION_SUPPRESS_FLAG),
                  DAT_SUCCESS);
    }
    void post_send() {
        DAT_LMR_TRIPLET iov = src_.iov(0, 8);
        DAT_DTO_COOKIE ck{};
        ASSERT_EQ(dat_ep_post_send(s_.ep, 1, &iov, ck, DAT_COMPLETION_SUPPRESS_FLAG), DAT_SUCCESS);
    }
    // The next frame from the provider is `op`, within timeout_ms; its payload (8 bytes
    // here) is read too.
    bool frame(std::uint8_t op, int timeout_ms) {
        FrameHeader h{};
        unsigned char body[64];
        if (!attack::recv_all(fd_, &h, sizeof h, timeout_ms) || h.op != op ||
            h.length > sizeof body)
            return false;
        return h.length == 0 || attack::recv_all(fd_, body, h.length, timeout_ms);
    }
    // Nothing arrives within ms.
    bool quiet(int ms) {
        pollfd p{fd_, POLLIN, 0};
        return poll(&p, 1, ms) == 0;
    }
    // Writes, each with its SEND at once: the history that makes the next write wait.
    void write_then_send(int n) {
        for (int i = 0; i < n; ++i) {
            post_write();
            post_send();
            ASSERT_TRUE(frame(opendat::tcp::kWrite, kArrives));
            ASSERT_TRUE(frame(opendat::tcp::kSend, kArrives));
        }
    }
    // Builds the history, posts a write and sees it held for quiet_ms (posted_ = when).
    // A run counts only writes whose SEND came within 1 ms: on a loaded machine a
    // preemption between the two can break it, so the history is built again, up to
    // three times (a held write that nothing followed in time is a miss, which doubles
    // the run a hold needs: 5 writes cover one).
    bool hold_next_write(int quiet_ms) {
        for (int attempt = 0; attempt < 3; ++attempt) {
            write_then_send(5);
            if (HasFatalFailure()) return false;
            posted_ = Clock::now();
            post_write();
            if (quiet(quiet_ms)) return true;
            std::printf("attempt %d: the write was not held; again\n", attempt + 1);
            post_send();
            if (!frame(opendat::tcp::kWrite, kArrives) || !frame(opendat::tcp::kSend, kArrives))
                return false;
        }
        return false;
    }
    long long ms_since_post() const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - posted_)
            .count();
    }

    Node s_;
    Buffer src_;
    int fd_ = -1;
    Clock::time_point posted_{};
};

TEST_F(TcpCork, AWriteWaitsForTheSendThatFollowsIt) {
    ASSERT_TRUE(hold_next_write(kPromptly)) << "the write left before its SEND was posted";
    post_send();
    EXPECT_TRUE(frame(opendat::tcp::kWrite, kArrives));
    EXPECT_TRUE(frame(opendat::tcp::kSend, kArrives));
}

// The application dequeues instead of posting its SEND: the write goes then, and the next
// one is not held (a miss doubles the run a hold needs).
TEST_F(TcpCork, AHeldWriteGoesAtTheNextProgressCall) {
    ASSERT_TRUE(hold_next_write(kPromptly / 4));
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(s_.req_evd, &ev)), DAT_QUEUE_EMPTY);
    EXPECT_TRUE(frame(opendat::tcp::kWrite, kPromptly / 2)) << "the dequeue did not send it";
    EXPECT_LT(ms_since_post(), kKernelPush * 3 / 4);  // the dequeue, not the kernel
    write_then_send(3);                               // a run of 3: not enough after a miss
    post_write();
    EXPECT_TRUE(frame(opendat::tcp::kWrite, kPromptly)) << "held again after a miss";
}

// No post follows and the application makes no DAT call at all: the kernel sends the write
// (after some 200 ms: a late write, never a lost one). The next post counts the miss.
TEST_F(TcpCork, AHeldWriteThatNothingFollowsStillArrives) {
    ASSERT_TRUE(hold_next_write(kPromptly));
    ASSERT_TRUE(frame(opendat::tcp::kWrite, kArrives));
    const long long ms = ms_since_post();
    std::printf("a held write that nothing followed arrived after %lld ms\n", ms);
    EXPECT_GE(ms, kPromptly);
    post_write();
    EXPECT_TRUE(frame(opendat::tcp::kWrite, kPromptly)) << "held again after a miss";
}

// No post follows and the application makes no DAT call: the progress thread sends the
// write once it has been held for DAT_TCP_CORK_HOLD_MS (30 ms here: long enough to see it
// held, and its slices of 30 ms end well before the kernel's ~200 ms). A miss, too.
class TcpCorkHold : public TcpCork {
  protected:
    const char *hold_ms() const override { return "30"; }
};

TEST_F(TcpCorkHold, AHeldWriteThatNothingFollowsGoesAfterTheHoldTime) {
    ASSERT_TRUE(hold_next_write(10));
    ASSERT_TRUE(frame(opendat::tcp::kWrite, kArrives));
    const long long ms = ms_since_post();
    std::printf("a held write that nothing followed arrived after %lld ms (hold 30 ms)\n", ms);
    EXPECT_GE(ms, 25);
    EXPECT_LT(ms, kKernelPush * 3 / 4) << "the kernel sent it, not the progress thread";
    post_write();
    EXPECT_TRUE(frame(opendat::tcp::kWrite, kPromptly)) << "held again after a miss";
}

// The same when the progress thread sleeps with no limit as the write is held: after the
// history, a quiet spell longer than the thread's 50 slices after the last hold (1.5 s at
// 30 ms), then the write: its hold must wake the thread.
TEST_F(TcpCorkHold, AHoldWakesAProgressThreadThatSleepsLong) {
    write_then_send(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(1800));
    posted_ = Clock::now();
    post_write();
    ASSERT_TRUE(quiet(10)) << "the write was not held";
    ASSERT_TRUE(frame(opendat::tcp::kWrite, kArrives));
    const long long ms = ms_since_post();
    std::printf("held after a quiet spell, it arrived after %lld ms (hold 30 ms)\n", ms);
    EXPECT_GE(ms, 25);
    EXPECT_LT(ms, kKernelPush * 3 / 4) << "the kernel sent it: the hold did not wake the thread";
}

class TcpCorkOff : public TcpCork {
  protected:
    void SetUp() override {
        ASSERT_EQ(setenv("DAT_TCP_CORK_WRITES", "off", 1), 0);
        TcpCork::SetUp();
    }
    void TearDown() override {
        TcpCork::TearDown();
        unsetenv("DAT_TCP_CORK_WRITES");
    }
};

TEST_F(TcpCorkOff, EveryWriteLeavesAtOnce) {
    write_then_send(5);
    post_write();
    EXPECT_TRUE(frame(opendat::tcp::kWrite, kPromptly)) << "held although turned off";
}

}  // namespace

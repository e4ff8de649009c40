// Batched transmit (DAT_TCP_TX_BATCH; docs/tcp-provider.md, "Transmit"): requests posted
// back to back are queued and leave together in one sendmsg, sent by whoever progresses
// next. What must still hold:
//  - every message of a burst arrives, in posting order, byte for byte, whatever its size,
//    sends and RDMA writes mixed; every request completes once, in order;
//  - a burst leaves even when the application then makes no DAT call at all (the progress
//    thread sends it), under adaptive and under sleeping progress;
//  - DAT_TCP_TX_BATCH=1 (a system call per frame) delivers the same.
// Two processes each: the parent posts, the child receives and checks.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"

using namespace dattest;

namespace {

constexpr int kSends = 200;  // within the default 256 receives and requests
constexpr int kWrites = 64;  // RDMA writes in the burst after the sends
constexpr std::size_t kSlot = 64;

std::size_t send_size(int i) {
    return 1 + static_cast<std::size_t>(i * 37) % kSlot;
}
unsigned char pattern(int i, std::size_t k) {
    return static_cast<unsigned char>(i * 7 + k + 1);
}

// The receiving child: posts a receive per message (and one for the closing send),
// connects, hands its RDMA target over, then checks every receive and every write.
int receiver(Channel &ch, int sends, int writes) {
    ch.child_side();
    DAT_CONN_QUAL qual = 0;
    CHILD_CHECK(ch.recv(&qual));
    Node c;
    Buffer in, target, last;
    CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
    CHILD_CHECK(c.reg(&in, kSlot * static_cast<std::size_t>(sends)) == DAT_SUCCESS);
    CHILD_CHECK(c.reg(&target, kSlot * static_cast<std::size_t>(writes > 0 ? writes : 1)) ==
                DAT_SUCCESS);
    CHILD_CHECK(c.reg(&last, 8) == DAT_SUCCESS);
    for (int i = 0; i < sends; ++i) {
        DAT_LMR_TRIPLET t = in.iov(static_cast<std::size_t>(i) * kSlot, kSlot);
        DAT_DTO_COOKIE ck;
        ck.as_64 = static_cast<DAT_UINT64>(i);
        CHILD_CHECK(dat_ep_post_recv(c.ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
    }
    DAT_LMR_TRIPLET t = last.iov(0, 8);
    DAT_DTO_COOKIE done_ck;
    done_ck.as_64 = 9999;
    CHILD_CHECK(dat_ep_post_recv(c.ep, 1, &t, done_ck, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
    DAT_EVENT_NUMBER outcome{};
    CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
    DAT_RMR_TRIPLET r = target.rmr();
    CHILD_CHECK(ch.send(r));
    // The sends, in posting order, each with its own size and bytes.
    for (int i = 0; i < sends; ++i) {
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.recv_evd, &ev) == DAT_SUCCESS);
        const auto &d = ev.event_data.dto_completion_event_data;
        CHILD_CHECK(d.status == DAT_DTO_SUCCESS);
        CHILD_CHECK(d.user_cookie.as_64 == static_cast<DAT_UINT64>(i));
        CHILD_CHECK(d.transfered_length == send_size(i));
        for (std::size_t k = 0; k < send_size(i); ++k)
            CHILD_CHECK(in.mem[static_cast<std::size_t>(i) * kSlot + k] == pattern(i, k));
    }
    // The closing send comes after the writes on the same connection: they are placed.
    DAT_EVENT ev;
    CHILD_CHECK(c.next(c.recv_evd, &ev) == DAT_SUCCESS);
    CHILD_CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 9999);
    sync_with_provider(c.ep);
    for (int w = 0; w < writes; ++w)
        for (std::size_t k = 0; k < kSlot; ++k)
            CHILD_CHECK(target.mem[static_cast<std::size_t>(w) * kSlot + k] ==
                        pattern(1000 + w, k));
    int verdict = 1;
    CHILD_CHECK(ch.send(verdict));
    int bye = 0;
    CHILD_CHECK(ch.recv(&bye));
    return 0;
}

class TxBatch : public ::testing::Test {
  protected:
    void TearDown() override {
        unsetenv("DAT_TCP_TX_BATCH");
        unsetenv("DAT_TCP_PROGRESS");
    }

    // Posts `sends` sends and then `writes` RDMA writes back to back, then the closing
    // send. With `away`, the parent then makes no DAT call until the child has checked
    // everything (only the progress thread can send what was queued).
    void run(int sends, int writes, bool away) {
        Channel ch;
        int pid = spawn([&] { return receiver(ch, sends, writes); });
        ch.parent_side();
        Node s;
        ASSERT_EQ(s.open(), DAT_SUCCESS);
        ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
        Buffer out, last;
        ASSERT_EQ(s.reg(&out, kSlot * static_cast<std::size_t>(sends + writes)), DAT_SUCCESS);
        ASSERT_EQ(s.reg(&last, 8), DAT_SUCCESS);
        DAT_CONN_QUAL qual = 0;
        ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
        ASSERT_TRUE(ch.send(qual));
        ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
        DAT_RMR_TRIPLET target{};
        ASSERT_TRUE(ch.recv(&target));
        for (int i = 0; i < sends; ++i)
            for (std::size_t k = 0; k < send_size(i); ++k)
                out.mem[static_cast<std::size_t>(i) * kSlot + k] = pattern(i, k);
        for (int w = 0; w < writes; ++w)
            for (std::size_t k = 0; k < kSlot; ++k)
                out.mem[static_cast<std::size_t>(sends + w) * kSlot + k] = pattern(1000 + w, k);

        // The burst: nothing in between the posts.
        for (int i = 0; i < sends; ++i) {
            DAT_LMR_TRIPLET t = out.iov(static_cast<std::size_t>(i) * kSlot, send_size(i));
            DAT_DTO_COOKIE ck;
            ck.as_64 = static_cast<DAT_UINT64>(i);
            ASSERT_EQ(dat_ep_post_send(s.ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
        }
        for (int w = 0; w < writes; ++w) {
            DAT_LMR_TRIPLET t = out.iov(static_cast<std::size_t>(sends + w) * kSlot, kSlot);
            DAT_RMR_TRIPLET r = target;
            r.virtual_address += static_cast<DAT_VADDR>(w) * kSlot;
            r.segment_length = kSlot;
            DAT_DTO_COOKIE ck;
            ck.as_64 = static_cast<DAT_UINT64>(sends + w);
            ASSERT_EQ(dat_ep_post_rdma_write(s.ep, 1, &t, ck, &r, DAT_COMPLETION_DEFAULT_FLAG),
                      DAT_SUCCESS);
        }
        DAT_LMR_TRIPLET t = last.iov(0, 8);
        DAT_DTO_COOKIE end_ck;
        end_ck.as_64 = 7777;
        ASSERT_EQ(dat_ep_post_send(s.ep, 1, &t, end_ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);

        int verdict = 0;
        if (away) {
            // No DAT call from here until the child has everything.
            ASSERT_TRUE(ch.recv(&verdict, 20000)) << "the burst did not leave on its own";
            EXPECT_EQ(verdict, 1);
        }
        // Every request completes once, in posting order.
        for (int i = 0; i < sends + writes + 1; ++i) {
            DAT_EVENT ev;
            ASSERT_EQ(s.next(s.req_evd, &ev), DAT_SUCCESS) << "completion " << i;
            const auto &d = ev.event_data.dto_completion_event_data;
            EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
            EXPECT_EQ(d.user_cookie.as_64,
                      i == sends + writes ? DAT_UINT64{7777} : static_cast<DAT_UINT64>(i));
        }
        if (!away) {
            ASSERT_TRUE(ch.recv(&verdict, 20000));
            EXPECT_EQ(verdict, 1);
        }
        ASSERT_TRUE(ch.send(0));
        EXPECT_EQ(reap(pid), 0);
    }
};

TEST_F(TxBatch, BurstArrivesInOrderAndIntact) {
    setenv("DAT_TCP_TX_BATCH", "64", 1);
    run(kSends, kWrites, false);
}

TEST_F(TxBatch, BurstLeavesWhileTheApplicationIsAway) {
    setenv("DAT_TCP_TX_BATCH", "64", 1);
    run(kSends, kWrites, true);
}

TEST_F(TxBatch, BurstLeavesUnderSleepingProgress) {
    setenv("DAT_TCP_TX_BATCH", "64", 1);
    setenv("DAT_TCP_PROGRESS", "sleep", 1);
    run(kSends, kWrites, true);
}

TEST_F(TxBatch, OneFramePerCallDeliversTheSame) {
    setenv("DAT_TCP_TX_BATCH", "1", 1);
    run(kSends, kWrites, true);
}

}  // namespace

// Shared receive queues (dat_srq_*, dat_ep_create_with_srq, dat_ep_recv_query), through the
// DAT API only, unchanged on every provider. An IA whose provider attributes say
// srq_supported false must also refuse dat_srq_create with DAT_MODEL_NOT_SUPPORTED and
// report max_srqs 0; the cases that need a queue are then UNSUPPORTED.
#include <dat2/dat_ib_extensions.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"

using namespace dattest;

namespace {

constexpr DAT_TIMEOUT kShort = 300'000;  // 0.3 s: "nothing arrives" windows

// Whether the IA offers shared receive queues, after checking that it says so
// consistently: attributes and dat_srq_create agree.
bool srq_supported(Node &n) {
    DAT_IA_ATTR ia_attr;
    alignas(DAT_PROVIDER_ATTR) unsigned char raw[sizeof(DAT_PROVIDER_ATTR)] = {};
    auto *pa = reinterpret_cast<DAT_PROVIDER_ATTR *>(raw);
    EXPECT_EQ(dat_ia_query(n.ia, nullptr, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, pa),
              DAT_SUCCESS);
    if (pa->srq_supported == DAT_TRUE) {
        EXPECT_GT(ia_attr.max_srqs, 0);
        EXPECT_GT(ia_attr.max_recv_per_srq, 0);
        return true;
    }
    EXPECT_EQ(ia_attr.max_srqs, 0);
    DAT_SRQ_ATTR a{4, 1, 0};
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    EXPECT_EQ(DAT_GET_TYPE(dat_srq_create(n.ia, n.pz, &a, &srq)), DAT_MODEL_NOT_SUPPORTED);
    return false;
}

// Orders this thread after the provider's placement of a received message (a call that
// takes the endpoint's lock), as the other cases do before reading received memory.
void settle(DAT_EP_HANDLE ep) {
    DAT_EP_STATE st;
    dat_ep_get_status(ep, &st, nullptr, nullptr);
}

DAT_SRQ_PARAM query(DAT_SRQ_HANDLE srq) {
    DAT_SRQ_PARAM p{};
    EXPECT_EQ(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p), DAT_SUCCESS);
    return p;
}

DAT_RETURN post(DAT_SRQ_HANDLE srq, const Buffer &b, std::size_t off, std::size_t len,
                std::uint64_t cookie) {
    DAT_LMR_TRIPLET iov = b.iov(off, len);
    DAT_DTO_COOKIE ck;
    ck.as_64 = cookie;
    return dat_srq_post_recv(srq, 1, &iov, ck);
}

}  // namespace

// Create, post, query, resize, set the low watermark, attach an EP, refuse to free while
// in use; dat_ep_recv_query on an EP's own receives. No connection needed.
TEST(ConformanceSrq, QueryResizeLowWatermarkAndFree) {
    Node n;
    ASSERT_EQ(n.open(), DAT_SUCCESS);
    if (!srq_supported(n)) SKIP_UNSUPPORTED("no shared receive queues (srq_supported is false)");
    Buffer b;
    ASSERT_EQ(n.reg(&b, 4096), DAT_SUCCESS);

    DAT_SRQ_ATTR bad{0, 1, 0};
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    EXPECT_EQ(DAT_GET_TYPE(dat_srq_create(n.ia, n.pz, &bad, &srq)), DAT_INVALID_PARAMETER);
    bad = {4, 1, 5};  // a low watermark above the queue's size
    EXPECT_EQ(DAT_GET_TYPE(dat_srq_create(n.ia, n.pz, &bad, &srq)), DAT_INVALID_PARAMETER);
    EXPECT_EQ(DAT_GET_TYPE(dat_srq_create(n.ia, DAT_HANDLE_NULL, &bad, &srq)), DAT_INVALID_HANDLE);

    DAT_SRQ_ATTR a{4, 2, 0};
    ASSERT_EQ(dat_srq_create(n.ia, n.pz, &a, &srq), DAT_SUCCESS);
    DAT_SRQ_PARAM p = query(srq);
    EXPECT_EQ(p.ia_handle, n.ia);
    EXPECT_EQ(p.srq_state, DAT_SRQ_STATE_OPERATIONAL);
    EXPECT_EQ(p.pz_handle, n.pz);
    EXPECT_EQ(p.max_recv_dtos, 4);
    EXPECT_EQ(p.max_recv_iov, 2);
    EXPECT_EQ(p.low_watermark, 0);
    EXPECT_EQ(p.available_dto_count, 0);
    EXPECT_EQ(p.outstanding_dto_count, 0);

    for (int i = 0; i < 3; ++i) ASSERT_EQ(post(srq, b, 256 * i, 256, i), DAT_SUCCESS);
    p = query(srq);
    EXPECT_EQ(p.available_dto_count, 3);
    EXPECT_EQ(p.outstanding_dto_count, 3);
    ASSERT_EQ(post(srq, b, 768, 256, 3), DAT_SUCCESS);
    EXPECT_EQ(DAT_GET_TYPE(post(srq, b, 1024, 256, 4)), DAT_INSUFFICIENT_RESOURCES);  // full
    DAT_LMR_TRIPLET three[3] = {b.iov(0, 8), b.iov(8, 8), b.iov(16, 8)};
    DAT_DTO_COOKIE ck{};
    EXPECT_NE(dat_srq_post_recv(srq, 3, three, ck), DAT_SUCCESS);  // more than max_recv_iov

    // Resize: not below what is posted; growing keeps it.
    EXPECT_EQ(DAT_GET_TYPE(dat_srq_resize(srq, 2)), DAT_INVALID_PARAMETER);
    ASSERT_EQ(dat_srq_resize(srq, 8), DAT_SUCCESS);
    p = query(srq);
    EXPECT_EQ(p.max_recv_dtos, 8);
    EXPECT_EQ(p.available_dto_count, 4);
    ASSERT_EQ(post(srq, b, 1024, 256, 4), DAT_SUCCESS);
    EXPECT_EQ(query(srq).available_dto_count, 5);

    // The low watermark: within the queue's size only.
    EXPECT_EQ(DAT_GET_TYPE(dat_srq_set_lw(srq, 9)), DAT_INVALID_PARAMETER);
    ASSERT_EQ(dat_srq_set_lw(srq, 2), DAT_SUCCESS);
    EXPECT_EQ(query(srq).low_watermark, 2);

    // An EP taking its receives from the SRQ: the SRQ cannot go while the EP exists, and
    // the EP's own receive queue is not used.
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    ASSERT_EQ(
        dat_ep_create_with_srq(n.ia, n.pz, n.recv_evd, n.req_evd, n.conn_evd, srq, nullptr, &ep),
        DAT_SUCCESS);
    DAT_EP_PARAM ep_param;
    ASSERT_EQ(dat_ep_query(ep, DAT_EP_FIELD_ALL, &ep_param), DAT_SUCCESS);
    EXPECT_EQ(ep_param.srq_handle, srq);
    DAT_RETURN rc = dat_srq_free(srq);
    EXPECT_EQ(DAT_GET_TYPE(rc), DAT_INVALID_STATE);
    EXPECT_EQ(DAT_GET_SUBTYPE(rc), DAT_INVALID_STATE_SRQ_IN_USE);
    DAT_LMR_TRIPLET one = b.iov(0, 64);
    EXPECT_NE(dat_ep_post_recv(ep, 1, &one, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    DAT_COUNT nbufs = -1, span = -1;
    ASSERT_EQ(dat_ep_recv_query(ep, &nbufs, &span), DAT_SUCCESS);
    EXPECT_EQ(nbufs, 0);  // holds none of the SRQ's receives while nothing arrives
    ASSERT_EQ(dat_ep_free(ep), DAT_SUCCESS);

    // dat_ep_recv_query on an EP with its own receives: how many and the bytes they span.
    ASSERT_EQ(n.make_ep(), DAT_SUCCESS);
    DAT_LMR_TRIPLET r1 = b.iov(2048, 100), r2 = b.iov(3072, 200);
    ASSERT_EQ(dat_ep_post_recv(n.ep, 1, &r1, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_post_recv(n.ep, 1, &r2, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_recv_query(n.ep, &nbufs, &span), DAT_SUCCESS);
    EXPECT_EQ(nbufs, 2);
    EXPECT_EQ(span, 300);

    ASSERT_EQ(dat_srq_free(srq), DAT_SUCCESS);
    EXPECT_EQ(DAT_GET_TYPE(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &p)), DAT_INVALID_HANDLE);
    EXPECT_EQ(DAT_GET_TYPE(dat_srq_free(n.ep)), DAT_INVALID_HANDLE);  // not an SRQ
}

// Three connections share an SRQ holding two receives. Two messages land, the third waits
// (receiver not ready: no loss, no error) until a receive is posted; each completion
// carries the endpoint it arrived on. Taking a receive below the low watermark raises one
// asynchronous event with the SRQ's handle, re-armed by dat_srq_set_lw.
TEST(ConformanceSrq, MoreEndpointsThanReceivesAndLowWatermark) {
    constexpr int kConns = 3;
    constexpr std::size_t kMsg = 100;
    {
        Node probe;
        ASSERT_EQ(probe.open(), DAT_SUCCESS);
        if (!srq_supported(probe))
            SKIP_UNSUPPORTED("no shared receive queues (srq_supported is false)");
    }
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        std::vector<Buffer> bufs(kConns);  // outlives the nodes, whose LMRs name them
        std::vector<Node> nodes(kConns);
        DAT_CONN_QUAL qual;
        CHILD_CHECK(ch.recv(&qual));
        for (int i = 0; i < kConns; ++i) {
            CHILD_CHECK(nodes[i].open() == DAT_SUCCESS && nodes[i].make_ep() == DAT_SUCCESS);
            CHILD_CHECK(nodes[i].reg(&bufs[i], kMsg) == DAT_SUCCESS);
            std::memset(bufs[i].mem.data(), 'a' + i, kMsg);
            DAT_EVENT_NUMBER outcome;
            CHILD_CHECK(nodes[i].connect(qual, &outcome) == DAT_SUCCESS &&
                        outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        }
        auto send = [&](int i, std::uint64_t cookie) {
            DAT_LMR_TRIPLET iov = bufs[i].iov();
            DAT_DTO_COOKIE ck;
            ck.as_64 = cookie;
            return dat_ep_post_send(nodes[i].ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG);
        };
        for (int i = 0; i < kConns; ++i) CHILD_CHECK(send(i, i) == DAT_SUCCESS);
        for (int i = 0; i < kConns; ++i) {
            DAT_EVENT ev;
            CHILD_CHECK(nodes[i].next(nodes[i].req_evd, &ev) == DAT_SUCCESS);
            CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        }
        int go = 0;
        CHILD_CHECK(ch.recv(&go));  // the parent re-armed the low watermark
        CHILD_CHECK(send(0, 10) == DAT_SUCCESS);
        DAT_EVENT ev;
        CHILD_CHECK(nodes[0].next(nodes[0].req_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ch.recv(&go));  // done
        for (int i = 0; i < kConns; ++i) {
            DAT_EVENT_NUMBER disc;
            CHILD_CHECK(nodes[i].disconnect_and_wait(DAT_CLOSE_GRACEFUL_FLAG, &disc) ==
                        DAT_SUCCESS);
        }
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    Buffer b;
    ASSERT_EQ(s.reg(&b, 8 * kMsg), DAT_SUCCESS);
    DAT_SRQ_ATTR a{8, 1, 0};
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_srq_create(s.ia, s.pz, &a, &srq), DAT_SUCCESS);
    ASSERT_EQ(post(srq, b, 0, kMsg, 0), DAT_SUCCESS);
    ASSERT_EQ(post(srq, b, kMsg, kMsg, 1), DAT_SUCCESS);
    ASSERT_EQ(dat_srq_set_lw(srq, 2), DAT_SUCCESS);  // the first receive taken leaves 1 < 2

    DAT_EP_HANDLE eps[kConns];
    for (auto &ep : eps)
        ASSERT_EQ(dat_ep_create_with_srq(s.ia, s.pz, s.recv_evd, s.req_evd, s.conn_evd, srq,
                                         nullptr, &ep),
                  DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    DAT_EVENT ev;
    for (auto &ep : eps) {
        ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
        ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
        ASSERT_EQ(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, 0, nullptr),
                  DAT_SUCCESS);
        ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
        ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    }

    // Two of the three messages land; the endpoint each came through is in its completion
    // and its content says which peer sent it (peer i is connected to eps[i]).
    std::set<DAT_EP_HANDLE> seen;
    auto check_receive = [&](const DAT_EVENT &e) {
        ASSERT_EQ(e.event_number, DAT_DTO_COMPLETION_EVENT);
        const auto &d = e.event_data.dto_completion_event_data;
        EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
        EXPECT_EQ(d.operation, DAT_DTO_RECEIVE);
        EXPECT_EQ(d.transfered_length, kMsg);
        int peer = -1;
        for (int i = 0; i < kConns; ++i)
            if (d.ep_handle == eps[i]) peer = i;
        ASSERT_GE(peer, 0) << "completion names no endpoint of the SRQ";
        settle(d.ep_handle);
        const unsigned char *msg = &b.mem[d.user_cookie.as_64 * kMsg];
        EXPECT_EQ(msg[0], 'a' + peer);
        EXPECT_EQ(msg[kMsg - 1], 'a' + peer);
        seen.insert(d.ep_handle);
    };
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
        check_receive(ev);
    }
    // The low watermark fired once, naming the SRQ.
    ASSERT_EQ(s.next(s.async_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, srq);
    EXPECT_EQ(ev.event_data.asynch_error_event_data.reason, DAT_SRQ_LOW_WATERMARK_EVENT);
    EXPECT_EQ(DAT_GET_TYPE(s.next(s.async_evd, &ev, kShort)), DAT_TIMEOUT_EXPIRED);

    // Receiver not ready: the third message waits, nothing is lost or failed.
    EXPECT_EQ(DAT_GET_TYPE(s.next(s.recv_evd, &ev, kShort)), DAT_TIMEOUT_EXPIRED);
    DAT_SRQ_PARAM p = query(srq);
    EXPECT_EQ(p.available_dto_count, 0);
    EXPECT_EQ(p.outstanding_dto_count, 0);
    ASSERT_EQ(post(srq, b, 2 * kMsg, kMsg, 2), DAT_SUCCESS);
    ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
    check_receive(ev);
    EXPECT_EQ(seen.size(), 3u);  // one message through each endpoint
    // Taking the last receive (0 left) did not raise the event again: it was disarmed.
    EXPECT_EQ(DAT_GET_TYPE(s.next(s.async_evd, &ev, kShort)), DAT_TIMEOUT_EXPIRED);

    // dat_srq_set_lw re-arms it.
    ASSERT_EQ(post(srq, b, 3 * kMsg, kMsg, 3), DAT_SUCCESS);
    ASSERT_EQ(dat_srq_set_lw(srq, 1), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(1));
    ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
    check_receive(ev);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.ep_handle, eps[0]);
    ASSERT_EQ(s.next(s.async_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.asynch_error_event_data.dat_handle, srq);
    EXPECT_EQ(ev.event_data.asynch_error_event_data.reason, DAT_SRQ_LOW_WATERMARK_EVENT);

    DAT_COUNT nbufs = -1, span = -1;
    ASSERT_EQ(dat_ep_recv_query(eps[0], &nbufs, &span), DAT_SUCCESS);
    EXPECT_EQ(nbufs, 0);  // its receives completed

    ASSERT_TRUE(ch.send(2));
    for (int i = 0; i < kConns; ++i) {
        ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
        EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    }
    EXPECT_EQ(reap(pid), 0);
    EXPECT_EQ(DAT_GET_TYPE(dat_srq_free(srq)), DAT_INVALID_STATE);
    for (auto ep : eps) ASSERT_EQ(dat_ep_free(ep), DAT_SUCCESS);
    ASSERT_EQ(dat_srq_free(srq), DAT_SUCCESS);
}

// A receive taken from an SRQ completes while nobody dequeues it; the EP and then the SRQ
// are freed, and a new SRQ is made. The left completion is dropped when the EVD is next
// polled, and it must not count against the SRQ made since (nor touch the freed one).
TEST(ConformanceSrq, CompletionLeftAfterEpAndSrqFree) {
    constexpr std::size_t kMsg = 64;
    {
        Node probe;
        ASSERT_EQ(probe.open(), DAT_SUCCESS);
        if (!srq_supported(probe))
            SKIP_UNSUPPORTED("no shared receive queues (srq_supported is false)");
    }
    Channel ch;
    int pid = spawn([&] {
        Node c;
        Buffer b;
        CHILD_CHECK(child_connects(ch, c, &b, kMsg));
        DAT_LMR_TRIPLET iov = b.iov();
        DAT_DTO_COOKIE ck;
        ck.as_64 = 1;
        CHILD_CHECK(dat_ep_post_send(c.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG) ==
                    DAT_SUCCESS);
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        CHILD_CHECK(ch.send(1));  // delivered (acknowledged): its receive has completed
        int bye = 0;
        CHILD_CHECK(ch.recv(&bye));
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    Buffer b;
    ASSERT_EQ(s.reg(&b, 4 * kMsg), DAT_SUCCESS);
    DAT_SRQ_ATTR a{4, 1, 0};
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_srq_create(s.ia, s.pz, &a, &srq), DAT_SUCCESS);
    ASSERT_EQ(post(srq, b, 0, kMsg, 0), DAT_SUCCESS);
    ASSERT_EQ(
        dat_ep_create_with_srq(s.ia, s.pz, s.recv_evd, s.req_evd, s.conn_evd, srq, nullptr, &s.ep),
        DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    int sent = 0;
    ASSERT_TRUE(ch.recv(&sent));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the CQ entry is written
    ASSERT_EQ(dat_ep_free(s.ep), DAT_SUCCESS);
    s.ep = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_srq_free(srq), DAT_SUCCESS);
    // A new SRQ, right away (its memory may well be the freed one's).
    DAT_SRQ_HANDLE again = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_srq_create(s.ia, s.pz, &a, &again), DAT_SUCCESS);
    ASSERT_EQ(post(again, b, kMsg, kMsg, 10), DAT_SUCCESS);
    ASSERT_EQ(post(again, b, 2 * kMsg, kMsg, 11), DAT_SUCCESS);
    DAT_EVENT ev;
    while (s.next(s.recv_evd, &ev, kShort) == DAT_SUCCESS) {
        // Only a flush of the freed EP's receive may still be reported, never one of `again`.
        EXPECT_NE(ev.event_data.dto_completion_event_data.user_cookie.as_64, 10u);
        EXPECT_NE(ev.event_data.dto_completion_event_data.user_cookie.as_64, 11u);
    }
    DAT_SRQ_PARAM p = query(again);
    EXPECT_EQ(p.available_dto_count, 2);
    EXPECT_EQ(p.outstanding_dto_count, 2);  // posted, none taken
    ASSERT_TRUE(ch.send(0));
    EXPECT_EQ(reap(pid), 0);
    ASSERT_EQ(dat_srq_free(again), DAT_SUCCESS);
}

// A write with immediate data consumes a receive like a SEND does: on an endpoint of an
// SRQ, one of the SRQ's (it waited for a receive of the endpoint's own before, forever).
TEST(ConformanceSrq, WriteWithImmediateTakesAnSrqReceive) {
    {
        Node probe;
        ASSERT_EQ(probe.open(), DAT_SUCCESS);
        if (!srq_supported(probe))
            SKIP_UNSUPPORTED("no shared receive queues (srq_supported is false)");
        DAT_IA_ATTR ia_attr;
        ASSERT_EQ(dat_ia_query(probe.ia, nullptr, DAT_IA_FIELD_ALL, &ia_attr, 0, nullptr),
                  DAT_SUCCESS);
        if (ia_attr.extension_supported != DAT_EXTENSION_IB)
            SKIP_UNSUPPORTED("no IB extensions (write with immediate)");
    }
    constexpr std::size_t kLen = 64;
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        Buffer src;
        Node c;
        DAT_CONN_QUAL qual;
        DAT_RMR_TRIPLET target{};
        CHILD_CHECK(ch.recv(&qual) && ch.recv(&target));
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        CHILD_CHECK(c.reg(&src, kLen) == DAT_SUCCESS);
        std::memset(src.mem.data(), 'w', kLen);
        DAT_EVENT_NUMBER outcome;
        CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                    outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        DAT_LMR_TRIPLET l = src.iov();
        DAT_DTO_COOKIE ck;
        ck.as_64 = 7;
        CHILD_CHECK(dat_ib_post_rdma_write_immed(c.ep, 1, &l, ck, &target, 0x5151u,
                                                 DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        int done = 0;
        CHILD_CHECK(ch.recv(&done));
        DAT_EVENT_NUMBER disc;
        CHILD_CHECK(c.disconnect_and_wait(DAT_CLOSE_GRACEFUL_FLAG, &disc) == DAT_SUCCESS);
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    Buffer rbuf, target;
    ASSERT_EQ(s.reg(&rbuf, kLen), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&target, kLen), DAT_SUCCESS);
    DAT_SRQ_ATTR a{4, 1, 0};
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_srq_create(s.ia, s.pz, &a, &srq), DAT_SUCCESS);
    ASSERT_EQ(post(srq, rbuf, 0, kLen, 3), DAT_SUCCESS);
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    ASSERT_EQ(
        dat_ep_create_with_srq(s.ia, s.pz, s.recv_evd, s.req_evd, s.conn_evd, srq, nullptr, &ep),
        DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual) && ch.send(target.rmr()));
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, 0, nullptr),
              DAT_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, static_cast<DAT_EVENT_NUMBER>(DAT_IB_DTO_EVENT));
    const auto &d = ev.event_data.dto_completion_event_data;
    EXPECT_EQ(d.ep_handle, ep);
    EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(d.user_cookie.as_64, 3u);
    const auto &x = *reinterpret_cast<const DAT_IB_EXTENSION_EVENT_DATA *>(ev.event_extension_data);
    EXPECT_EQ(x.type, DAT_IB_RDMA_WRITE_IMMED_DATA);
    EXPECT_EQ(x.val.immed.data, 0x5151u);
    sync_with_provider(ep);
    EXPECT_EQ(target.mem[0], 'w');
    EXPECT_EQ(target.mem[kLen - 1], 'w');
    // The receive went back to the SRQ's count of completed work.
    DAT_SRQ_PARAM p = query(srq);
    EXPECT_EQ(p.available_dto_count, 0);
    EXPECT_EQ(p.outstanding_dto_count, 0);
    ASSERT_TRUE(ch.send(1));
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    EXPECT_EQ(reap(pid), 0);
    ASSERT_EQ(dat_ep_free(ep), DAT_SUCCESS);
    ASSERT_EQ(dat_srq_free(srq), DAT_SUCCESS);
}

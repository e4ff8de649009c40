// Conformance cases for the smaller parts of the DAT base API that portable programs use:
// dat_lmr_sync_rdma_read/write, dat_ep_modify, the completion flags a provider advertises,
// dat_ep_dup_connect and QoS. Provider-neutral like conformance_test.cpp: what a provider
// does not offer (its attributes say so) is reported UNSUPPORTED with the reason.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <dat2/dat_trace.h>

#include "dat_fixture.hpp"

using namespace dattest;

namespace {

// DAT_PROVIDER_ATTR has a const member: not default-constructible in C++.
struct ProviderAttr {
    alignas(DAT_PROVIDER_ATTR) unsigned char storage[sizeof(DAT_PROVIDER_ATTR)] = {};
    DAT_PROVIDER_ATTR &get() { return *reinterpret_cast<DAT_PROVIDER_ATTR *>(storage); }
};

DAT_RETURN query(DAT_IA_HANDLE ia, DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR *pa) {
    return dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, ia_attr, DAT_PROVIDER_FIELD_ALL, pa);
}

DAT_COMPLETION_FLAGS supported_completion_flags() {
    Node n;
    if (n.open() != DAT_SUCCESS) return DAT_COMPLETION_DEFAULT_FLAG;
    DAT_IA_ATTR ia_attr;
    ProviderAttr pa;
    if (query(n.ia, &ia_attr, &pa.get()) != DAT_SUCCESS) return DAT_COMPLETION_DEFAULT_FLAG;
    return pa.get().completion_flags_supported;
}

bool is_error(DAT_RETURN rc, DAT_RETURN type, DAT_RETURN subtype = DAT_NO_SUBTYPE) {
    return DAT_GET_TYPE(rc) == type &&
           (subtype == DAT_NO_SUBTYPE || DAT_GET_SUBTYPE(rc) == subtype);
}

DAT_EP_PARAM ep_param(DAT_EP_HANDLE ep) {
    DAT_EP_PARAM p{};
    dat_ep_query(ep, DAT_EP_FIELD_ALL, &p);
    return p;
}

sockaddr_in peer_sockaddr() {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = peer_address();
    return sin;
}

}  // namespace

// Our providers' memory is cache-coherent with the transport: the sync calls succeed and
// lmr_sync_req says a consumer need not make them. Bad arguments still get their codes.
TEST(ConformanceGaps, LmrSyncSucceedsOnCoherentMemory) {
    Node n;
    ASSERT_EQ(n.open(), DAT_SUCCESS);
    DAT_IA_ATTR ia_attr;
    ProviderAttr pa;
    ASSERT_EQ(query(n.ia, &ia_attr, &pa.get()), DAT_SUCCESS);
    EXPECT_EQ(pa.get().lmr_sync_req, DAT_FALSE);
    Buffer b;
    ASSERT_EQ(n.reg(&b, 8192), DAT_SUCCESS);
    DAT_LMR_TRIPLET segs[2] = {b.iov(0, 4096), b.iov(4096, 4096)};
    EXPECT_EQ(dat_lmr_sync_rdma_read(n.ia, segs, 2), DAT_SUCCESS);
    EXPECT_EQ(dat_lmr_sync_rdma_write(n.ia, segs, 2), DAT_SUCCESS);
    EXPECT_EQ(dat_lmr_sync_rdma_read(n.ia, segs, 0), DAT_SUCCESS);
    EXPECT_TRUE(is_error(dat_lmr_sync_rdma_read(n.ia, nullptr, 1), DAT_INVALID_PARAMETER,
                         DAT_INVALID_ARG2));
    EXPECT_TRUE(is_error(dat_lmr_sync_rdma_write(n.ia, nullptr, 1), DAT_INVALID_PARAMETER,
                         DAT_INVALID_ARG2));
    // libdat2 refuses an IA handle it does not know before the provider sees it.
    EXPECT_EQ(dat_lmr_sync_rdma_read(DAT_HANDLE_NULL, segs, 1),
              static_cast<DAT_RETURN>(0x8005000b));
}

// What never changes is refused as a bad argument 2; values beyond the IA's limits as a
// bad argument 3; nothing changes on either.
TEST(ConformanceGaps, EpModifyRefusesWhatCannotChange) {
    Node n;
    ASSERT_EQ(n.open(), DAT_SUCCESS);
    ASSERT_EQ(n.make_ep(), DAT_SUCCESS);
    DAT_IA_ATTR ia_attr;
    ProviderAttr pa;
    ASSERT_EQ(query(n.ia, &ia_attr, &pa.get()), DAT_SUCCESS);
    const DAT_EP_PARAM before = ep_param(n.ep);
    DAT_EP_PARAM p = before;
    for (DAT_EP_PARAM_MASK fixed :
         {DAT_EP_FIELD_IA_HANDLE, DAT_EP_FIELD_EP_STATE, DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR,
          DAT_EP_FIELD_LOCAL_PORT_QUAL, DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR,
          DAT_EP_FIELD_REMOTE_PORT_QUAL, DAT_EP_FIELD_SRQ_HANDLE,
          DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW}) {
        EXPECT_TRUE(is_error(dat_ep_modify(n.ep, fixed | DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, &p),
                             DAT_INVALID_PARAMETER, DAT_INVALID_ARG2))
            << std::hex << fixed;
    }
    EXPECT_TRUE(is_error(dat_ep_modify(n.ep, DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, nullptr),
                         DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
    p.ep_attr.max_recv_dtos = ia_attr.max_dto_per_ep + 1;
    EXPECT_TRUE(is_error(dat_ep_modify(n.ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p),
                         DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
    p = before;
    p.ep_attr.max_request_iov = ia_attr.max_iov_segments_per_dto + 1;
    EXPECT_TRUE(is_error(dat_ep_modify(n.ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, &p),
                         DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
    p = before;
    p.ep_attr.service_type = static_cast<DAT_SERVICE_TYPE>(0x7777);
    EXPECT_TRUE(is_error(dat_ep_modify(n.ep, DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE, &p),
                         DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
    p = before;
    p.ep_attr.request_completion_flags = static_cast<DAT_COMPLETION_FLAGS>(0x4000);  // no flag
    EXPECT_TRUE(is_error(dat_ep_modify(n.ep, DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS, &p),
                         DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
    p = before;
    p.recv_evd_handle = n.pz;  // not an EVD
    EXPECT_EQ(DAT_GET_TYPE(dat_ep_modify(n.ep, DAT_EP_FIELD_RECV_EVD_HANDLE, &p)),
              DAT_INVALID_HANDLE);
    const DAT_EP_PARAM after = ep_param(n.ep);
    EXPECT_EQ(after.recv_evd_handle, before.recv_evd_handle);
    EXPECT_EQ(after.ep_attr.max_recv_dtos, before.ep_attr.max_recv_dtos);
    EXPECT_EQ(after.ep_attr.max_request_iov, before.ep_attr.max_request_iov);
}

// The attributes that only the DAT layer uses change on every provider before a connection,
// and dat_ep_query reports the new values.
TEST(ConformanceGaps, EpModifyAttributesBeforeConnecting) {
    Node n;
    ASSERT_EQ(n.open(), DAT_SUCCESS);
    ASSERT_EQ(n.make_ep(), DAT_SUCCESS);
    DAT_EP_PARAM p = ep_param(n.ep);
    p.ep_attr.max_message_size = 4096;
    p.ep_attr.max_rdma_size = 8192;
    p.ep_attr.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    p.ep_attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    p.ep_attr.qos = DAT_QOS_BEST_EFFORT;
    ASSERT_EQ(
        dat_ep_modify(n.ep,
                      DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE | DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE |
                          DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS |
                          DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS | DAT_EP_FIELD_EP_ATTR_QOS,
                      &p),
        DAT_SUCCESS);
    DAT_EP_PARAM q = ep_param(n.ep);
    EXPECT_EQ(q.ep_attr.max_message_size, 4096u);
    // Capped at the IA's (0 on a provider without RDMA).
    EXPECT_EQ(q.ep_attr.max_rdma_size, traits().rdma ? 8192u : 0u);
    EXPECT_EQ(q.ep_attr.request_completion_flags, DAT_COMPLETION_UNSIGNALLED_FLAG);
    EXPECT_EQ(q.ep_state, DAT_EP_STATE_UNCONNECTED);
}

// Queue sizes: a larger receive queue takes more receives, a smaller one refuses the
// receive beyond it, and receives already posted survive the change.
TEST(ConformanceGaps, EpModifyQueueSizesTakeEffect) {
    Node n;
    ASSERT_EQ(n.open(), DAT_SUCCESS);
    DAT_EP_ATTR attr{};
    attr.service_type = DAT_SERVICE_TYPE_RC;
    attr.max_recv_dtos = 2;
    attr.max_request_dtos = 2;
    attr.max_recv_iov = 1;
    attr.max_request_iov = 1;
    ASSERT_EQ(n.make_ep(&attr), DAT_SUCCESS);
    Buffer b;
    ASSERT_EQ(n.reg(&b, 4096), DAT_SUCCESS);
    DAT_LMR_TRIPLET iov = b.iov(0, 64);
    DAT_DTO_COOKIE ck{};
    ASSERT_EQ(dat_ep_post_recv(n.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    DAT_EP_PARAM p = ep_param(n.ep);
    p.ep_attr.max_recv_dtos = 6;
    p.ep_attr.max_recv_iov = 3;
    DAT_RETURN rc = dat_ep_modify(
        n.ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS | DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV, &p);
    if (DAT_GET_TYPE(rc) == DAT_MODEL_NOT_SUPPORTED)
        SKIP_UNSUPPORTED(
            "queue sizes cannot change while a receive is posted (a device queue pair)");
    ASSERT_EQ(rc, DAT_SUCCESS);
    DAT_EP_PARAM q = ep_param(n.ep);
    EXPECT_EQ(q.ep_attr.max_recv_dtos, 6);
    EXPECT_EQ(q.ep_attr.max_recv_iov, 3);
    // Three segments are now allowed; five receives join the one posted before.
    DAT_LMR_TRIPLET three[3] = {b.iov(0, 8), b.iov(8, 8), b.iov(16, 8)};
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(dat_ep_post_recv(n.ep, 3, three, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS)
            << i;
    EXPECT_EQ(DAT_GET_TYPE(dat_ep_post_recv(n.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG)),
              DAT_INSUFFICIENT_RESOURCES);
    // Six are posted: a queue of four cannot hold them.
    p.ep_attr.max_recv_dtos = 4;
    EXPECT_EQ(DAT_GET_TYPE(dat_ep_modify(n.ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p)),
              DAT_INVALID_STATE);
    EXPECT_EQ(ep_param(n.ep).ep_attr.max_recv_dtos, 6);
}

// EVDs move: after dat_ep_modify the EP's completions arrive on the new EVDs, the old
// ones are free to go and the new ones are in use. Once connected, only the
// provider-specific attributes change (DAT_INVALID_STATE for the rest).
TEST(ConformanceGaps, EpModifyMovesEvds) {
    Channel ch;
    int pid = spawn([&] {
        Node c;
        Buffer b;
        CHILD_CHECK(child_connects(ch, c, &b, 256));
        DAT_LMR_TRIPLET iov = b.iov(0, 100);
        DAT_DTO_COOKIE ck;
        ck.as_64 = 5;
        CHILD_CHECK(dat_ep_post_send(c.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG) ==
                    DAT_SUCCESS);
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        int done;
        CHILD_CHECK(ch.recv(&done));
        return 0;
    });
    ch.parent_side();
    Node s;
    Buffer b;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&b, 256), DAT_SUCCESS);
    DAT_EVD_HANDLE recv2 = DAT_HANDLE_NULL, conn2 = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_evd_create(s.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv2), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(s.ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn2),
              DAT_SUCCESS);
    DAT_EP_PARAM p{};
    p.recv_evd_handle = recv2;
    p.connect_evd_handle = conn2;
    DAT_RETURN rc =
        dat_ep_modify(s.ep, DAT_EP_FIELD_RECV_EVD_HANDLE | DAT_EP_FIELD_CONNECT_EVD_HANDLE, &p);
    if (DAT_GET_TYPE(rc) == DAT_MODEL_NOT_SUPPORTED) {
        kill(pid, SIGKILL);  // it waits for a qualifier that will not come
        reap(pid);
        dat_evd_free(recv2);
        dat_evd_free(conn2);
        SKIP_UNSUPPORTED("EVDs are bound to the endpoint's queues when it is created");
    }
    ASSERT_EQ(rc, DAT_SUCCESS);
    DAT_EP_PARAM q = ep_param(s.ep);
    EXPECT_EQ(q.recv_evd_handle, recv2);
    EXPECT_EQ(q.connect_evd_handle, conn2);
    // Use counts moved with them.
    EXPECT_EQ(DAT_GET_TYPE(dat_evd_free(recv2)), DAT_INVALID_STATE);
    ASSERT_EQ(dat_evd_free(s.recv_evd), DAT_SUCCESS);
    s.recv_evd = DAT_HANDLE_NULL;
    DAT_LMR_TRIPLET iov = b.iov();
    DAT_DTO_COOKIE ck;
    ck.as_64 = 9;
    ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, s.ep, 0, nullptr),
              DAT_SUCCESS);
    ASSERT_EQ(s.next(conn2, &ev), DAT_SUCCESS);  // the connection event on the new EVD
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    ASSERT_EQ(s.next(recv2, &ev), DAT_SUCCESS);  // and the receive
    EXPECT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 9u);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length, 100u);
    EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(s.conn_evd, &ev)), DAT_QUEUE_EMPTY);
    // Connected: the queues and EVDs stay as they are; delayed_ack may still change.
    q.ep_attr.max_message_size = 1024;
    EXPECT_TRUE(is_error(dat_ep_modify(s.ep, DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, &q),
                         DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED));
    q.recv_evd_handle = DAT_HANDLE_NULL;
    EXPECT_EQ(DAT_GET_TYPE(dat_ep_modify(s.ep, DAT_EP_FIELD_RECV_EVD_HANDLE, &q)),
              DAT_INVALID_STATE);
    DAT_NAMED_ATTR na{DAT_EP_ATTR_DELAYED_ACK, "false"};
    DAT_EP_PARAM d{};
    d.ep_attr.ep_provider_specific_count = 1;
    d.ep_attr.ep_provider_specific = &na;
    EXPECT_EQ(dat_ep_modify(s.ep, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, &d), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(1));
    EXPECT_EQ(reap(pid), 0);
    // The EP goes before the EVDs it uses.
    ASSERT_EQ(dat_ep_free(s.ep), DAT_SUCCESS);
    s.ep = DAT_HANDLE_NULL;
    EXPECT_EQ(dat_evd_free(recv2), DAT_SUCCESS);
    EXPECT_EQ(dat_evd_free(conn2), DAT_SUCCESS);
}

// DAT_COMPLETION_SUPPRESS_FLAG: a suppressed request that succeeds posts no event; one
// that fails does, with its error.
TEST(ConformanceGaps, SuppressedCompletionsOnlyForErrors) {
    if (!(supported_completion_flags() & DAT_COMPLETION_SUPPRESS_FLAG))
        SKIP_UNSUPPORTED("completion_flags_supported lacks DAT_COMPLETION_SUPPRESS_FLAG");
    if (!traits().rdma) SKIP_UNSUPPORTED("no RDMA (max_rdma_size is 0)");
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        Node c;
        Buffer b;
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        CHILD_CHECK(c.reg(&b, 4096) == DAT_SUCCESS);
        DAT_CONN_QUAL qual;
        DAT_RMR_TRIPLET target;
        CHILD_CHECK(ch.recv(&qual) && ch.recv(&target));
        DAT_EVENT_NUMBER outcome;
        CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                    outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        DAT_LMR_TRIPLET iov = b.iov(0, 64);
        DAT_DTO_COOKIE ck;
        DAT_EVENT ev;
        // Suppressed send, suppressed write, then a signalled send: one event, the last.
        ck.as_64 = 1;
        CHILD_CHECK(dat_ep_post_send(c.ep, 1, &iov, ck, DAT_COMPLETION_SUPPRESS_FLAG) ==
                    DAT_SUCCESS);
        ck.as_64 = 2;
        CHILD_CHECK(dat_ep_post_rdma_write(c.ep, 1, &iov, ck, &target,
                                           DAT_COMPLETION_SUPPRESS_FLAG) == DAT_SUCCESS);
        ck.as_64 = 3;
        CHILD_CHECK(dat_ep_post_send(c.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG) ==
                    DAT_SUCCESS);
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 3);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        // The peer saw both sends.
        int got = 0;
        CHILD_CHECK(ch.recv(&got) && got == 2);
        CHILD_CHECK(DAT_GET_TYPE(dat_evd_dequeue(c.req_evd, &ev)) == DAT_QUEUE_EMPTY);
        // A suppressed read of memory the peer never exposed fails: that is reported.
        DAT_RMR_TRIPLET bad = target;
        bad.rmr_context ^= 0x5a5a5a5a;
        ck.as_64 = 4;
        CHILD_CHECK(dat_ep_post_rdma_read(c.ep, 1, &iov, ck, &bad, DAT_COMPLETION_SUPPRESS_FLAG) ==
                    DAT_SUCCESS);
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 4);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS);
        CHILD_CHECK(ch.send(1));
        return 0;
    });
    ch.parent_side();
    Node s;
    Buffer region, rbuf;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&region, 4096), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&rbuf, 4096), DAT_SUCCESS);
    for (std::uint64_t i = 0; i < 2; ++i) {
        DAT_LMR_TRIPLET iov = rbuf.iov(i * 1024, 1024);
        DAT_DTO_COOKIE ck;
        ck.as_64 = i;
        ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    }
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    DAT_RMR_TRIPLET t = region.rmr();
    ASSERT_TRUE(ch.send(qual) && ch.send(t));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    DAT_EVENT ev;
    int got = 0;
    for (; got < 2; ++got) {
        ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
        EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    }
    ASSERT_TRUE(ch.send(got));
    int ok = 0;
    ASSERT_TRUE(ch.recv(&ok));
    EXPECT_EQ(reap(pid), 0);
}

// DAT_COMPLETION_SOLICITED_WAIT_FLAG: the receiver posts its receives with the flag, so a
// dat_evd_wait that has to block on its receive EVD wakes only for a solicited message
// (the sender's post carries the flag), as a verbs CQ armed with solicited_only. An
// unsolicited message is delivered all the same (at the wait's timeout, or to a dequeue),
// and a wait that finds its event already queued returns at once.
TEST(ConformanceGaps, SolicitedWaitWakesOnlyForSolicitedMessages) {
    if (!(supported_completion_flags() & DAT_COMPLETION_SOLICITED_WAIT_FLAG))
        SKIP_UNSUPPORTED("completion_flags_supported lacks DAT_COMPLETION_SOLICITED_WAIT_FLAG");
    Channel ch;
    int pid = spawn([&] {
        Node c;
        Buffer b;
        CHILD_CHECK(child_connects(ch, c, &b, 4096));
        // Each message once the parent says so: the first two 100 ms later (the parent is
        // blocked in dat_evd_wait by then), the third at once.
        const DAT_COMPLETION_FLAGS how[] = {DAT_COMPLETION_DEFAULT_FLAG,
                                            DAT_COMPLETION_SOLICITED_WAIT_FLAG,
                                            DAT_COMPLETION_DEFAULT_FLAG};
        for (int i = 0; i < 3; ++i) {
            int go = 0;
            CHILD_CHECK(ch.recv(&go) && go == i);
            if (i < 2) usleep(100'000);
            DAT_LMR_TRIPLET iov = b.iov(static_cast<std::size_t>(i) * 64, 16);
            DAT_DTO_COOKIE ck;
            ck.as_64 = static_cast<std::uint64_t>(i);
            CHILD_CHECK(dat_ep_post_send(c.ep, 1, &iov, ck, how[i]) == DAT_SUCCESS);
            DAT_EVENT ev;
            CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
            CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
            if (i == 2) CHILD_CHECK(ch.send(i));
        }
        int done = 0;
        CHILD_CHECK(ch.recv(&done));
        return 0;
    });
    ch.parent_side();
    Node s;
    Buffer rbuf;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&rbuf, 4096), DAT_SUCCESS);
    for (std::uint64_t i = 0; i < 3; ++i) {
        DAT_LMR_TRIPLET iov = rbuf.iov(i * 64, 64);
        DAT_DTO_COOKIE ck;
        ck.as_64 = 100 + i;
        ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &iov, ck, DAT_COMPLETION_SOLICITED_WAIT_FLAG),
                  DAT_SUCCESS);
    }
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    using Clock = std::chrono::steady_clock;
    auto ms_since = [](Clock::time_point t0) {
        return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    };
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    // 1. Unsolicited, arriving at about 100 ms: the wait runs to its 600 ms timeout; then
    //    it may hand the completion over (a CQ-backed EVD polls once more) or say it timed
    //    out, and the completion is there for a dequeue.
    ASSERT_TRUE(ch.send(0));
    auto t0 = Clock::now();
    DAT_RETURN rc = dat_evd_wait(s.recv_evd, 600'000, 1, &ev, &nmore);
    double waited = ms_since(t0);
    std::printf(
        "[solicited] wait with an unsolicited message: ended after %.0f ms of 600, "
        "rc 0x%x\n",
        waited, rc);
    EXPECT_GE(waited, 550.0) << "an unsolicited message woke a solicited-only waiter";
    if (rc != DAT_SUCCESS) {
        EXPECT_EQ(DAT_GET_TYPE(rc), DAT_TIMEOUT_EXPIRED);
        ASSERT_EQ(s.next(s.recv_evd, &ev, 0), DAT_SUCCESS) << "the unsolicited message is lost";
    }
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 100u);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    // 2. Solicited, arriving at about 100 ms: it ends the wait.
    ASSERT_TRUE(ch.send(1));
    t0 = Clock::now();
    rc = dat_evd_wait(s.recv_evd, 5'000'000, 1, &ev, &nmore);
    waited = ms_since(t0);
    std::printf("[solicited] wait with a solicited message: ended after %.0f ms, rc 0x%x\n", waited,
                rc);
    ASSERT_EQ(rc, DAT_SUCCESS) << "a solicited message did not wake the waiter";
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 101u);
    EXPECT_LT(waited, 4000.0);
    // 3. Unsolicited and already queued when the wait starts: handed over at once.
    //    (The sender reports its send's completion; the receive has arrived by then, and
    //    a short pause lets this side's progress place it.)
    ASSERT_TRUE(ch.send(2));
    int sent = -1;
    ASSERT_TRUE(ch.recv(&sent));
    ASSERT_EQ(sent, 2);
    usleep(200'000);
    t0 = Clock::now();
    rc = dat_evd_wait(s.recv_evd, 5'000'000, 1, &ev, &nmore);
    waited = ms_since(t0);
    ASSERT_EQ(rc, DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 102u);
    EXPECT_LT(waited, 1000.0) << "a queued unsolicited message did not end the wait at once";
    ASSERT_TRUE(ch.send(3));
    EXPECT_EQ(reap(pid), 0);
}

// DAT_COMPLETION_BARRIER_FENCE_FLAG: an RDMA write fenced behind an RDMA read of the same
// remote memory starts only once the read has its data, so the read returns what was
// there before the write. The write is small and goes to the end of the large region the
// read fetches: without the fence it would overtake the read's data there.
TEST(ConformanceGaps, FenceOrdersWriteAfterRead) {
    if (!(supported_completion_flags() & DAT_COMPLETION_BARRIER_FENCE_FLAG))
        SKIP_UNSUPPORTED("completion_flags_supported lacks DAT_COMPLETION_BARRIER_FENCE_FLAG");
    if (!traits().rdma) SKIP_UNSUPPORTED("no RDMA (max_rdma_size is 0)");
    constexpr std::size_t kSize = 8 << 20;  // several socket buffers: the read takes a while
    constexpr std::size_t kTail = 64 << 10;
    constexpr int kRounds = 4;
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        Node c;
        Buffer dst, src;
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        CHILD_CHECK(c.reg(&dst, kSize) == DAT_SUCCESS && c.reg(&src, kTail) == DAT_SUCCESS);
        DAT_CONN_QUAL qual;
        DAT_RMR_TRIPLET target;
        CHILD_CHECK(ch.recv(&qual) && ch.recv(&target));
        DAT_EVENT_NUMBER outcome;
        CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                    outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        DAT_RMR_TRIPLET tail = target;
        tail.virtual_address += kSize - kTail;
        tail.segment_length = kTail;
        for (int round = 0; round < kRounds; ++round) {
            for (auto &x : src.mem) x = static_cast<unsigned char>(0xB0 + round);
            DAT_LMR_TRIPLET riov = dst.iov();
            DAT_LMR_TRIPLET wiov = src.iov();
            DAT_DTO_COOKIE ck;
            ck.as_64 = 1;
            CHILD_CHECK(dat_ep_post_rdma_read(c.ep, 1, &riov, ck, &target,
                                              DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
            ck.as_64 = 2;
            CHILD_CHECK(dat_ep_post_rdma_write(c.ep, 1, &wiov, ck, &tail,
                                               DAT_COMPLETION_BARRIER_FENCE_FLAG) == DAT_SUCCESS);
            DAT_EVENT ev;
            for (std::uint64_t want : {1, 2}) {
                CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
                CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
                CHILD_CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == want);
            }
            // The tail as the previous round's write left it, never this round's.
            const unsigned char before =
                round == 0 ? 0xAA : static_cast<unsigned char>(0xB0 + round - 1);
            for (std::size_t i = 0; i < kSize - kTail; i += 4096) CHILD_CHECK(dst.mem[i] == 0xAA);
            for (std::size_t i = kSize - kTail; i < kSize; ++i) CHILD_CHECK(dst.mem[i] == before);
        }
        CHILD_CHECK(ch.send(1));
        int done;
        CHILD_CHECK(ch.recv(&done));
        return 0;
    });
    ch.parent_side();
    // The region outlives the Node: its LMR is freed first. The target's progress thread
    // reads and writes the region for the peer's one-sided operations, and dat_lmr_free is
    // what orders those accesses before the memory goes (a data race under TSan otherwise:
    // the peer's "done" reaches us through a pipe, which orders nothing in this process).
    Buffer region;
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&region, kSize), DAT_SUCCESS);
    for (auto &x : region.mem) x = 0xAA;
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    DAT_RMR_TRIPLET t = region.rmr();
    ASSERT_TRUE(ch.send(qual) && ch.send(t));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    int ok = 0;
    ASSERT_TRUE(ch.recv(&ok, 60000));
    ch.send(1);
    EXPECT_EQ(reap(pid), 0);
}

// dat_ep_dup_connect: from an EP that connected, the duplicate reaches the same listener;
// from an EP that was accepted, the peer's listening qualifier is unknown and the call is
// refused without any connection attempt.
TEST(ConformanceGaps, DupConnectActiveAndAccepted) {
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        Node c;
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        DAT_CONN_QUAL qual;
        CHILD_CHECK(ch.recv(&qual));
        DAT_EVENT_NUMBER outcome;
        CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                    outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        DAT_EP_HANDLE dup = DAT_HANDLE_NULL;
        CHILD_CHECK(dat_ep_create(c.ia, c.pz, c.recv_evd, c.req_evd, c.conn_evd, nullptr, &dup) ==
                    DAT_SUCCESS);
        const char hi[] = "dup";
        DAT_RETURN rc = dat_ep_dup_connect(dup, c.ep, kWait, sizeof hi, const_cast<char *>(hi),
                                           DAT_QOS_BEST_EFFORT);
        if (rc != DAT_SUCCESS) std::fprintf(stderr, "dat_ep_dup_connect: 0x%x\n", rc);
        CHILD_CHECK(rc == DAT_SUCCESS);
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.conn_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
        CHILD_CHECK(ev.event_data.connect_event_data.ep_handle == dup);
        DAT_EP_PARAM a = ep_param(c.ep), b = ep_param(dup);
        CHILD_CHECK(b.remote_port_qual == a.remote_port_qual);
        CHILD_CHECK(std::memcmp(&reinterpret_cast<sockaddr_in *>(b.remote_ia_address_ptr)->sin_addr,
                                &reinterpret_cast<sockaddr_in *>(a.remote_ia_address_ptr)->sin_addr,
                                sizeof(in_addr)) == 0);
        CHILD_CHECK(ch.send(1));
        int done;
        CHILD_CHECK(ch.recv(&done));
        dat_ep_free(dup);
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    DAT_EP_HANDLE second = DAT_HANDLE_NULL, third = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ep_create(s.ia, s.pz, s.recv_evd, s.req_evd, s.conn_evd, nullptr, &second),
              DAT_SUCCESS);
    ASSERT_EQ(dat_ep_create(s.ia, s.pz, s.recv_evd, s.req_evd, s.conn_evd, nullptr, &third),
              DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    // Not connected: nothing to duplicate.
    EXPECT_EQ(
        DAT_GET_TYPE(dat_ep_dup_connect(third, second, kWait, 0, nullptr, DAT_QOS_BEST_EFFORT)),
        DAT_INVALID_STATE);
    // Accepted: refused, and the EP stays unconnected.
    EXPECT_TRUE(is_error(dat_ep_dup_connect(third, s.ep, kWait, 0, nullptr, DAT_QOS_BEST_EFFORT),
                         DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
    EXPECT_EQ(ep_param(third).ep_state, DAT_EP_STATE_UNCONNECTED);
    // The child's duplicate arrives on our PSP with its private data.
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    DAT_CR_PARAM crp;
    ASSERT_EQ(dat_cr_query(ev.event_data.cr_arrival_event_data.cr_handle, DAT_CR_FIELD_ALL, &crp),
              DAT_SUCCESS);
    ASSERT_EQ(crp.private_data_size, 4);
    EXPECT_STREQ(static_cast<const char *>(crp.private_data), "dup");
    ASSERT_EQ(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, second, 0, nullptr),
              DAT_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    int ok = 0;
    ASSERT_TRUE(ch.recv(&ok));
    // No request came from the refused duplicate.
    EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(s.cr_evd, &ev)), DAT_QUEUE_EMPTY);
    ch.send(1);
    EXPECT_EQ(reap(pid), 0);
    dat_ep_free(second);
    dat_ep_free(third);
}

// A QoS the provider cannot give is refused (DAT_MODEL_NOT_SUPPORTED) at dat_ep_create,
// dat_ep_modify and dat_ep_connect, never silently replaced by best effort; a value that
// is no DAT_QOS is a bad argument.
TEST(ConformanceGaps, UnsupportedQosIsRefused) {
    Node n;
    ASSERT_EQ(n.open(), DAT_SUCCESS);
    DAT_IA_ATTR ia_attr;
    ProviderAttr pa;
    ASSERT_EQ(query(n.ia, &ia_attr, &pa.get()), DAT_SUCCESS);
    DAT_QOS unsupported = DAT_QOS_BEST_EFFORT;
    for (DAT_QOS q :
         {DAT_QOS_HIGH_THROUGHPUT, DAT_QOS_LOW_LATENCY, DAT_QOS_ECONOMY, DAT_QOS_PREMIUM})
        if (!(pa.get().dat_qos_supported & q)) unsupported = q;
    if (unsupported == DAT_QOS_BEST_EFFORT) SKIP_UNSUPPORTED("every DAT_QOS is supported");
    ASSERT_EQ(n.make_ep(), DAT_SUCCESS);
    DAT_EP_PARAM p = ep_param(n.ep);
    DAT_EP_ATTR attr = p.ep_attr;
    attr.ep_provider_specific_count = 0;
    attr.ep_provider_specific = nullptr;
    attr.qos = unsupported;
    DAT_EP_HANDLE ep2 = DAT_HANDLE_NULL;
    EXPECT_EQ(
        DAT_GET_TYPE(dat_ep_create(n.ia, n.pz, n.recv_evd, n.req_evd, n.conn_evd, &attr, &ep2)),
        DAT_MODEL_NOT_SUPPORTED);
    attr.qos = static_cast<DAT_QOS>(0x100);
    EXPECT_TRUE(is_error(dat_ep_create(n.ia, n.pz, n.recv_evd, n.req_evd, n.conn_evd, &attr, &ep2),
                         DAT_INVALID_PARAMETER, DAT_INVALID_ARG6));
    p.ep_attr.qos = unsupported;
    EXPECT_EQ(DAT_GET_TYPE(dat_ep_modify(n.ep, DAT_EP_FIELD_EP_ATTR_QOS, &p)),
              DAT_MODEL_NOT_SUPPORTED);
    EXPECT_EQ(ep_param(n.ep).ep_attr.qos, DAT_QOS_BEST_EFFORT);
    // Nothing is listening: a connect that went ahead would end UNREACHABLE or time out.
    sockaddr_in sin = peer_sockaddr();
    EXPECT_EQ(DAT_GET_TYPE(dat_ep_connect(n.ep, reinterpret_cast<sockaddr *>(&sin), 4791, kWait, 0,
                                          nullptr, unsupported, DAT_CONNECT_DEFAULT_FLAG)),
              DAT_MODEL_NOT_SUPPORTED);
    EXPECT_TRUE(
        is_error(dat_ep_connect(n.ep, reinterpret_cast<sockaddr *>(&sin), 4791, kWait, 0, nullptr,
                                static_cast<DAT_QOS>(0x100), DAT_CONNECT_DEFAULT_FLAG),
                 DAT_INVALID_PARAMETER, DAT_INVALID_ARG7));
    EXPECT_EQ(ep_param(n.ep).ep_state, DAT_EP_STATE_UNCONNECTED);
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(n.conn_evd, &ev)), DAT_QUEUE_EMPTY);
}

// A CNO's proxy agent is called for completions too, not only for connection and software
// events: messages land in a receive EVD attached to a CNO with an agent while the
// application neither waits nor polls, and the agent (called on the provider's agent
// thread) dequeues every one of them, from the EVD it is called with.
namespace {

struct AgentLog {
    std::mutex mu;
    std::condition_variable cv;
    int calls = 0;
    int received = 0;
    DAT_EVD_HANDLE last = DAT_HANDLE_NULL;
};

void DAT_API take_receives(DAT_PVOID data, DAT_EVD_HANDLE evd) {
    auto *log = static_cast<AgentLog *>(data);
    int got = 0;
    DAT_EVENT ev;
    while (dat_evd_dequeue(evd, &ev) == DAT_SUCCESS)
        if (ev.event_number == DAT_DTO_COMPLETION_EVENT &&
            ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS)
            ++got;
    std::lock_guard lk(log->mu);
    ++log->calls;
    log->received += got;
    log->last = evd;
    log->cv.notify_all();
}

}  // namespace

TEST(ConformanceGaps, CnoAgentSeesCompletions) {
    constexpr int kMsgs = 5;
    Channel ch;
    int pid = spawn([&] {
        Node c;
        Buffer b;
        CHILD_CHECK(child_connects(ch, c, &b, 64));
        for (int i = 0; i < kMsgs; ++i) {
            usleep(20000);  // one arrival at a time: each must reach the agent
            DAT_LMR_TRIPLET iov = b.iov(0, 8);
            DAT_DTO_COOKIE ck;
            ck.as_64 = static_cast<DAT_UINT64>(i);
            CHILD_CHECK(dat_ep_post_send(c.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG) ==
                        DAT_SUCCESS);
            DAT_EVENT ev;
            CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        }
        int bye = 0;
        CHILD_CHECK(ch.recv(&bye));
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    AgentLog log;
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_cno_create(s.ia, DAT_OS_WAIT_PROXY_AGENT{&log, take_receives}, &cno),
              DAT_SUCCESS);
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_evd_create(s.ia, 16, cno, DAT_EVD_DTO_FLAG, &evd), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_create(s.ia, s.pz, evd, s.req_evd, s.conn_evd, nullptr, &s.ep), DAT_SUCCESS);
    Buffer b;
    ASSERT_EQ(s.reg(&b, 64 * kMsgs), DAT_SUCCESS);
    for (int i = 0; i < kMsgs; ++i) {
        DAT_LMR_TRIPLET iov = b.iov(static_cast<std::size_t>(i) * 64, 64);
        DAT_DTO_COOKIE ck;
        ck.as_64 = static_cast<DAT_UINT64>(i);
        ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    }
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    {
        std::unique_lock lk(log.mu);
        log.cv.wait_for(lk, std::chrono::seconds(10), [&] { return log.received >= kMsgs; });
        EXPECT_EQ(log.received, kMsgs) << "the agent saw " << log.received << " of " << kMsgs
                                       << " receives in " << log.calls << " calls";
        EXPECT_EQ(log.last, evd);
    }
    ASSERT_TRUE(ch.send(0));
    EXPECT_EQ(reap(pid), 0);
    DAT_EVENT_NUMBER disc{};
    s.disconnect_and_wait(DAT_CLOSE_ABRUPT_FLAG, &disc);
    ASSERT_EQ(dat_ep_free(s.ep), DAT_SUCCESS);
    s.ep = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_evd_free(evd), DAT_SUCCESS);
    ASSERT_EQ(dat_cno_free(cno), DAT_SUCCESS);
}

// An EVD leaves its CNO (dat_evd_free) while another thread waits on the CNO: the waiter
// must not touch the freed EVD (on verbs it sleeps on the EVD's completion channel and
// looks at its CQ again after each wakeup), and its wait ends as it would without the EVD.
TEST(ConformanceGaps, EvdFreedWhileItsCnoIsWaitedOn) {
    Node n;
    ASSERT_EQ(n.open(), DAT_SUCCESS);
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_cno_create(n.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_evd_create(n.ia, 8, cno, DAT_EVD_DTO_FLAG, &evd), DAT_SUCCESS);
    std::atomic<DAT_RETURN> rc{DAT_SUCCESS};
    std::atomic<bool> back{false};
    std::thread waiter([&] {
        DAT_EVD_HANDLE got = DAT_HANDLE_NULL;
        rc = dat_cno_wait(cno, 1'500'000, &got);
        back = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // asleep in the wait
    EXPECT_EQ(dat_evd_free(evd), DAT_SUCCESS);
    EXPECT_FALSE(back.load());
    waiter.join();
    EXPECT_EQ(DAT_GET_TYPE(rc.load()), DAT_TIMEOUT_EXPIRED);
    EXPECT_EQ(dat_cno_free(cno), DAT_SUCCESS);
}

// Teardown with a thread blocked in dat_evd_wait on the IA's DTO EVD (where the provider
// may let the waiter sleep in its own progress) and one on a software EVD: dat_evd_free
// of the one and an abrupt dat_ia_close of the rest release both waiters (never a hang,
// never an EVD deleted under a sleeping thread).
TEST(ConformanceGaps, FreeAndAbruptCloseReleaseWaiters) {
    Node n;
    ASSERT_EQ(n.open(), DAT_SUCCESS);
    DAT_EVD_HANDLE sw = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_evd_create(n.ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &sw), DAT_SUCCESS);
    std::atomic<int> back{0};
    std::atomic<DAT_RETURN> sw_rc{DAT_SUCCESS}, dto_rc{DAT_SUCCESS};
    std::thread sw_waiter([&] {
        DAT_EVENT ev;
        sw_rc = dat_evd_wait(sw, DAT_TIMEOUT_INFINITE, 1, &ev, nullptr);
        ++back;
    });
    std::thread dto_waiter([&, evd = n.req_evd] {
        DAT_EVENT ev;
        dto_rc = dat_evd_wait(evd, DAT_TIMEOUT_INFINITE, 1, &ev, nullptr);
        ++back;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(dat_evd_free(sw), DAT_SUCCESS);
    EXPECT_EQ(dat_ia_close(n.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    n.forget();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (back.load() < 2 && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (back.load() < 2) {
        sw_waiter.detach();
        dto_waiter.detach();
        FAIL() << "a waiter was left sleeping";
    }
    sw_waiter.join();
    dto_waiter.join();
    EXPECT_NE(sw_rc.load(), DAT_SUCCESS);
    EXPECT_NE(dto_rc.load(), DAT_SUCCESS);
}

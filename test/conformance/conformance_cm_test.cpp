// Connection management beyond the basics: 64-bit connection qualifiers (an IB service ID is
// one) and provider-created endpoints (DAT_PSP_PROVIDER_FLAG). Two processes, DAT API only.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"

using namespace dattest;

namespace {

// Qualifiers above 2^32, distinct per test process (the parent's: a child passes getppid())
// and per salt.
DAT_CONN_QUAL big_qual(unsigned i, unsigned salt = 0, pid_t owner = getpid()) {
    return (DAT_CONN_QUAL{1} << 40) + (static_cast<DAT_CONN_QUAL>(owner) << 12) +
           (DAT_CONN_QUAL{salt} << 4) + i;
}

// PSPs on big_qual(0 .. n-1, salt) for the first salt whose qualifiers are free on this
// host. The tcp provider listens for such a qualifier on a port hashed from it (net.hpp,
// demux_port: 4536 ports), so another test process running beside this one may hold one of
// them, and the documented answer is DAT_CONN_QUAL_IN_USE. Another salt moves all the ports.
// Returns the first other error unchanged (the caller's skip check sees it).
constexpr unsigned kSalts = 16;
DAT_RETURN create_big_psps(Node &s, DAT_PSP_HANDLE *psps, unsigned n, unsigned *salt) {
    DAT_RETURN rc = DAT_SUCCESS;
    for (unsigned k = 0; k < kSalts; ++k) {
        unsigned made = 0;
        for (; made < n; ++made) {
            rc = dat_psp_create(s.ia, big_qual(made, k), s.cr_evd, DAT_PSP_CONSUMER_FLAG,
                                &psps[made]);
            if (rc != DAT_SUCCESS) break;
        }
        if (rc == DAT_SUCCESS) {
            *salt = k;
            return rc;
        }
        while (made > 0) dat_psp_free(psps[--made]);
        if (DAT_GET_TYPE(rc) != DAT_CONN_QUAL_IN_USE) return rc;
    }
    return rc;
}
// The parent's word to the child: the salt to use, or 's' (skip). Salts are 'a' .. 'p'.
char salt_word(unsigned salt) {
    return static_cast<char>('a' + salt);
}
unsigned salt_of(char word) {
    return static_cast<unsigned>(word - 'a');
}

// A provider whose qualifiers are ports (verbs over rdma_cm's TCP port space) cannot listen
// on one beyond them: the case is reported as unsupported there. The child waits for the
// parent's word first (a salt, or 's' skip).
#define SKIP_IF_NO_LARGE_QUALIFIERS(rc, ch)                              \
    if (DAT_GET_TYPE(rc) == DAT_CONN_QUAL_UNAVAILABLE) {                 \
        (ch).send('s');                                                  \
        reap(pid);                                                       \
        SKIP_UNSUPPORTED("connection qualifiers beyond the port range"); \
    }

}  // namespace

// Several PSPs on qualifiers beyond any port range: a request reaches the one it names, with
// that qualifier in the arrival event, and the connection carries data.
TEST(ConformanceCm, LargeQualifierRoutesToItsPsp) {
    constexpr unsigned kPsps = 3;
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        Node c;
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        char go = 0;
        CHILD_CHECK(ch.recv(&go));
        if (go == 's') return 0;
        DAT_EVENT_NUMBER outcome{};
        CHILD_CHECK(c.connect(big_qual(1, salt_of(go), getppid()), &outcome, 4, "qual") ==
                    DAT_SUCCESS);
        CHILD_CHECK(outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        DAT_EVENT_NUMBER ended{};
        CHILD_CHECK(c.disconnect_and_wait(DAT_CLOSE_GRACEFUL_FLAG, &ended) == DAT_SUCCESS);
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    DAT_PSP_HANDLE psps[kPsps];
    unsigned salt = 0;
    DAT_RETURN rc = create_big_psps(s, psps, kPsps, &salt);
    SKIP_IF_NO_LARGE_QUALIFIERS(rc, ch);
    ASSERT_EQ(rc, DAT_SUCCESS);
    const DAT_CONN_QUAL target = big_qual(1, salt);
    // The same qualifier twice in one IA is in use.
    DAT_PSP_HANDLE dup = DAT_HANDLE_NULL;
    EXPECT_EQ(DAT_GET_TYPE(dat_psp_create(s.ia, target, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &dup)),
              DAT_CONN_QUAL_IN_USE);
    ASSERT_TRUE(ch.send(salt_word(salt)));
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    const auto &cr = ev.event_data.cr_arrival_event_data;
    EXPECT_EQ(cr.sp_handle.psp_handle, psps[1]);
    EXPECT_EQ(cr.conn_qual, target);
    DAT_CR_PARAM p{};
    ASSERT_EQ(dat_cr_query(cr.cr_handle, DAT_CR_FIELD_ALL, &p), DAT_SUCCESS);
    ASSERT_EQ(p.private_data_size, 4);
    EXPECT_EQ(std::memcmp(p.private_data, "qual", 4), 0);
    ASSERT_EQ(dat_cr_accept(cr.cr_handle, s.ep, 0, nullptr), DAT_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    EXPECT_EQ(reap(pid), 0);
    for (DAT_PSP_HANDLE psp : psps) EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
}

// A request for a large qualifier nobody listens on is refused promptly (a non-peer
// reject), also while the peer listens on other large qualifiers.
TEST(ConformanceCm, UnknownLargeQualifierIsRejected) {
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        Node c;
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        char go = 0;
        CHILD_CHECK(ch.recv(&go));
        if (go == 's') return 0;
        const auto t0 = std::chrono::steady_clock::now();
        DAT_EVENT_NUMBER outcome{};
        CHILD_CHECK(c.connect(big_qual(7) + (DAT_CONN_QUAL{1} << 50), &outcome) == DAT_SUCCESS);
        CHILD_CHECK(outcome == DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
        // Well before the 10 s connect timeout.
        CHILD_CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(8));
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    DAT_PSP_HANDLE psps[4];
    unsigned salt = 0;
    DAT_RETURN rc = create_big_psps(s, psps, 4, &salt);
    SKIP_IF_NO_LARGE_QUALIFIERS(rc, ch);
    ASSERT_EQ(rc, DAT_SUCCESS);
    ASSERT_TRUE(ch.send(salt_word(salt)));
    EXPECT_EQ(reap(pid), 0);
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(s.next(s.cr_evd, &ev, 0)), DAT_TIMEOUT_EXPIRED);  // no CR surfaced
    for (DAT_PSP_HANDLE psp : psps) EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
}

// DAT_PSP_PROVIDER_FLAG: each request comes with an EP the provider made (tentative, not
// configured); rejecting the request frees it; accepting on the consumer's own EP leaves it
// to the consumer to free.
TEST(ConformanceCm, ProviderCreatedEndpoint) {
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        DAT_CONN_QUAL qual = 0;
        CHILD_CHECK(ch.recv(&qual));
        Node c1, c2;
        CHILD_CHECK(c1.open() == DAT_SUCCESS && c1.make_ep() == DAT_SUCCESS);
        DAT_EVENT_NUMBER outcome{};
        CHILD_CHECK(c1.connect(qual, &outcome) == DAT_SUCCESS);
        CHILD_CHECK(outcome == DAT_CONNECTION_EVENT_PEER_REJECTED);
        CHILD_CHECK(c2.open() == DAT_SUCCESS && c2.make_ep() == DAT_SUCCESS);
        CHILD_CHECK(c2.connect(qual, &outcome) == DAT_SUCCESS);
        CHILD_CHECK(outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        DAT_EVENT_NUMBER ended{};
        CHILD_CHECK(c2.disconnect_and_wait(DAT_CLOSE_GRACEFUL_FLAG, &ended) == DAT_SUCCESS);
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(dat_psp_create_any(s.ia, &qual, s.cr_evd, DAT_PSP_PROVIDER_FLAG, &s.psp),
              DAT_SUCCESS);
    DAT_PSP_PARAM pp{};
    ASSERT_EQ(dat_psp_query(s.psp, DAT_PSP_FIELD_ALL, &pp), DAT_SUCCESS);
    EXPECT_EQ(pp.psp_flags, DAT_PSP_PROVIDER_FLAG);
    ASSERT_TRUE(ch.send(qual));

    // First request: the provider's EP, tentative; not configured, so not accepted on;
    // rejected, and the EP goes with the request.
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    DAT_CR_PARAM p{};
    ASSERT_EQ(dat_cr_query(cr, DAT_CR_FIELD_ALL, &p), DAT_SUCCESS);
    DAT_EP_HANDLE made = p.local_ep_handle;
    ASSERT_NE(made, DAT_HANDLE_NULL);
    DAT_EP_PARAM ep{};
    ASSERT_EQ(dat_ep_query(made, DAT_EP_FIELD_ALL, &ep), DAT_SUCCESS);
    EXPECT_EQ(ep.ep_state, DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
    EXPECT_EQ(ep.pz_handle, DAT_HANDLE_NULL);
    EXPECT_EQ(DAT_GET_TYPE(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, nullptr)), DAT_INVALID_STATE);
    ASSERT_EQ(dat_cr_reject(cr, 0, nullptr), DAT_SUCCESS);
    EXPECT_EQ(DAT_GET_TYPE(dat_ep_free(made)), DAT_INVALID_HANDLE);  // freed with the request

    // Second request: accepted on the consumer's EP; the provider's is ours to free.
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    cr = ev.event_data.cr_arrival_event_data.cr_handle;
    ASSERT_EQ(dat_cr_query(cr, DAT_CR_FIELD_ALL, &p), DAT_SUCCESS);
    made = p.local_ep_handle;
    ASSERT_NE(made, DAT_HANDLE_NULL);
    ASSERT_EQ(dat_cr_accept(cr, s.ep, 0, nullptr), DAT_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    ASSERT_EQ(dat_ep_query(made, DAT_EP_FIELD_ALL, &ep), DAT_SUCCESS);
    EXPECT_EQ(ep.ep_state, DAT_EP_STATE_UNCONNECTED);
    EXPECT_EQ(dat_ep_free(made), DAT_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    EXPECT_EQ(reap(pid), 0);
}

// DAT_PSP_PROVIDER_FLAG, the other way round: the consumer configures the provider's EP
// with dat_ep_modify (PZ and EVDs, and a deeper receive queue), posts a receive on it and
// accepts on it (DAT_HANDLE_NULL names it); data then moves both ways on that EP.
TEST(ConformanceCm, ProviderCreatedEndpointConfiguredAndAccepted) {
    constexpr std::size_t kLen = 64;
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        DAT_CONN_QUAL qual = 0;
        CHILD_CHECK(ch.recv(&qual));
        Node c;
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        Buffer b;
        CHILD_CHECK(c.reg(&b, kLen) == DAT_SUCCESS);
        DAT_LMR_TRIPLET t = b.iov();
        DAT_DTO_COOKIE ck;
        ck.as_64 = 2;
        CHILD_CHECK(dat_ep_post_recv(c.ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
        DAT_EVENT_NUMBER outcome{};
        CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS);
        CHILD_CHECK(outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        // The server's message arrives, and goes back changed.
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.recv_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.transfered_length == kLen);
        for (unsigned char &x : b.mem) x = static_cast<unsigned char>(x + 1);
        ck.as_64 = 3;
        CHILD_CHECK(dat_ep_post_send(c.ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        DAT_EVENT_NUMBER ended{};
        CHILD_CHECK(c.next(c.conn_evd, &ev, 10'000'000) == DAT_SUCCESS);
        ended = ev.event_number;
        CHILD_CHECK(ended == DAT_CONNECTION_EVENT_DISCONNECTED);
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(dat_psp_create_any(s.ia, &qual, s.cr_evd, DAT_PSP_PROVIDER_FLAG, &s.psp),
              DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    DAT_CR_PARAM p{};
    ASSERT_EQ(dat_cr_query(cr, DAT_CR_FIELD_ALL, &p), DAT_SUCCESS);
    DAT_EP_HANDLE made = p.local_ep_handle;
    ASSERT_NE(made, DAT_HANDLE_NULL);

    DAT_EP_PARAM ep{};
    ASSERT_EQ(dat_ep_query(made, DAT_EP_FIELD_ALL, &ep), DAT_SUCCESS);
    ep.pz_handle = s.pz;
    ep.recv_evd_handle = s.recv_evd;
    ep.request_evd_handle = s.req_evd;
    ep.connect_evd_handle = s.conn_evd;
    const DAT_COUNT deeper = ep.ep_attr.max_recv_dtos + 8;
    ep.ep_attr.max_recv_dtos = deeper;
    DAT_RETURN rc = dat_ep_modify(
        made,
        DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE | DAT_EP_FIELD_REQUEST_EVD_HANDLE |
            DAT_EP_FIELD_CONNECT_EVD_HANDLE | DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS,
        &ep);
    if (DAT_GET_TYPE(rc) == DAT_MODEL_NOT_SUPPORTED) {
        EXPECT_EQ(dat_cr_reject(cr, 0, nullptr), DAT_SUCCESS);
        reap(pid);
        SKIP_UNSUPPORTED("dat_ep_modify cannot give the provider's EP a PZ and EVDs here");
    }
    ASSERT_EQ(rc, DAT_SUCCESS);
    DAT_EP_PARAM after{};
    ASSERT_EQ(dat_ep_query(made, DAT_EP_FIELD_ALL, &after), DAT_SUCCESS);
    EXPECT_EQ(after.pz_handle, s.pz);
    EXPECT_EQ(after.recv_evd_handle, s.recv_evd);
    EXPECT_EQ(after.connect_evd_handle, s.conn_evd);
    EXPECT_EQ(after.ep_attr.max_recv_dtos, deeper);
    EXPECT_EQ(after.ep_state, DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);

    Buffer in, out;
    ASSERT_EQ(s.reg(&in, kLen), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&out, kLen), DAT_SUCCESS);
    for (std::size_t i = 0; i < kLen; ++i) out.mem[i] = static_cast<unsigned char>(i * 3);
    DAT_LMR_TRIPLET ti = in.iov(), to = out.iov();
    DAT_DTO_COOKIE ck;
    ck.as_64 = 10;
    ASSERT_EQ(dat_ep_post_recv(made, 1, &ti, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    ASSERT_EQ(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, nullptr), DAT_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    EXPECT_EQ(ev.event_data.connect_event_data.ep_handle, made);

    ck.as_64 = 11;
    ASSERT_EQ(dat_ep_post_send(made, 1, &to, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    ASSERT_EQ(s.next(s.req_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 11u);
    ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 10u);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.ep_handle, made);
    for (std::size_t i = 0; i < kLen; ++i)
        ASSERT_EQ(in.mem[i], static_cast<unsigned char>(i * 3 + 1)) << "byte " << i;

    DAT_EVENT_NUMBER ended{};
    std::swap(s.ep, made);  // the Node disconnects and frees the EP we connected on
    ASSERT_EQ(s.disconnect_and_wait(DAT_CLOSE_GRACEFUL_FLAG, &ended), DAT_SUCCESS);
    EXPECT_EQ(ended, DAT_CONNECTION_EVENT_DISCONNECTED);
    EXPECT_EQ(reap(pid), 0);
}

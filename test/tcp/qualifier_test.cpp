// Connection qualifiers beyond the TCP port range on the tcp provider (docs/tcp-provider.md,
// "Connection qualifiers"): the demultiplexing port rule (net.hpp demux_port), routing by
// the qualifier a CONN_REQ carries, refusal of an unknown one, the version-1 peer (addr 0),
// and two processes meeting on one demultiplexing port (DAT_CONN_QUAL_IN_USE, never a
// silent misroute). The provider runs in this process; peers are raw sockets (raw_peer.hpp)
// or DAT endpoints of the same IA.
#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"
#include "raw_peer.hpp"
#include "tcp/net.hpp"

using namespace dattest;
using opendat::tcp::demux_port;
using opendat::tcp::FrameHeader;

namespace {

// A qualifier beyond the port range, distinct per test process (the reference and opendat
// runs of a case may run at the same time on one host).
DAT_CONN_QUAL own_qual() {
    return (DAT_CONN_QUAL{0x5eed} << 40) | (static_cast<DAT_CONN_QUAL>(getpid()) << 4);
}

// Another qualifier beyond the port range that hashes to the same port as `q` (base 0).
DAT_CONN_QUAL same_port_as(DAT_CONN_QUAL q, DAT_CONN_QUAL skip = 0) {
    for (DAT_CONN_QUAL c = q + 1;; ++c)
        if (c != skip && demux_port(c, 0) == demux_port(q, 0)) return c;
}
DAT_CONN_QUAL other_port_than(DAT_CONN_QUAL q) {
    for (DAT_CONN_QUAL c = q + 1;; ++c)
        if (demux_port(c, 0) != demux_port(q, 0)) return c;
}

in_addr loopback() {
    in_addr a{};
    inet_pton(AF_INET, "127.0.0.1", &a);
    return a;
}

// A raw CONN_REQ (version-1 framing, as every version sends it) carrying `qual`.
int raw_request(std::uint16_t port, DAT_CONN_QUAL qual) {
    int fd = attack::connect_tcp(loopback(), port);
    if (fd < 0) return -1;
    FrameHeader h = opendat::tcp::make_handshake(opendat::tcp::kConnReq, 0, {2, 0});
    h.addr = qual;
    if (!attack::send_all(fd, &h, sizeof h)) {
        close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

TEST(TcpQualifier, DemuxPortRuleIsStable) {
    // The documented rule: both sides compute it, so it must never change silently.
    for (DAT_CONN_QUAL q : {DAT_CONN_QUAL{65536}, own_qual(), ~DAT_CONN_QUAL{0}}) {
        EXPECT_GE(demux_port(q, 0), opendat::tcp::kDemuxPortFirst);
        EXPECT_NE(demux_port(q, 0), demux_port(q, 1));  // the port base moves it too
    }
    EXPECT_EQ(demux_port(65536, 0), 61000 + 4157);  // splitmix64(65536) % 4536
    std::uint16_t port = 0;
    EXPECT_TRUE(opendat::tcp::listen_port(65535, 0, &port));
    EXPECT_EQ(port, 65535);
    EXPECT_FALSE(opendat::tcp::listen_port(65535, 1, &port));
    EXPECT_EQ(port, demux_port(65535, 1));
}

// One port, three service points: a direct one (its qualifier is the port) and two beyond
// the range that hash to it. Each request reaches the one it names; a version-1 request
// (addr 0) and one naming a small qualifier go by the port; an unknown large one is
// answered CONN_REJ "no service point" and closed, without a CR event.
TEST(TcpQualifier, ListenerRoutesByTheCarriedQualifier) {
    const DAT_CONN_QUAL kQ1 = own_qual();  // taken before any fork
    const std::uint16_t port = demux_port(kQ1, 0);
    const DAT_CONN_QUAL q2 = same_port_as(kQ1);
    const DAT_CONN_QUAL unknown = same_port_as(kQ1, q2);
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    DAT_PSP_HANDLE big1, big2, direct;
    ASSERT_EQ(dat_psp_create(s.ia, kQ1, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &big1), DAT_SUCCESS);
    ASSERT_EQ(dat_psp_create(s.ia, q2, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &big2), DAT_SUCCESS);
    ASSERT_EQ(dat_psp_create(s.ia, port, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &direct), DAT_SUCCESS);

    struct Case {
        DAT_CONN_QUAL carried;
        DAT_PSP_HANDLE expect;
        DAT_CONN_QUAL expect_qual;
    };
    for (const Case &c : {Case{kQ1, big1, kQ1}, Case{q2, big2, q2}, Case{0, direct, port},
                          Case{4242, direct, port}}) {
        int fd = raw_request(port, c.carried);
        ASSERT_GE(fd, 0);
        DAT_EVENT ev;
        ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS) << c.carried;
        ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
        EXPECT_EQ(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle, c.expect) << c.carried;
        EXPECT_EQ(ev.event_data.cr_arrival_event_data.conn_qual, c.expect_qual);
        EXPECT_EQ(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle, 0, nullptr),
                  DAT_SUCCESS);
        close(fd);
    }

    int fd = raw_request(port, unknown);
    ASSERT_GE(fd, 0);
    FrameHeader rej{};
    ASSERT_TRUE(attack::recv_all(fd, &rej, sizeof rej, 5000));
    EXPECT_EQ(rej.op, opendat::tcp::kConnRej);
    EXPECT_EQ(rej.aux, opendat::tcp::kRejNoServicePoint);
    EXPECT_TRUE(attack::wait_closed(fd, 5000));
    close(fd);
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(s.next(s.cr_evd, &ev, 200'000)), DAT_TIMEOUT_EXPIRED);

    // After the direct PSP goes, the port still serves the large ones, and a request by the
    // port alone finds nobody.
    ASSERT_EQ(dat_psp_free(direct), DAT_SUCCESS);
    fd = raw_request(port, 0);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(attack::recv_all(fd, &rej, sizeof rej, 5000));
    EXPECT_EQ(rej.op, opendat::tcp::kConnRej);
    close(fd);
    fd = raw_request(port, kQ1);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle, big1);
    EXPECT_EQ(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle, 0, nullptr),
              DAT_SUCCESS);
    close(fd);
    EXPECT_EQ(dat_psp_free(big1), DAT_SUCCESS);
    EXPECT_EQ(dat_psp_free(big2), DAT_SUCCESS);
}

// A DAT endpoint connecting to a large qualifier nobody listens on, on a port that serves
// another one: NON_PEER_REJECTED at once (no connect retries, no timeout).
TEST(TcpQualifier, UnknownQualifierOnALivePortIsRejectedAtOnce) {
    const DAT_CONN_QUAL kQ1 = own_qual();  // taken before any fork
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    DAT_PSP_HANDLE psp;
    ASSERT_EQ(dat_psp_create(s.ia, kQ1, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = loopback();
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(dat_ep_connect(s.ep, reinterpret_cast<sockaddr *>(&sin), same_port_as(kQ1), kWait, 0,
                             nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1500));
    EXPECT_EQ(DAT_GET_TYPE(s.next(s.cr_evd, &ev, 100'000)), DAT_TIMEOUT_EXPIRED);
    EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
}

// Two processes whose distinct large qualifiers hash to one port: the second is told
// DAT_CONN_QUAL_IN_USE; a qualifier on another port works; the first keeps its requests.
TEST(TcpQualifier, TwoProcessesOnOneDemuxPortFailClearly) {
    const DAT_CONN_QUAL kQ1 = own_qual();  // taken before any fork
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        Node c;
        CHILD_CHECK(c.open() == DAT_SUCCESS);
        DAT_PSP_HANDLE psp;
        CHILD_CHECK(dat_psp_create(c.ia, kQ1, c.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) ==
                    DAT_SUCCESS);
        CHILD_CHECK(ch.send('r'));
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.cr_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.cr_arrival_event_data.conn_qual == kQ1);
        CHILD_CHECK(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle, 0, nullptr) ==
                    DAT_SUCCESS);
        CHILD_CHECK(dat_psp_free(psp) == DAT_SUCCESS);
        return 0;
    });
    ch.parent_side();
    char ready = 0;
    ASSERT_TRUE(ch.recv(&ready));
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    DAT_PSP_HANDLE psp;
    EXPECT_EQ(DAT_GET_TYPE(
                  dat_psp_create(s.ia, same_port_as(kQ1), s.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp)),
              DAT_CONN_QUAL_IN_USE);
    ASSERT_EQ(dat_psp_create(s.ia, other_port_than(kQ1), s.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
              DAT_SUCCESS);
    int fd = raw_request(demux_port(kQ1, 0), kQ1);  // reaches the child's PSP
    ASSERT_GE(fd, 0);
    EXPECT_EQ(reap(pid), 0);
    close(fd);
    EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
}

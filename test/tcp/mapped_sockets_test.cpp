// DAT_TCP_IPV4_SOCKETS=mapped (providers/tcp/net.hpp): an IPv4 IA's connections run over
// AF_INET6 sockets with IPv4-mapped addresses. What must hold:
//  - connect, accept and messages both ways work, whichever end maps (the packets are IPv4
//    either way);
//  - a mapping end's connection really is an AF_INET6 socket (no silent fallback), and an
//    AF_INET one by default;
//  - the consumer still sees AF_INET addresses: the CR's remote address and dat_ep_query's.
// (The connection is found among the process's sockets by its port: the test's IA has port
// base 0, so the listener's port is the qualifier.)
// Two processes each: the parent listens and accepts, the child connects.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"

using namespace dattest;

namespace {

constexpr const char *kVar = "DAT_TCP_IPV4_SOCKETS";
constexpr std::size_t kLen = 64;

// The kind of this process's end of the connection under test: the connected TCP socket
// whose local or peer port is `port` (the listener's). AF_INET, AF_INET6 for a v4-mapped
// one, -1 for a native IPv6 one, 0 if there is none or more than one. Other sockets a test
// process may hold (stdio from a runner, a syslog socket, the provider's socketpairs) are
// not looked at.
int connection_family(std::uint16_t port) {
    int family = 0, found = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == nullptr) return 0;
    while (dirent *e = readdir(d)) {
        const int fd = std::atoi(e->d_name);
        struct stat st {};
        if (e->d_name[0] == '.' || fd == dirfd(d) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
            continue;
        sockaddr_storage me{}, peer{};
        socklen_t ml = sizeof me, pl = sizeof peer;
        if (getsockname(fd, reinterpret_cast<sockaddr *>(&me), &ml) != 0 ||
            getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &pl) != 0 ||
            (me.ss_family != AF_INET && me.ss_family != AF_INET6))
            continue;  // not a connected IP socket
        auto port_of = [](const sockaddr_storage &a) {
            return ntohs(a.ss_family == AF_INET6
                             ? reinterpret_cast<const sockaddr_in6 *>(&a)->sin6_port
                             : reinterpret_cast<const sockaddr_in *>(&a)->sin_port);
        };
        if (port_of(me) != port && port_of(peer) != port) continue;
        ++found;
        family = me.ss_family;
        if (family == AF_INET6 &&
            !IN6_IS_ADDR_V4MAPPED(&reinterpret_cast<const sockaddr_in6 *>(&me)->sin6_addr))
            family = -1;  // a native IPv6 connection: not what this test makes
    }
    closedir(d);
    return found == 1 ? family : 0;
}

// The address the fixture gave this IA's peer, as dat_ep_connect was given it.
bool is_v4(const DAT_SOCK_ADDR *a, in_addr want) {
    if (a == nullptr || a->sa_family != AF_INET) return false;
    return reinterpret_cast<const sockaddr_in *>(a)->sin_addr.s_addr == want.s_addr;
}

// What the provider falls back from: no AF_INET6 socket that takes mapped addresses.
bool host_has_mapped_sockets() {
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    int zero = 0;
    const bool ok = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero) == 0;
    close(fd);
    return ok;
}

void set_mode(bool mapped) {
    if (mapped)
        setenv(kVar, "mapped", 1);
    else
        unsetenv(kVar);
}

// Posts one receive, then exchanges one message each way: `first` sends first.
bool exchange(Node &n, Buffer &b, bool first, unsigned char seed) {
    DAT_LMR_TRIPLET in = b.iov(0, kLen), out = b.iov(kLen, kLen);
    DAT_DTO_COOKIE ck{};
    if (dat_ep_post_recv(n.ep, 1, &in, ck, DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS)
        return false;
    auto send = [&] {
        for (std::size_t k = 0; k < kLen; ++k)
            b.mem[kLen + k] = static_cast<unsigned char>(seed + k);
        DAT_EVENT ev;
        return dat_ep_post_send(n.ep, 1, &out, ck, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS &&
               n.next(n.req_evd, &ev) == DAT_SUCCESS &&
               ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS;
    };
    auto receive = [&] {
        DAT_EVENT ev;
        if (n.next(n.recv_evd, &ev) != DAT_SUCCESS) return false;
        const auto &d = ev.event_data.dto_completion_event_data;
        if (d.status != DAT_DTO_SUCCESS || d.transfered_length != kLen) return false;
        const unsigned char peer_seed = static_cast<unsigned char>(seed ^ 0x80);
        for (std::size_t k = 0; k < kLen; ++k)
            if (b.mem[k] != static_cast<unsigned char>(peer_seed + k)) return false;
        return true;
    };
    return first ? send() && receive() : receive() && send();
}

void run(bool parent_mapped, bool child_mapped) {
    Channel ch;
    int pid = spawn([&] {
        set_mode(child_mapped);
        Node c;
        Buffer b;
        if (!child_connects(ch, c, &b, 2 * kLen)) return 1;
        DAT_EP_PARAM p{};
        CHILD_CHECK(dat_ep_query(c.ep, DAT_EP_FIELD_ALL, &p) == DAT_SUCCESS);
        CHILD_CHECK(is_v4(p.remote_ia_address_ptr, peer_address()));
        // The test's IA has port base 0: the qualifier is the parent's port.
        CHILD_CHECK(connection_family(static_cast<std::uint16_t>(p.remote_port_qual)) ==
                    (child_mapped ? AF_INET6 : AF_INET));
        CHILD_CHECK(exchange(c, b, true, 0x80));
        int bye = 0;
        CHILD_CHECK(ch.recv(&bye));
        return 0;
    });
    ch.parent_side();
    set_mode(parent_mapped);
    Node s;
    Buffer b;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&b, 2 * kLen), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.cr_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    DAT_CR_PARAM crp{};
    ASSERT_EQ(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp), DAT_SUCCESS);
    EXPECT_TRUE(is_v4(crp.remote_ia_address_ptr, peer_address()))
        << "the CR's remote address is not the child's AF_INET address (family "
        << (crp.remote_ia_address_ptr ? crp.remote_ia_address_ptr->sa_family : -1) << ")";
    ASSERT_EQ(dat_cr_accept(cr, s.ep, 0, nullptr), DAT_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    EXPECT_EQ(connection_family(static_cast<std::uint16_t>(qual)),
              parent_mapped ? AF_INET6 : AF_INET);
    DAT_EP_PARAM p{};
    ASSERT_EQ(dat_ep_query(s.ep, DAT_EP_FIELD_ALL, &p), DAT_SUCCESS);
    EXPECT_TRUE(is_v4(p.remote_ia_address_ptr, peer_address()));
    EXPECT_TRUE(exchange(s, b, false, 0x00));
    ASSERT_TRUE(ch.send(1));
    EXPECT_EQ(reap(pid), 0);
}

class MappedSockets : public ::testing::Test {
  protected:
    // The fixture's IAs are IPv4 (own_address(), peer_address()): each case maps or not.
    void SetUp() override { unsetenv(kVar); }
    void TearDown() override { unsetenv(kVar); }
    // Mapping ends need IPv6 sockets; without them the provider keeps AF_INET by design.
    bool skip_without_mapped_sockets() {
        if (host_has_mapped_sockets()) return false;
        std::printf("skipped: this host has no AF_INET6 socket for mapped addresses\n");
        return true;
    }
};

TEST_F(MappedSockets, BothEndsMapped) {
    if (skip_without_mapped_sockets()) GTEST_SKIP() << "no IPv6 sockets";
    run(true, true);
}

TEST_F(MappedSockets, OnlyThePassiveEndMaps) {
    if (skip_without_mapped_sockets()) GTEST_SKIP() << "no IPv6 sockets";
    run(true, false);
}

TEST_F(MappedSockets, OnlyTheActiveEndMaps) {
    if (skip_without_mapped_sockets()) GTEST_SKIP() << "no IPv6 sockets";
    run(false, true);
}

TEST_F(MappedSockets, ByDefaultBothEndsAreAfInet) {
    run(false, false);
}

}  // namespace

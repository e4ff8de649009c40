// datbench's listener: an IPv4 client's connection is an AF_INET socket at both ends, as
// the tcp provider's connections are (docs/benchmarks.md, "Like with like: the socket's
// address family"); an IPv6 client is still served.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

#include <gtest/gtest.h>

#include "sock.hpp"

namespace datbench {
namespace {

int family_of(const Sock &s) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (getsockname(s.fd(), reinterpret_cast<sockaddr *>(&a), &len) != 0) return -1;
    return a.ss_family;
}

// A port free for IPv4 and IPv6 now: the kernel's pick for an ephemeral IPv4 bind, checked
// free for IPv6 too (a few tries; 0 if none).
std::uint16_t free_port() {
    for (int tries = 0; tries < 20; ++tries) {
        Sock s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in a{};
        a.sin_family = AF_INET;
        socklen_t len = sizeof a;
        if (bind(s.fd(), reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
            getsockname(s.fd(), reinterpret_cast<sockaddr *>(&a), &len) != 0)
            return 0;
        Sock s6(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!s6) return ntohs(a.sin_port);  // no IPv6 here
        int one = 1;
        setsockopt(s6.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        a6.sin6_port = a.sin_port;
        if (bind(s6.fd(), reinterpret_cast<sockaddr *>(&a6), sizeof a6) == 0)
            return ntohs(a.sin_port);
    }
    return 0;
}

// One byte from `client` arrives at `server` unchanged: the connection carries data.
void expect_byte_passes(const Sock &client, const Sock &server, char c) {
    char got = 0;
    ASSERT_TRUE(send_all(client, &c, 1));
    ASSERT_TRUE(recv_all(server, &got, 1));
    EXPECT_EQ(got, c);
}

// DAT_TCP_IPV4_SOCKETS for one test, whatever the environment had.
class RawSocketsEnv {
  public:
    explicit RawSocketsEnv(const char *value) {
        if (value)
            setenv(kVar, value, 1);
        else
            unsetenv(kVar);
    }
    ~RawSocketsEnv() { unsetenv(kVar); }

  private:
    static constexpr const char *kVar = "DAT_TCP_IPV4_SOCKETS";
};

TEST(Listener, AnIpv4ClientHasAnIpv4SocketAtBothEnds) {
    RawSocketsEnv env(nullptr);
    const std::uint16_t port = free_port();
    ASSERT_NE(port, 0);
    Listener l = listen_on(port);
    ASSERT_TRUE(l.v4) << "no IPv4 listener on port " << port;
    sockaddr_storage to{};
    ASSERT_TRUE(resolve("127.0.0.1", port, &to));
    Sock client = connect_to(to, 2000);
    ASSERT_TRUE(client);
    Sock server = accept_one(l, 2000);
    ASSERT_TRUE(server);
    EXPECT_EQ(family_of(client), AF_INET);
    // Not a v4-mapped AF_INET6 socket: that alone moves a loopback ping-pong on some
    // kernels, and the provider's sockets for an IPv4 IA are AF_INET.
    EXPECT_EQ(family_of(server), AF_INET);
    expect_byte_passes(client, server, 'x');
}

TEST(Listener, AnIpv6ClientIsServedToo) {
    RawSocketsEnv env(nullptr);
    const std::uint16_t port = free_port();
    ASSERT_NE(port, 0);
    Listener l = listen_on(port);
    if (!l.v6) GTEST_SKIP() << "no IPv6 on this host (the AF_INET6 listener could not bind)";
    sockaddr_storage to{};
    ASSERT_TRUE(resolve("::1", port, &to));
    Sock client = connect_to(to, 2000);
    if (!client) GTEST_SKIP() << "no ::1 to connect to on this host";
    Sock server = accept_one(l, 2000);
    ASSERT_TRUE(server);
    EXPECT_EQ(family_of(server), AF_INET6);
    expect_byte_passes(client, server, 'y');
}

// DAT_TCP_IPV4_SOCKETS=mapped puts the provider's IPv4 connections on IPv4-mapped AF_INET6
// sockets; the raw baseline follows, at both ends.
TEST(Listener, MappedAtBothEndsWhenTheProviderIsToldToMap) {
    const std::uint16_t port = free_port();
    ASSERT_NE(port, 0);
    RawSocketsEnv env("mapped");
    Listener l = listen_on(port);
    sockaddr_storage to{};
    ASSERT_TRUE(resolve("127.0.0.1", port, &to));
    Sock client = connect_to(to, 2000);
    Sock server = accept_one(l, 2000);
    if (!l.v6) GTEST_SKIP() << "no IPv6 sockets on this host: the provider uses AF_INET then too";
    EXPECT_EQ(socket_kind(client), "IPv4-mapped AF_INET6");
    EXPECT_EQ(socket_kind(server), "IPv4-mapped AF_INET6");
    EXPECT_FALSE(l.v4);
    ASSERT_TRUE(client);
    ASSERT_TRUE(server);
    for (const Sock *s : {&client, &server}) {
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        ASSERT_EQ(getsockname(s->fd(), reinterpret_cast<sockaddr *>(&a), &len), 0);
        ASSERT_EQ(a.ss_family, AF_INET6);
        EXPECT_TRUE(IN6_IS_ADDR_V4MAPPED(&reinterpret_cast<const sockaddr_in6 *>(&a)->sin6_addr));
    }
    expect_byte_passes(client, server, 'z');
}

// A port another program holds for IPv4 is refused, not served on IPv6 alone (a client of
// 127.0.0.1 would reach the other program while we wait for it).
TEST(Listener, APortTakenForIpv4IsRefused) {
    RawSocketsEnv env(nullptr);
    const std::uint16_t port = free_port();
    ASSERT_NE(port, 0);
    Sock other(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ASSERT_EQ(bind(other.fd(), reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    ASSERT_EQ(listen(other.fd(), 1), 0);
    EXPECT_FALSE(listen_on(port));
    RawSocketsEnv mapped("mapped");
    EXPECT_FALSE(listen_on(port));
}

TEST(Listener, NobodyConnectingGivesNoSocketAfterTheTimeout) {
    RawSocketsEnv env(nullptr);
    const std::uint16_t port = free_port();
    ASSERT_NE(port, 0);
    Listener l = listen_on(port);
    ASSERT_TRUE(l);
    const auto t0 = std::chrono::steady_clock::now();
    Sock s = accept_one(l, 100);
    const auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_FALSE(s);
    EXPECT_EQ(errno, 0) << "a timeout is not an error";
    EXPECT_GE(waited, std::chrono::milliseconds(90));
    EXPECT_FALSE(accept_one(Listener(), 0));
}

}  // namespace
}  // namespace datbench

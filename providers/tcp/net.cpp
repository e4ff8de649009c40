#include "tcp/net.hpp"
#include "util/sys_io.hpp"
#include "tunables/tunables.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "trace/trace.hpp"
#include "util/netdev.hpp"
#include "util/status.hpp"

namespace opendat::tcp {

void Fd::reset() noexcept {
    if (fd_ >= 0) sys::close(fd_);
    fd_ = -1;
}

DAT_RETURN parse_ia_params(const std::string &params, IaParams *out) noexcept {
    std::string host;
    long port = 0;
    if (!util::split_ia_params(params, &host, &port) || port < 0 || port > 65535)
        return util::err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_MALFORMED);
    if (!util::ia_address(host, &out->addr, &out->addr_len))
        return util::err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
    out->port_base = static_cast<std::uint16_t>(port);
    return DAT_SUCCESS;
}

WireTerms wire_offer_from_env() noexcept {
    WireTerms t{kWireVersion, kCapsImplemented};
    const long v = tunables::read_int(tunables::kTcpWireVersion);
    if (v >= 1 && v < kWireVersion) t.version = static_cast<std::uint8_t>(v);
    if (t.version < 2) t.caps = 0;
    return t;
}

DeadPeerPolicy dead_peer_policy_from_env() noexcept {
    DeadPeerPolicy d;
    const tunables::Keepalive k = tunables::read_keepalive(tunables::kTcpKeepalive);
    d.keepalive = k.on;
    if (k.on) d.idle = k.idle, d.interval = k.interval, d.probes = k.probes;
    d.user_timeout_ms = static_cast<int>(tunables::read_int(tunables::kTcpUserTimeoutMs));
    return d;
}

namespace {

bool is_v4_mapped(const sockaddr_storage &a) noexcept {
    return a.ss_family == AF_INET6 &&
           IN6_IS_ADDR_V4MAPPED(&reinterpret_cast<const sockaddr_in6 *>(&a)->sin6_addr);
}

// An AF_INET6 socket that takes IPv4-mapped addresses whatever net.ipv6.bindv6only says.
Fd dual_stack_socket(int type) noexcept {
    Fd fd(socket(AF_INET6, type, 0));
    int zero = 0;
    if (fd && setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero) != 0) fd.reset();
    return fd;
}

}  // namespace

bool mapped_sockets_from_env(const sockaddr_storage &ia_addr) noexcept {
    if (tunables::read_choice(tunables::kTcpIpv4Sockets) != 1) return false;  // "inet,mapped"
    if (ia_addr.ss_family != AF_INET) return false;                           // nothing to map
    if (!dual_stack_socket(SOCK_STREAM | SOCK_CLOEXEC)) {
        // Asked for and not given: said even at the default trace level (config_warning).
        const int e = errno;
        trace::dapl_domain().config_warning(
            "tcp",
            "DAT_TCP_IPV4_SOCKETS=mapped: no IPv6 socket for mapped addresses here (%s); "
            "this IA uses AF_INET sockets",
            std::strerror(e));
        return false;
    }
    return true;
}

sockaddr_storage socket_address(const sockaddr_storage &addr, bool mapped) noexcept {
    if (!mapped || addr.ss_family != AF_INET) return addr;
    const auto *a4 = reinterpret_cast<const sockaddr_in *>(&addr);
    sockaddr_storage out{};
    auto *a6 = reinterpret_cast<sockaddr_in6 *>(&out);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = a4->sin_port;
    a6->sin6_addr.s6_addr[10] = 0xff;  // ::ffff:a.b.c.d (RFC 4291, 2.5.5.2)
    a6->sin6_addr.s6_addr[11] = 0xff;
    std::memcpy(&a6->sin6_addr.s6_addr[12], &a4->sin_addr, 4);
    return out;
}

void unmap_v4(sockaddr_storage *addr) noexcept {
    if (!is_v4_mapped(*addr)) return;
    const sockaddr_in6 a6 = *reinterpret_cast<const sockaddr_in6 *>(addr);
    sockaddr_storage out{};
    auto *a4 = reinterpret_cast<sockaddr_in *>(&out);
    a4->sin_family = AF_INET;
    a4->sin_port = a6.sin6_port;
    std::memcpy(&a4->sin_addr, &a6.sin6_addr.s6_addr[12], 4);
    *addr = out;
}

Fd stream_socket(const sockaddr_storage &addr, bool mapped) noexcept {
    constexpr int kType = SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
    if (mapped && is_v4_mapped(addr)) return dual_stack_socket(kType);
    return Fd(socket(addr.ss_family, kType, 0));
}

void tune_socket(int fd, const DeadPeerPolicy &p) noexcept {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (p.keepalive) {
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &p.idle, sizeof p.idle);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &p.interval, sizeof p.interval);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &p.probes, sizeof p.probes);
    }
    if (p.user_timeout_ms > 0) {
        unsigned ut = static_cast<unsigned>(p.user_timeout_ms);
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

}  // namespace opendat::tcp

#include "tcp/net.hpp"
#include "tunables/tunables.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "util/netdev.hpp"
#include "util/status.hpp"

namespace opendat::tcp {

void Fd::reset() noexcept {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
}

DAT_RETURN parse_ia_params(const std::string &params, IaParams *out) noexcept {
    try {
        std::istringstream in(params);
        std::string host;
        long port = 0;
        in >> host;
        if (host.empty()) return util::err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_MALFORMED);
        if (!(in >> port)) port = 0;
        if (port < 0 || port > 65535)
            return util::err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_MALFORMED);
        out->port_base = static_cast<std::uint16_t>(port);
        auto *s4 = reinterpret_cast<sockaddr_in *>(&out->addr);
        auto *s6 = reinterpret_cast<sockaddr_in6 *>(&out->addr);
        if (inet_pton(AF_INET, host.c_str(), &s4->sin_addr) == 1) {
            s4->sin_family = AF_INET;
            out->addr_len = sizeof(sockaddr_in);
            return DAT_SUCCESS;
        }
        if (inet_pton(AF_INET6, host.c_str(), &s6->sin6_addr) == 1) {
            s6->sin6_family = AF_INET6;
            out->addr_len = sizeof(sockaddr_in6);
            return DAT_SUCCESS;
        }
        if (util::netdev_address(host, &out->addr, &out->addr_len)) {
            set_port(&out->addr, 0);
            return DAT_SUCCESS;
        }
        addrinfo hints{};
        hints.ai_socktype = SOCK_STREAM;
        addrinfo *res = nullptr;
        if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr)
            return util::err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
        std::memcpy(&out->addr, res->ai_addr, res->ai_addrlen);
        out->addr_len = static_cast<socklen_t>(res->ai_addrlen);
        freeaddrinfo(res);
        set_port(&out->addr, 0);
        return DAT_SUCCESS;
    } catch (...) {
        return util::kNoMemory;
    }
}

bool qual_to_port(DAT_CONN_QUAL qual, std::uint16_t base, std::uint16_t *port) noexcept {
    if (qual > 65535 || qual + base > 65535) return false;
    *port = static_cast<std::uint16_t>(qual + base);
    return true;
}

socklen_t sockaddr_len(const sockaddr *sa) noexcept {
    return sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

void set_port(sockaddr_storage *ss, std::uint16_t port) noexcept {
    if (ss->ss_family == AF_INET6)
        reinterpret_cast<sockaddr_in6 *>(ss)->sin6_port = htons(port);
    else
        reinterpret_cast<sockaddr_in *>(ss)->sin_port = htons(port);
}

std::uint16_t get_port(const sockaddr_storage &ss) noexcept {
    if (ss.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(&ss)->sin6_port);
    return ntohs(reinterpret_cast<const sockaddr_in *>(&ss)->sin_port);
}

DeadPeerPolicy dead_peer_policy_from_env() noexcept {
    DeadPeerPolicy d;
    const tunables::Keepalive k = tunables::read_keepalive(tunables::kTcpKeepalive);
    d.keepalive = k.on;
    if (k.on) d.idle = k.idle, d.interval = k.interval, d.probes = k.probes;
    d.user_timeout_ms = static_cast<int>(tunables::read_int(tunables::kTcpUserTimeoutMs));
    return d;
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

const char *addr_str(const sockaddr *sa, char *buf, std::size_t len) noexcept {
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        auto *s = reinterpret_cast<const sockaddr_in *>(sa);
        inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
        port = ntohs(s->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        auto *s = reinterpret_cast<const sockaddr_in6 *>(sa);
        inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
        port = ntohs(s->sin6_port);
    }
    std::snprintf(buf, len, "%s:%u", host, port);
    return buf;
}

}  // namespace opendat::tcp

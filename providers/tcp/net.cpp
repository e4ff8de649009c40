#include "tcp/net.hpp"
#include "util/sys_io.hpp"
#include "tunables/tunables.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

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

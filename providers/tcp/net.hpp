// Socket helpers: the IA address from ia_params, port mapping, socket setup.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include <dat2/udat.h>

#include "tcp/peer_limits.hpp"
#include "tcp/wire.hpp"
#include "util/netdev.hpp"

namespace opendat::tcp {

// RAII file descriptor.
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(Fd &&o) noexcept : fd_(o.release()) {}
    Fd &operator=(Fd &&o) noexcept {
        if (this != &o) {
            reset();
            fd_ = o.release();
        }
        return *this;
    }
    int get() const noexcept { return fd_; }
    int release() noexcept {
        int f = fd_;
        fd_ = -1;
        return f;
    }
    void reset() noexcept;
    explicit operator bool() const noexcept { return fd_ >= 0; }

  private:
    int fd_ = -1;
};

// Dead-peer detection for every connection of an IA, read from the environment when the
// IA is opened:
//   DAT_TCP_KEEPALIVE = "<idle s>,<interval s>,<probes>" (default 10,2,5; "0" = off)
//   DAT_TCP_USER_TIMEOUT_MS = how long sent data may stay unacknowledged (default 0 =
//   the kernel's default)
// Either way a dead peer ends the connection as DAT_CONNECTION_EVENT_BROKEN.
struct DeadPeerPolicy {
    int idle = 10, interval = 2, probes = 5;
    bool keepalive = true;
    int user_timeout_ms = 0;
};
DeadPeerPolicy dead_peer_policy_from_env() noexcept;
// The highest wire version (DAT_TCP_WIRE_VERSION lowers it, e.g. to 1 to speak exactly as a
// version-1 peer during a rolling upgrade) and the capabilities implemented (none below 2).
WireTerms wire_offer_from_env() noexcept;

struct IaParams {
    sockaddr_storage addr{};  // port field 0
    socklen_t addr_len = 0;
    std::uint16_t port_base = 0;
    DeadPeerPolicy dead_peer;
    // Read once when the IA opens, like dead_peer: connections and listeners use these.
    PeerLimits limits;    // limits per peer (DAT_TCP_HANDSHAKE_MS, ...)
    WireTerms offer;      // the wire version and capabilities this side offers
    bool mapped = false;  // DAT_TCP_IPV4_SOCKETS=mapped, and this host has IPv6 sockets
};

// DAT_TCP_IPV4_SOCKETS=mapped: an IPv4 IA's sockets are AF_INET6 ones with IPv4-mapped
// addresses (::ffff:a.b.c.d). The packets are IPv4 all the same, so either end may use
// either kind; only the kernel's code path changes, and on loopback it measured faster on
// some kernels (docs/benchmarks.md, "Like with like: the socket's address family").
// Addresses the consumer sees stay AF_INET: a mapped one is turned back where it comes in
// (unmap_v4). True if asked for, the IA's address is IPv4 and an AF_INET6 socket that
// takes mapped addresses can be made here (otherwise a warning line, shown at every trace
// level, says why not). An IPv6 IA is left exactly as it was.
bool mapped_sockets_from_env(const sockaddr_storage &ia_addr) noexcept;
// `addr` as the socket that reaches it sees it: an AF_INET address in its IPv4-mapped
// AF_INET6 form when `mapped`; anything else unchanged.
sockaddr_storage socket_address(const sockaddr_storage &addr, bool mapped) noexcept;
// An IPv4-mapped AF_INET6 address back to AF_INET; anything else is left alone.
void unmap_v4(sockaddr_storage *addr) noexcept;
// A non-blocking, close-on-exec stream socket of addr's family; when `mapped`, for an
// IPv4-mapped address, an AF_INET6 socket that takes mapped addresses (IPV6_V6ONLY off).
// Not yet tuned (tune_socket).
Fd stream_socket(const sockaddr_storage &addr, bool mapped) noexcept;

// ia_params = "<netdev | IPv4 | IPv6 | hostname> [<port base>]". The port base is added to
// every connection qualifier to get the TCP port (0: the qualifier is the port), so
// several IA names can share a host without their service points colliding.
DAT_RETURN parse_ia_params(const std::string &params, IaParams *out) noexcept;

// TCP port for a connection qualifier, or false if it does not fit in 16 bits.
inline bool qual_to_port(DAT_CONN_QUAL qual, std::uint16_t base, std::uint16_t *port) noexcept {
    if (qual > 65535 || qual + base > 65535) return false;
    *port = static_cast<std::uint16_t>(qual + base);
    return true;
}

// Qualifiers beyond the port range (qual + base > 65535: a 64-bit DAT qualifier, an IB
// service ID) are listened for on a demultiplexing port: the listener routes a CONN_REQ by
// the full qualifier its `addr` field carries. The port is a hash of (qualifier, base)
// into kDemuxPortFirst .. 65535, above Linux's default ephemeral range (32768..60999), so
// outgoing connections do not take it. Two processes whose qualifiers hash to the same
// port cannot share it: the second one's PSP/RSP gets DAT_CONN_QUAL_IN_USE (never a silent
// misroute). Both sides compute it the same way (docs/tcp-provider.md).
constexpr std::uint16_t kDemuxPortFirst = 61000;
constexpr std::uint32_t kDemuxPortCount = 65536u - kDemuxPortFirst;  // 4536 ports
inline std::uint16_t demux_port(DAT_CONN_QUAL qual, std::uint16_t base) noexcept {
    // The splitmix64 finalizer of qual + base: every bit of the qualifier moves the port.
    std::uint64_t z = static_cast<std::uint64_t>(qual) + base;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<std::uint16_t>(kDemuxPortFirst + z % kDemuxPortCount);
}
// The TCP port a qualifier is listened for on / connected to: its own port when it fits
// (true), else its demultiplexing port (false).
inline bool listen_port(DAT_CONN_QUAL qual, std::uint16_t base, std::uint16_t *port) noexcept {
    if (qual_to_port(qual, base, port)) return true;
    *port = demux_port(qual, base);
    return false;
}

// Non-blocking, close-on-exec, TCP_NODELAY; keepalive so a dead peer is noticed.
void tune_socket(int fd, const DeadPeerPolicy &policy) noexcept;

// The sockaddr helpers are util's (util/netdev.hpp).
using util::addr_str;
using util::get_port;
using util::set_port;
using util::sockaddr_len;

}  // namespace opendat::tcp

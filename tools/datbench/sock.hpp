// Plain blocking TCP sockets: the control connection between the two peers, and the
// raw-TCP baseline.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace datbench {

// RAII socket descriptor.
class Sock {
  public:
    Sock() = default;
    explicit Sock(int fd) : fd_(fd) {}
    ~Sock();
    Sock(Sock &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    Sock &operator=(Sock &&o) noexcept;
    Sock(const Sock &) = delete;
    Sock &operator=(const Sock &) = delete;
    int fd() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }

  private:
    int fd_ = -1;
};

// Resolves host (numeric or name) into *addr; port filled in.
bool resolve(const std::string &host, std::uint16_t port, sockaddr_storage *addr);
// The raw baseline's sockets are of the kind the tcp provider's are: an IPv4 connection is
// AF_INET at both ends, or, when DAT_TCP_IPV4_SOCKETS=mapped tells the provider to use
// IPv4-mapped AF_INET6 sockets, that at both ends. On some kernels the kind alone moves a
// loopback ping-pong by half a microsecond each way, per end (docs/benchmarks.md, "Like with
// like: the socket's address family").
bool raw_sockets_mapped();  // DAT_TCP_IPV4_SOCKETS=mapped

// A port listened on by one socket per address family (an IPv4 client lands on the AF_INET
// one), or, when raw_sockets_mapped(), by one dual-stack AF_INET6 socket.
struct Listener {
    // v4 and an IPV6_V6ONLY v6 (v6 missing where the host has no IPv6); or, mapped, v6 alone
    // (dual-stack), or v4 alone where the host has no IPv6.
    Sock v4, v6;
    explicit operator bool() const noexcept { return v4 || v6; }
};
// Any address, SO_REUSEADDR. Empty (errno set) if a socket it needs cannot listen: a port
// another program holds for either family is refused, not half served.
Listener listen_on(std::uint16_t port, int backlog = 4);
// The next connection on either socket (nothing within timeout_ms: an empty Sock, errno 0;
// a failure: an empty Sock, errno set).
Sock accept_one(const Listener &listener, int timeout_ms);
// Where a raw client connects to `addr`, and with what kind of socket: an IPv4 address in its
// IPv4-mapped AF_INET6 form when raw_sockets_mapped() and the host has IPv6 sockets (else
// AF_INET, as the provider falls back to). Nullopt: no socket can be made at all.
struct RawTarget {
    sockaddr_storage addr;
    bool mapped;  // an AF_INET6 socket with IPV6_V6ONLY off
};
std::optional<RawTarget> raw_target(const sockaddr_storage &addr);
Sock raw_socket(const RawTarget &t, int type);  // of t's family, set up for it
socklen_t addr_len(const sockaddr_storage &a);
// Connects, retrying refused attempts until timeout_ms (the peer may still be starting),
// through raw_target(addr).
Sock connect_to(const sockaddr_storage &addr, int timeout_ms);
// What kind of socket `s` is: "AF_INET", "IPv4-mapped AF_INET6", "AF_INET6".
std::string socket_kind(const Sock &s);
void set_nodelay(const Sock &s);

bool send_all(const Sock &s, const void *p, std::size_t n);
bool recv_all(const Sock &s, void *p, std::size_t n);
// Busy-polled: non-blocking calls retried until done, the raw-TCP twin of a polling DAT
// consumer (no sleep, no wake-up). `spin` false: the blocking calls above.
bool send_all(const Sock &s, const void *p, std::size_t n, bool spin);
bool recv_all(const Sock &s, void *p, std::size_t n, bool spin);
// Binds the calling process to one CPU (cpu < 0: leaves it alone).
bool pin_to_cpu(int cpu);
// A one-byte exchange: both sides have reached the same point.
bool barrier(const Sock &s);

}  // namespace datbench

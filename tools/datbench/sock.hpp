// Plain blocking TCP sockets: the control connection between the two peers, and the
// raw-TCP baseline.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
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
    Sock v4, v6;  // v6 is IPV6_V6ONLY; either may be missing (no IPv6, or no IPv4)
    explicit operator bool() const noexcept { return v4 || v6; }
};
Listener listen_on(std::uint16_t port, int backlog = 4);  // any address, SO_REUSEADDR
// The next connection on either socket (nothing within timeout_ms: an empty Sock).
Sock accept_one(const Listener &listener, int timeout_ms);
// Connects, retrying refused attempts until timeout_ms (the peer may still be starting).
// An IPv4 address is reached through an IPv4-mapped AF_INET6 socket when raw_sockets_mapped().
Sock connect_to(const sockaddr_storage &addr, int timeout_ms);
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

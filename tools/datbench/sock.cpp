#include "sock.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

namespace datbench {

Sock::~Sock() {
    if (fd_ >= 0) close(fd_);
}

Sock &Sock::operator=(Sock &&o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) close(fd_);
        fd_ = o.fd_;
        o.fd_ = -1;
    }
    return *this;
}

bool resolve(const std::string &host, std::uint16_t port, sockaddr_storage *addr) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 ||
        res == nullptr)
        return false;
    std::memset(addr, 0, sizeof *addr);
    std::memcpy(addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return true;
}

namespace {

// A listener on any address of `family`; an empty Sock with errno set if it cannot be made.
Sock listen_family(int family, std::uint16_t port, int backlog, bool v6only = true) {
    Sock s(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s) return s;
    int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage a{};
    socklen_t len;
    if (family == AF_INET6) {
        // IPv6 clients only, unless mapped: IPv4 ones go to the AF_INET socket (sock.hpp).
        const int only = v6only ? 1 : 0;
        setsockopt(s.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof only);
        auto *a6 = reinterpret_cast<sockaddr_in6 *>(&a);
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        a6->sin6_addr = in6addr_any;
        len = sizeof *a6;
    } else {
        auto *a4 = reinterpret_cast<sockaddr_in *>(&a);
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        len = sizeof *a4;
    }
    if (bind(s.fd(), reinterpret_cast<sockaddr *>(&a), len) != 0 || listen(s.fd(), backlog) != 0)
        return Sock();
    return s;
}

// This host has no IPv6 (the kernel's, or none configured): the one failure that leaves
// IPv4 alone to serve, as the provider then does too.
bool no_ipv6(int err) {
    return err == EAFNOSUPPORT || err == EADDRNOTAVAIL;
}

}  // namespace

bool raw_sockets_mapped() {
    const char *v = std::getenv("DAT_TCP_IPV4_SOCKETS");
    return v != nullptr && std::strcmp(v, "mapped") == 0;
}

Listener listen_on(std::uint16_t port, int backlog) {
    Listener l;
    if (raw_sockets_mapped()) {
        l.v6 = listen_family(AF_INET6, port, backlog, false);
        if (l.v6) return l;
        if (!no_ipv6(errno)) return Listener();  // the port is taken, or worse
    }
    // Both or nothing: a port another program holds for IPv4 would otherwise leave us
    // waiting, on IPv6 alone, for a client that reaches the other program.
    l.v4 = listen_family(AF_INET, port, backlog);
    if (!l.v4) return Listener();
    l.v6 = listen_family(AF_INET6, port, backlog);
    if (!l.v6 && !no_ipv6(errno)) return Listener();
    return l;
}

Sock accept_one(const Listener &listener, int timeout_ms) {
    pollfd p[2];
    nfds_t n = 0;
    for (const Sock *s : {&listener.v4, &listener.v6})
        if (*s) p[n++] = pollfd{s->fd(), POLLIN, 0};
    if (n == 0) return Sock();
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        const int r = poll(p, n, left.count() > 0 ? static_cast<int>(left.count()) : 0);
        if (r < 0 && errno != EINTR) return Sock();
        for (nfds_t i = 0; r > 0 && i < n; ++i) {
            if (!(p[i].revents & POLLIN)) continue;
            int c = accept4(p[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (c >= 0) return Sock(c);
            // A client that gave up before we took it: wait for the next one.
            if (errno != ECONNABORTED && errno != EINTR && errno != EAGAIN) return Sock();
        }
        if (left.count() <= 0) {
            errno = 0;  // nothing came: not an error of ours
            return Sock();
        }
    }
}

std::optional<RawTarget> raw_target(const sockaddr_storage &addr) {
    RawTarget t{addr, false};
    if (addr.ss_family == AF_INET && raw_sockets_mapped()) {
        const auto *a4 = reinterpret_cast<const sockaddr_in *>(&addr);
        sockaddr_storage to{};
        auto *a6 = reinterpret_cast<sockaddr_in6 *>(&to);
        a6->sin6_family = AF_INET6;
        a6->sin6_port = a4->sin_port;
        a6->sin6_addr.s6_addr[10] = 0xff;  // ::ffff:a.b.c.d
        a6->sin6_addr.s6_addr[11] = 0xff;
        std::memcpy(&a6->sin6_addr.s6_addr[12], &a4->sin_addr, 4);
        Sock probe(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (probe) {
            t.addr = to;
            t.mapped = true;
        } else if (!no_ipv6(errno)) {
            return std::nullopt;
        }  // no IPv6 here: AF_INET, as the provider falls back to
    }
    return t;
}

Sock raw_socket(const RawTarget &t, int type) {
    Sock s(socket(t.addr.ss_family, type, 0));
    if (s && t.mapped) {
        int zero = 0;  // mapped addresses, whatever net.ipv6.bindv6only says
        if (setsockopt(s.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero) != 0) return Sock();
    }
    return s;
}

socklen_t addr_len(const sockaddr_storage &a) {
    return a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

Sock connect_to(const sockaddr_storage &addr, int timeout_ms) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    const std::optional<RawTarget> t = raw_target(addr);
    if (!t) return Sock();
    for (;;) {
        Sock s = raw_socket(*t, SOCK_STREAM | SOCK_CLOEXEC);
        if (!s) return s;
        if (connect(s.fd(), reinterpret_cast<const sockaddr *>(&t->addr), addr_len(t->addr)) == 0)
            return s;
        if ((errno != ECONNREFUSED && errno != ETIMEDOUT) || std::chrono::steady_clock::now() > end)
            return Sock();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::string socket_kind(const Sock &s) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (!s || getsockname(s.fd(), reinterpret_cast<sockaddr *>(&a), &len) != 0) return "unknown";
    if (a.ss_family == AF_INET) return "AF_INET";
    if (a.ss_family == AF_INET6)
        return IN6_IS_ADDR_V4MAPPED(&reinterpret_cast<const sockaddr_in6 *>(&a)->sin6_addr)
                   ? "IPv4-mapped AF_INET6"
                   : "AF_INET6";
    return "other";
}

void set_nodelay(const Sock &s) {
    int one = 1;
    setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool send_all(const Sock &s, const void *p, std::size_t n) {
    const char *c = static_cast<const char *>(p);
    while (n > 0) {
        ssize_t w = send(s.fd(), c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

bool recv_all(const Sock &s, void *p, std::size_t n) {
    char *c = static_cast<char *>(p);
    while (n > 0) {
        ssize_t r = recv(s.fd(), c, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        c += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

namespace {
// Retries a non-blocking call until it moved everything (EAGAIN: try again at once).
template <class Io, class Ptr>
bool spin_all(Io io, Ptr c, std::size_t n) {
    while (n > 0) {
        ssize_t r = io(c, n);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
        if (r <= 0) return false;
        c += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}
}  // namespace

bool send_all(const Sock &s, const void *p, std::size_t n, bool spin) {
    if (!spin) return send_all(s, p, n);
    return spin_all([&](const char *c,
                        std::size_t k) { return send(s.fd(), c, k, MSG_NOSIGNAL | MSG_DONTWAIT); },
                    static_cast<const char *>(p), n);
}

bool recv_all(const Sock &s, void *p, std::size_t n, bool spin) {
    if (!spin) return recv_all(s, p, n);
    return spin_all([&](char *c, std::size_t k) { return recv(s.fd(), c, k, MSG_DONTWAIT); },
                    static_cast<char *>(p), n);
}

bool pin_to_cpu(int cpu) {
    if (cpu < 0) return true;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0;
}

bool barrier(const Sock &s) {
    char out = 'B', in = 0;
    return send_all(s, &out, 1) && recv_all(s, &in, 1) && in == 'B';
}

}  // namespace datbench

// The raw-TCP twin of DAT connection set-up, and the process figures datscale reports.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "scale.hpp"

namespace datbench::scale {

namespace {

constexpr int kStallMs = 30'000;  // no progress for this long: the peer is gone

// Closed with a reset, not a FIN: N sockets in TIME_WAIT would make the next run's
// connects search longer for a free local port (and the DAT run shares the port range).
void reset_on_close(const Sock &s) {
    linger l{1, 0};
    setsockopt(s.fd(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

}  // namespace

std::uint64_t raise_fd_limit() {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
    if (r.rlim_cur < r.rlim_max) {
        rlimit want = r;
        want.rlim_cur = r.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &want) == 0) r = want;
    }
    return r.rlim_cur;
}

std::uint64_t rss_kib() {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
    return 0;
}

bool raw_connect(const sockaddr_storage &server, std::uint16_t port, std::uint32_t n,
                 std::uint32_t window, std::vector<Sock> *out) {
    sockaddr_storage server_port = server;
    if (server_port.ss_family == AF_INET6)
        reinterpret_cast<sockaddr_in6 *>(&server_port)->sin6_port = htons(port);
    else
        reinterpret_cast<sockaddr_in *>(&server_port)->sin_port = htons(port);
    // The provider's kind of socket (DAT_TCP_IPV4_SOCKETS), as the server's listen_on.
    const std::optional<RawTarget> t = raw_target(server_port);
    if (!t) {
        std::perror("datscale: raw socket");
        return false;
    }
    const sockaddr_storage &a = t->addr;
    const socklen_t len = addr_len(a);
    std::vector<pollfd> inflight;  // connecting; the sockets themselves are in *out
    out->reserve(out->size() + n);
    std::uint32_t started = 0, done = 0;
    while (done < n) {
        while (started < n && inflight.size() < window) {
            Sock s = raw_socket(*t, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (!s) {
                std::perror("datscale: raw socket");
                return false;
            }
            if (connect(s.fd(), reinterpret_cast<const sockaddr *>(&a), len) != 0 &&
                errno != EINPROGRESS) {
                std::perror("datscale: raw connect");
                return false;
            }
            reset_on_close(s);
            inflight.push_back({s.fd(), POLLOUT, 0});
            out->push_back(std::move(s));
            ++started;
        }
        int r = poll(inflight.data(), inflight.size(), kStallMs);
        if (r <= 0) {
            std::fprintf(stderr, "datscale: raw connects stalled\n");
            return false;
        }
        for (std::size_t i = inflight.size(); i-- > 0;) {
            if (inflight[i].revents == 0) continue;
            int err = 0;
            socklen_t el = sizeof err;
            getsockopt(inflight[i].fd, SOL_SOCKET, SO_ERROR, &err, &el);
            if (err != 0) {
                std::fprintf(stderr, "datscale: raw connect: %s\n", std::strerror(err));
                return false;
            }
            inflight[i] = inflight.back();
            inflight.pop_back();
            ++done;
        }
    }
    return true;
}

bool raw_accept(const Listener &listener, std::uint32_t n, std::vector<Sock> *out) {
    out->reserve(out->size() + n);
    for (std::uint32_t i = 0; i < n; ++i) {
        errno = 0;
        Sock s = accept_one(listener, kStallMs);
        if (!s) {
            if (errno != 0)
                std::perror("datscale: raw accept");
            else
                std::fprintf(stderr, "datscale: raw accept stalled after %u\n", i);
            return false;
        }
        reset_on_close(s);
        out->push_back(std::move(s));
    }
    return true;
}

}  // namespace datbench::scale

#include "raw_peer.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace attack {

using namespace opendat::tcp;

int connect_tcp(in_addr addr, std::uint16_t port, int rcvbuf) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    sin.sin_addr = addr;
    if (::connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int listen_tcp(in_addr addr, std::uint16_t *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = addr;
    socklen_t len = sizeof sin;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0 ||
        ::listen(fd, 16) != 0 || getsockname(fd, reinterpret_cast<sockaddr *>(&sin), &len) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    *port = ntohs(sin.sin_port);
    return fd;
}

bool send_all(int fd, const void *p, std::size_t n) {
    const char *c = static_cast<const char *>(p);
    while (n > 0) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k <= 0) return false;
        c += k;
        n -= static_cast<std::size_t>(k);
    }
    return true;
}

bool recv_all(int fd, void *p, std::size_t n, int timeout_ms) {
    char *c = static_cast<char *>(p);
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (n > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        end - std::chrono::steady_clock::now())
                        .count();
        pollfd pfd{fd, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) != 1) return false;
        ssize_t k = recv(fd, c, n, 0);
        if (k <= 0) return false;
        c += k;
        n -= static_cast<std::size_t>(k);
    }
    return true;
}

bool wait_closed(int fd, int timeout_ms, std::size_t *bytes) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::vector<char> sink(1 << 16);
    std::size_t total = 0;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        end - std::chrono::steady_clock::now())
                        .count();
        pollfd pfd{fd, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) != 1) {
            if (bytes != nullptr) *bytes = total;
            return false;
        }
        ssize_t k = recv(fd, sink.data(), sink.size(), 0);
        if (k <= 0) {
            if (bytes != nullptr) *bytes = total;
            return true;
        }
        total += static_cast<std::size_t>(k);
    }
}

bool send_conn_req(int fd) {
    FrameHeader h = make_header(kConnReq, 0);
    return send_all(fd, &h, sizeof h);
}

bool send_conn_req(int fd, WireTerms terms) {
    FrameHeader h = make_handshake(kConnReq, 0, terms);
    return send_all(fd, &h, sizeof h);
}

bool expect_conn_acc(int fd) {
    FrameHeader h{};
    if (!recv_all(fd, &h, sizeof h)) return false;
    if (h.op != kConnAcc) return false;
    std::vector<char> pdata(h.length);
    return h.length == 0 || recv_all(fd, pdata.data(), pdata.size());
}

bool answer_conn_req(int fd) {
    FrameHeader h{};
    if (!recv_all(fd, &h, sizeof h) || h.op != kConnReq) return false;
    std::vector<char> pdata(h.length);
    if (h.length > 0 && !recv_all(fd, pdata.data(), pdata.size())) return false;
    FrameHeader acc = make_header(kConnAcc, 0);
    return send_all(fd, &acc, sizeof acc);
}

double cpu_seconds(pid_t pid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    FILE *f = std::fopen(path, "r");
    if (f == nullptr) return -1;
    char buf[1024];
    std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    // Fields after the command name (which may contain spaces): state is field 3,
    // utime field 14, stime field 15.
    const char *p = std::strrchr(buf, ')');
    if (p == nullptr) return -1;
    unsigned long long ut = 0, st = 0;
    if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return static_cast<double>(ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace attack

#include "fault_relay.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <vector>

namespace faults {

namespace {

constexpr std::size_t kReadSize = 64 * 1024;
// What one direction may hold before the relay stops reading from its source: TCP's flow
// control then reaches back to the sender, as it would through a real slow hop.
constexpr std::size_t kMaxQueued = 256 * 1024;
// Writes per direction per loop turn (one-byte segments would otherwise starve the rest).
constexpr int kWritesPerTurn = 4096;
constexpr std::size_t kNever = ~std::size_t{0};

struct Chunk {
    std::vector<unsigned char> data;
    std::size_t off = 0;
    Clock::time_point due;
};

// One direction of a relayed connection: bytes read from `in` wait in `q` until due, then
// go out on `out`.
struct Flow {
    int in = -1;
    int out = -1;
    std::deque<Chunk> q;
    std::size_t queued = 0;
    bool in_eof = false;    // the source ended its stream
    bool shut = false;      // we sent FIN on `out`
    bool dropping = false;  // half-closed by the fault: what arrives is dropped
    Clock::time_point last_due{};
};

struct Pair {
    int fd[2] = {-1, -1};  // [0] the client's connection, [1] ours to the server
    Flow flow[2];          // indexed by Dir
    bool dead = false;
};

void set_int(int fd, int level, int opt, int v) {
    setsockopt(fd, level, opt, &v, sizeof v);
}

// Closes with an RST instead of a FIN.
void reset_close(int fd) {
    linger l{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

}  // namespace

std::string Fault::describe() const {
    auto mib = [](std::size_t b) {
        char s[32];
        if (b >= 1024 * 1024 && b % (1024 * 1024) == 0)
            std::snprintf(s, sizeof s, "%zuMiB", b / (1024 * 1024));
        else if (b >= 1024 && b % 1024 == 0)
            std::snprintf(s, sizeof s, "%zuKiB", b / 1024);
        else
            std::snprintf(s, sizeof s, "%zuB", b);
        return std::string(s);
    };
    const char *toward = dir == Dir::ToServer ? "server" : "client";
    char s[160];
    switch (kind) {
        case Kind::None:
            return "none";
        case Kind::Delay:
            if (jitter_ms == 0)
                std::snprintf(s, sizeof s, "delay %dms", delay_ms);
            else
                std::snprintf(s, sizeof s, "delay %dms+jitter %dms", delay_ms, jitter_ms);
            return s;
        case Kind::Segments:
            if (random_segments) return "segments of 1.." + mib(segment);
            return segment == 1 ? std::string("one-byte segments") : "segments of " + mib(segment);
        case Kind::Stall:
            if (stall_every > 0)
                std::snprintf(s, sizeof s, "stall %dms every %s", stall_ms,
                              mib(stall_every).c_str());
            else
                std::snprintf(s, sizeof s, "stall %dms after %s to %s", stall_ms,
                              mib(after_bytes).c_str(), toward);
            return s;
        case Kind::Reset:
            return "reset after " + mib(after_bytes) + " to " + toward;
        case Kind::HalfClose:
            return "half-close toward " + std::string(toward) + " after " + mib(after_bytes);
    }
    return "?";
}

FaultRelay::~FaultRelay() {
    stop();
    if (listen_fd_ >= 0) close(listen_fd_);
}

bool FaultRelay::listen(std::uint16_t *port, int rcvbuf) {
    if (thread_.joinable()) return false;
    if (listen_fd_ >= 0) close(listen_fd_);  // another port was asked for
    listen_fd_ = -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    // Inherited by accepted sockets; it has to be there before the handshake, which fixes
    // the window scale.
    if (rcvbuf > 0) set_int(fd, SOL_SOCKET, SO_RCVBUF, rcvbuf);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sin;
    if (bind(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0 || ::listen(fd, 16) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&sin), &len) != 0) {
        close(fd);
        return false;
    }
    listen_fd_ = fd;
    *port = ntohs(sin.sin_port);
    return true;
}

bool FaultRelay::start(in_addr target, std::uint16_t target_port, const Fault &fault) {
    if (listen_fd_ < 0 || thread_.joinable()) return false;
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) return false;
    target_.sin_family = AF_INET;
    target_.sin_addr = target;
    target_.sin_port = htons(target_port);
    fault_ = fault;
    thread_ = std::thread([this] { run(); });
    return true;
}

void FaultRelay::stop() {
    if (!thread_.joinable()) return;
    std::uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof one) < 0) std::perror("relay: eventfd write");
    thread_.join();
    close(wake_fd_);
    wake_fd_ = -1;
}

RelayStats FaultRelay::stats() const {
    std::lock_guard<std::mutex> g(mu_);
    return stats_;
}

void FaultRelay::run() {
    const Fault f = fault_;
    std::mt19937_64 rng(f.seed);
    std::vector<std::unique_ptr<Pair>> pairs;
    std::vector<unsigned char> buf(kReadSize);
    const bool triggered = f.kind == Fault::Kind::Stall || f.kind == Fault::Kind::Reset ||
                           f.kind == Fault::Kind::HalfClose;
    std::size_t next_trigger = triggered ? std::max<std::size_t>(f.after_bytes, 1) : kNever;
    Clock::time_point stall_until{};
    const int trig_dir = static_cast<int>(f.dir);

    auto with_stats = [&](auto &&fn) {
        std::lock_guard<std::mutex> g(mu_);
        fn(stats_);
    };
    auto fail = [&](const std::string &why) {
        with_stats([&](RelayStats &s) {
            if (s.error.empty()) s.error = why;
        });
    };
    auto kill_pair = [&](Pair &p, bool reset) {
        if (p.dead) return;
        for (int &fd : p.fd) {
            if (reset)
                reset_close(fd);
            else
                close(fd);
            fd = -1;
        }
        p.dead = true;
    };
    auto fire = [&](Pair &p, Clock::time_point now) {
        with_stats([&](RelayStats &s) {
            if (!s.fired) {
                s.fired_at = now;
                s.fired_bytes[0] = s.bytes[0];
                s.fired_bytes[1] = s.bytes[1];
            }
            s.fired = true;
        });
        switch (f.kind) {
            case Fault::Kind::Stall:
                stall_until = now + std::chrono::milliseconds(f.stall_ms);
                with_stats([](RelayStats &s) { ++s.stalls; });
                next_trigger = f.stall_every > 0 ? next_trigger + f.stall_every : kNever;
                break;
            case Fault::Kind::Reset:
                next_trigger = kNever;
                kill_pair(p, true);
                break;
            case Fault::Kind::HalfClose: {
                next_trigger = kNever;
                Flow &fl = p.flow[trig_dir];
                shutdown(fl.out, SHUT_WR);
                fl.shut = true;
                fl.dropping = true;
                with_stats([&](RelayStats &s) { s.dropped[trig_dir] += fl.queued; });
                fl.q.clear();
                fl.queued = 0;
                break;
            }
            default:
                break;
        }
    };

    auto accept_one = [&]() {
        int c = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) return;
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) {
            reset_close(c);
            fail("socket: " + std::string(std::strerror(errno)));
            return;
        }
        if (f.rcvbuf > 0) set_int(s, SOL_SOCKET, SO_RCVBUF, f.rcvbuf);
        // The relay adds no latency of its own (Nagle would hold small chunks for an ACK).
        set_int(c, IPPROTO_TCP, TCP_NODELAY, 1);
        set_int(s, IPPROTO_TCP, TCP_NODELAY, 1);
        // Loopback: the onward connect completes (or is refused) at once.
        if (connect(s, reinterpret_cast<const sockaddr *>(&target_), sizeof target_) != 0) {
            fail("connect to the server: " + std::string(std::strerror(errno)));
            close(s);
            reset_close(c);
            return;
        }
        fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
        auto p = std::make_unique<Pair>();
        p->fd[0] = c;
        p->fd[1] = s;
        p->flow[0].in = c;
        p->flow[0].out = s;
        p->flow[1].in = s;
        p->flow[1].out = c;
        pairs.push_back(std::move(p));
        with_stats([](RelayStats &st) { ++st.connections; });
    };

    // Reads what `fl.in` has; false when the pair died (a reset or error was passed on).
    auto read_flow = [&](Pair &p, int d, Clock::time_point now) {
        Flow &fl = p.flow[d];
        while (!fl.in_eof && fl.queued < kMaxQueued) {
            ssize_t n = recv(fl.in, buf.data(), buf.size(), MSG_DONTWAIT);
            if (n > 0) {
                auto len = static_cast<std::size_t>(n);
                with_stats([&](RelayStats &s) { ++s.chunks[d]; });
                if (fl.dropping) {
                    with_stats([&](RelayStats &s) { s.dropped[d] += len; });
                    continue;
                }
                Chunk ch;
                ch.data.assign(buf.begin(), buf.begin() + n);
                auto hold = std::chrono::milliseconds(f.delay_ms);
                if (f.jitter_ms > 0)
                    hold +=
                        std::chrono::milliseconds(rng() % static_cast<unsigned>(f.jitter_ms + 1));
                // Never before the chunk ahead of it: a delayed stream is still in order.
                ch.due = std::max(now + hold, fl.last_due);
                fl.last_due = ch.due;
                fl.queued += len;
                fl.q.push_back(std::move(ch));
                continue;
            }
            if (n == 0) {
                fl.in_eof = true;
                break;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
            // The source reset or failed: the other side learns it the same way.
            with_stats([](RelayStats &s) { s.peer_reset = true; });
            kill_pair(p, true);
            return false;
        }
        return true;
    };

    auto write_flow = [&](Pair &p, int d, Clock::time_point now) {
        Flow &fl = p.flow[d];
        for (int turn = 0; turn < kWritesPerTurn && !p.dead && !fl.shut && !fl.q.empty(); ++turn) {
            if (now < stall_until) return true;
            Chunk &ch = fl.q.front();
            if (ch.due > now) return true;
            std::size_t n = ch.data.size() - ch.off;
            if (f.kind == Fault::Kind::Segments && f.segment > 0) {
                std::size_t seg = f.segment;
                if (f.random_segments) seg = 1 + rng() % f.segment;
                n = std::min(n, seg);
            }
            if (d == trig_dir && next_trigger != kNever) {
                std::size_t sent;
                {
                    std::lock_guard<std::mutex> g(mu_);
                    sent = stats_.bytes[d];
                }
                if (sent >= next_trigger) {
                    fire(p, now);
                    continue;  // the loop conditions decide what may still go out
                }
                n = std::min(n, next_trigger - sent);
            }
            ssize_t k = send(fl.out, ch.data.data() + ch.off, n, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (k < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
                with_stats([](RelayStats &s) { s.peer_reset = true; });
                kill_pair(p, true);
                return false;
            }
            auto moved = static_cast<std::size_t>(k);
            ch.off += moved;
            fl.queued -= moved;
            with_stats([&](RelayStats &s) {
                s.bytes[d] += moved;
                ++s.writes[d];
            });
            if (ch.off == ch.data.size()) fl.q.pop_front();
        }
        return true;
    };

    std::vector<pollfd> pfds;
    for (;;) {
        Clock::time_point now = Clock::now();
        pfds.clear();
        pfds.push_back({wake_fd_, POLLIN, 0});
        pfds.push_back({listen_fd_, POLLIN, 0});
        int timeout_ms = 1000;
        auto wait_until = [&](Clock::time_point t) {
            auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - now).count();
            timeout_ms = std::min<int>(timeout_ms, static_cast<int>(std::max<long long>(ms, 0)));
        };
        for (auto &p : pairs) {
            if (p->dead) continue;
            short ev[2] = {0, 0};
            for (int d = 0; d < 2; ++d) {
                Flow &fl = p->flow[d];
                int in_side = d == 0 ? 0 : 1;
                if (!fl.in_eof && fl.queued < kMaxQueued) ev[in_side] |= POLLIN;
                if (fl.shut || fl.q.empty()) continue;
                if (now < stall_until)
                    wait_until(stall_until);
                else if (fl.q.front().due > now)
                    wait_until(fl.q.front().due);
                else
                    ev[1 - in_side] |= POLLOUT;
            }
            pfds.push_back({p->fd[0], ev[0], 0});
            pfds.push_back({p->fd[1], ev[1], 0});
        }
        if (poll(pfds.data(), pfds.size(), timeout_ms) < 0 && errno != EINTR) {
            fail("poll: " + std::string(std::strerror(errno)));
            break;
        }
        if (pfds[0].revents != 0) break;
        if (pfds[1].revents & POLLIN) accept_one();
        now = Clock::now();
        for (auto &p : pairs) {
            if (p->dead) continue;
            for (int d = 0; d < 2 && !p->dead; ++d) {
                if (!read_flow(*p, d, now)) break;
                if (!write_flow(*p, d, now)) break;
                Flow &fl = p->flow[d];
                // The source's end of stream is passed on once its bytes are out.
                if (!p->dead && fl.in_eof && fl.q.empty() && !fl.shut) {
                    shutdown(fl.out, SHUT_WR);
                    fl.shut = true;
                }
            }
            if (!p->dead && p->flow[0].in_eof && p->flow[1].in_eof && p->flow[0].shut &&
                p->flow[1].shut)
                kill_pair(*p, false);
        }
        std::erase_if(pairs, [](const auto &p) { return p->dead; });
    }
    for (auto &p : pairs) kill_pair(*p, false);
}

}  // namespace faults

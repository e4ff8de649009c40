// Bandwidth measurements: a raw-TCP stream, and DAT RDMA write, RDMA read and send with
// several requests in flight. Each ends when the data is known to be at the target: a
// zero-byte send after the last write or send (delivered in order) is answered by the
// target, and an RDMA read completes when its data has arrived.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "bench.hpp"

namespace datbench {

namespace {

using Clock = std::chrono::steady_clock;

// Requests kept in flight: enough to keep the pipe full, within the EP's queue.
std::uint64_t window(DAT_COUNT max, std::uint32_t cap) {
    return static_cast<std::uint64_t>(std::max<DAT_COUNT>(1, std::min<DAT_COUNT>(max - 1, cap)));
}

double mb_per_s(std::uint64_t bytes, Clock::time_point t0) {
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    return s > 0 ? static_cast<double>(bytes) / s / 1e6 : 0;
}

// Posts `count` requests with at most `w` outstanding, reaping completions.
template <class Post>
bool pipeline(DatSession &d, std::uint64_t count, std::uint64_t w, Post post) {
    std::uint64_t posted = 0, done = 0;
    while (done < count) {
        while (posted < count && posted - done < w) {
            if (!post()) return false;
            ++posted;
        }
        if (!d.next_request()) return false;
        ++done;
    }
    return true;
}

// Client: a zero-byte send behind the data, and the server's zero-byte answer.
bool end_to_end(DatSession &d, bool client) {
    if (client) return d.post_send(0, false) && d.next_recv();
    return d.next_recv() && d.post_send(0, false);
}

}  // namespace

bool tcp_stream(Bench &b, std::uint32_t size, std::uint64_t count, double *mb_s) {
    unsigned char *buf = b.tcp_buf.data();
    const bool spin = b.plan.wait == 0;
    if (!barrier(b.control)) return false;
    char ack = 'A';
    if (b.client) {
        auto t0 = Clock::now();
        for (std::uint64_t i = 0; i < count; ++i)
            if (!send_all(b.data, buf, size, spin)) return false;
        if (!recv_all(b.data, &ack, 1, spin)) return false;
        *mb_s = mb_per_s(count * size, t0);
    } else {
        for (std::uint64_t i = 0; i < count; ++i)
            if (!recv_all(b.data, buf, size, spin)) return false;
        if (!send_all(b.data, &ack, 1, spin)) return false;
    }
    return barrier(b.control);
}

bool tcp_msgrate(Bench &b, bool batched, double *mops) {
    const std::uint64_t msgs = b.plan.rate_msgs;
    const std::uint32_t size = b.plan.rate_size;
    const std::uint32_t per_call = batched ? b.plan.rate_window : 1;
    const bool spin = b.plan.wait == 0;
    unsigned char *buf = b.tcp_buf.data();
    if (!barrier(b.control)) return false;
    char ack = 'A';
    if (b.client) {
        auto t0 = Clock::now();
        for (std::uint64_t sent = 0; sent < msgs; sent += per_call) {
            std::uint64_t k = std::min<std::uint64_t>(per_call, msgs - sent);
            if (!send_all(b.data, buf, k * size, spin)) return false;
        }
        if (!recv_all(b.data, &ack, 1, spin)) return false;
        double s = std::chrono::duration<double>(Clock::now() - t0).count();
        *mops = s > 0 ? static_cast<double>(msgs) / s / 1e6 : 0;
    } else {
        // The receiver takes whatever has arrived: the sender's calls are what is measured.
        std::uint64_t left = msgs * size;
        const std::size_t chunk = std::min<std::size_t>(b.tcp_buf.size(), 1u << 16);
        while (left > 0) {
            ssize_t r = recv(b.data.fd(), buf, std::min<std::uint64_t>(chunk, left),
                             spin ? MSG_DONTWAIT : 0);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r <= 0) return false;
            left -= static_cast<std::uint64_t>(r);
        }
        if (!send_all(b.data, &ack, 1, spin)) return false;
    }
    return barrier(b.control);
}

bool dat_write_bw(Bench &b, std::uint32_t size, std::uint64_t count, double *mb_s,
                  std::uint32_t cap) {
    DatSession &d = b.dat;
    if (!d.ensure_recvs(1) || !barrier(b.control)) return false;
    if (b.client) {
        auto t0 = Clock::now();
        if (!pipeline(d, count, window(d.max_requests(), cap),
                      [&] { return d.post_write(size, 0, true); }) ||
            !end_to_end(d, true))
            return false;
        *mb_s = mb_per_s(count * size, t0);
    } else if (!end_to_end(d, false)) {
        return false;
    }
    return barrier(b.control);
}

bool dat_read_bw(Bench &b, std::uint32_t size, std::uint64_t count, double *mb_s) {
    DatSession &d = b.dat;
    if (!barrier(b.control)) return false;
    if (b.client) {
        auto t0 = Clock::now();
        if (!pipeline(d, count, window(d.max_reads() + 1, 32),
                      [&] { return d.post_read(size, 0); }))
            return false;
        *mb_s = mb_per_s(count * size, t0);
    }
    return barrier(b.control);
}

bool dat_send_bw(Bench &b, std::uint32_t size, std::uint64_t count, double *mb_s,
                 std::uint32_t cap) {
    DatSession &d = b.dat;
    // The receiver keeps many receives posted; the sender may still outrun it, in which
    // case the transport's flow control holds it back.
    const auto depth = static_cast<std::uint32_t>(window(d.max_recvs(), std::max(cap, 64u)));
    if (!b.client && !d.ensure_recvs(depth)) return false;
    if (b.client && !d.ensure_recvs(1)) return false;
    if (!barrier(b.control)) return false;
    if (b.client) {
        auto t0 = Clock::now();
        if (!pipeline(d, count, window(d.max_requests(), cap),
                      [&] { return d.post_send(size, true); }) ||
            !end_to_end(d, true))
            return false;
        *mb_s = mb_per_s(count * size, t0);
    } else {
        // count data messages, then the zero-byte end marker.
        for (std::uint64_t i = 0; i < count; ++i)
            if (!d.next_recv()) return false;
        if (!end_to_end(d, false)) return false;
    }
    return barrier(b.control);
}

}  // namespace datbench

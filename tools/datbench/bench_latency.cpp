// Latency measurements: raw-TCP and DAT ping-pongs, and RDMA write completion latency.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include "bench.hpp"

namespace datbench {

namespace {

using Clock = std::chrono::steady_clock;

double us_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}

// A tag for round i that differs from round i-1's and is never 0 (the cleared value).
unsigned char tag(std::uint32_t i) {
    return static_cast<unsigned char>(1 + i % 255);
}

// Spins until the byte at p equals v, letting the provider progress meanwhile. False if
// it never comes (a dead peer would otherwise keep us spinning forever).
bool spin_for(DatSession &d, const unsigned char *p, unsigned char v) {
    // The provider (or the NIC) writes this byte behind the compiler's back.
    std::atomic_ref<const unsigned char> byte(*p);
    auto deadline = Clock::now() + std::chrono::seconds(30);
    for (std::uint32_t spins = 1; byte.load(std::memory_order_acquire) != v; ++spins) {
        d.poke();
        if (spins % 65536 == 0 && Clock::now() > deadline) {
            std::fprintf(stderr, "datbench: RDMA write never arrived\n");
            return false;
        }
    }
    return true;
}

}  // namespace

void record_latency(Bench &b, const char *test, std::uint32_t size, std::vector<double> *samples) {
    LatencyRow row;
    row.test = test;
    row.size = size;
    row.iters = static_cast<std::uint32_t>(samples->size());
    percentiles(samples, &row.median_us, &row.p99_us);
    b.results.latency.push_back(row);
}

std::uint32_t latency_rounds(const Plan &p, std::uint32_t size, bool warmup) {
    std::uint32_t n = warmup ? p.lat_warmup : p.lat_iters;
    if (size > 4096) {
        // Large messages: fewer rounds (at least 1/16 of them), the time is in the copy.
        std::uint64_t scaled = static_cast<std::uint64_t>(n) * 4096 / size;
        std::uint32_t floor = n / 16;
        n = static_cast<std::uint32_t>(scaled > floor ? scaled : floor);
    }
    return n > 0 || warmup ? n : 1;
}

std::vector<Rounds> latency_blocks(const Plan &p, std::uint32_t size) {
    const std::uint32_t warm = latency_rounds(p, size, true);
    const std::uint32_t n = latency_rounds(p, size, false);
    const std::uint32_t k = std::max<std::uint32_t>(1, std::min(p.lat_blocks, n));
    std::vector<Rounds> blocks(k);
    for (std::uint32_t i = 0; i < k; ++i) {
        blocks[i].timed = n / k + (i < n % k ? 1 : 0);
        blocks[i].warm = i == 0 ? warm : std::min(warm, blocks[i].timed / 10);
    }
    return blocks;
}

bool tcp_pingpong(Bench &b, std::uint32_t size, Rounds r, std::vector<double> *samples) {
    const std::uint32_t warm = r.warm, n = r.timed;
    unsigned char *buf = b.tcp_buf.data();
    const bool spin = b.plan.wait == 0;
    if (!barrier(b.control)) return false;
    for (std::uint32_t i = 0; i < warm + n; ++i) {
        if (b.client) {
            auto t0 = Clock::now();
            if (!send_all(b.data, buf, size, spin) || !recv_all(b.data, buf, size, spin))
                return false;
            if (i >= warm) samples->push_back(us_between(t0, Clock::now()) / 2);
        } else if (!recv_all(b.data, buf, size, spin) || !send_all(b.data, buf, size, spin)) {
            return false;
        }
    }
    return true;
}

bool dat_send_pingpong(Bench &b, std::uint32_t size, Rounds r, std::vector<double> *samples) {
    const std::uint32_t warm = r.warm, n = r.timed;
    // One receive is always posted (the session reposts it on completion), before the
    // peer can send: sends are unsignaled, the reply proves delivery.
    if (!b.dat.ensure_recvs(1) || !barrier(b.control)) return false;
    for (std::uint32_t i = 0; i < warm + n; ++i) {
        if (b.client) {
            auto t0 = Clock::now();
            if (!b.dat.post_send(size, false) || !b.dat.next_recv()) return false;
            if (i >= warm) samples->push_back(us_between(t0, Clock::now()) / 2);
        } else if (!b.dat.next_recv() || !b.dat.post_send(size, false)) {
            return false;
        }
    }
    return barrier(b.control);
}

bool dat_write_pingpong(Bench &b, std::uint32_t size, Rounds r, std::vector<double> *samples) {
    const std::uint32_t warm = r.warm, n = r.timed;
    DatSession &d = b.dat;
    const bool wait = d.waiting();
    unsigned char *last_out = d.src() + size - 1;
    const unsigned char *last_in = d.dst() + size - 1;
    // Our dst is only written by the peer during this test: clear it before it starts (each
    // block: the rounds' tags restart at 0, and the previous block may have ended on any).
    *d.dst() = 0;
    d.dst()[size - 1] = 0;
    if (!d.ensure_recvs(1) || !barrier(b.control)) return false;
    auto one_way = [&](std::uint32_t i) {
        *last_out = tag(i);
        if (!d.post_write(size, 0, false)) return false;
        return !wait || d.post_send(0, false);
    };
    auto arrival = [&](std::uint32_t i) {
        if (wait) return d.next_recv();
        return spin_for(d, last_in, tag(i));
    };
    for (std::uint32_t i = 0; i < warm + n; ++i) {
        if (b.client) {
            auto t0 = Clock::now();
            if (!one_way(i) || !arrival(i)) return false;
            if (i >= warm) samples->push_back(us_between(t0, Clock::now()) / 2);
        } else if (!arrival(i) || !one_way(i)) {
            return false;
        }
    }
    return barrier(b.control);
}

bool dat_write_completion(Bench &b, std::uint32_t size, bool delayed_ack) {
    const std::uint32_t warm = latency_rounds(b.plan, size, true);
    const std::uint32_t n = latency_rounds(b.plan, size, false);
    std::vector<double> samples;
    samples.reserve(n);
    bool supported = true;
    if (b.client) supported = b.dat.set_delayed_ack(delayed_ack);
    if (!barrier(b.control)) return false;
    if (b.client && supported) {
        for (std::uint32_t i = 0; i < warm + n; ++i) {
            auto t0 = Clock::now();
            if (!b.dat.post_write(size, 0, true) || !b.dat.next_request()) return false;
            if (i >= warm) samples.push_back(us_between(t0, Clock::now()));
        }
        if (delayed_ack) b.dat.set_delayed_ack(false);
        record_latency(b, delayed_ack ? kWriteCompletionAck : kWriteCompletion, size, &samples);
    }
    // The server only lets its provider answer; it waits here.
    return barrier(b.control);
}

bool dat_read_latency(Bench &b, std::uint32_t size, Rounds r, std::vector<double> *samples) {
    const std::uint32_t warm = r.warm, n = r.timed;
    if (!barrier(b.control)) return false;
    if (b.client) {
        for (std::uint32_t i = 0; i < warm + n; ++i) {
            auto t0 = Clock::now();
            if (!b.dat.post_read(size, 0) || !b.dat.next_request()) return false;
            if (i >= warm) samples->push_back(us_between(t0, Clock::now()) / 2);
        }
    }
    return barrier(b.control);
}

}  // namespace datbench

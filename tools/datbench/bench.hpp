// The measurements. Every function is called on both peers in the same order; the client
// drives and times, the server answers. Figures are recorded on the client only.
#pragma once

#include <cstdint>
#include <vector>

#include "dat_session.hpp"
#include "options.hpp"
#include "results.hpp"
#include "sock.hpp"

namespace datbench {

struct Bench {
    bool client;
    const Plan &plan;
    const Sock &control;  // barriers between measurements
    const Sock &data;     // the raw-TCP baseline connection
    DatSession &dat;
    std::vector<unsigned char> &tcp_buf;  // baseline buffer (not registered)
    Results &results;
};

// One block of a latency measurement: untimed rounds, then timed ones.
struct Rounds {
    std::uint32_t warm = 0;
    std::uint32_t timed = 0;
};

// The blocks a latency measurement of `size` is split into. The caller runs the raw-TCP
// twin and every DAT ping-pong block by block, in turn, so a machine whose speed drifts
// during the run slows them alike (the first block carries the whole warm-up; the others
// a short one, since the test before them evicted some of what this one touches).
std::vector<Rounds> latency_blocks(const Plan &p, std::uint32_t size);

// Latency (ping-pongs report half the round trip), one block; the client appends its
// samples to *samples. The raw-TCP twin is busy-polled when DAT polls and blocking when
// DAT waits, so each mode is compared with its like.
bool tcp_pingpong(Bench &b, std::uint32_t size, Rounds r, std::vector<double> *samples);
bool dat_send_pingpong(Bench &b, std::uint32_t size, Rounds r, std::vector<double> *samples);
// Polling: the receiver spins on the last byte of its buffer (and on an empty
// dat_evd_dequeue, which lets the provider progress on the polling thread). Waiting: each
// RDMA write is followed by a zero-byte send whose receive completion is awaited.
bool dat_write_pingpong(Bench &b, std::uint32_t size, Rounds r, std::vector<double> *samples);
// Post to completion of one RDMA write at the initiator, with delayed_ack off or on.
// Returns true without a row when the provider refuses delayed_ack.
bool dat_write_completion(Bench &b, std::uint32_t size, bool delayed_ack);
// One RDMA read, post to completion; the target's application does not take part (its
// consumer waits on the control connection), as in a real one-sided exchange.
bool dat_read_latency(Bench &b, std::uint32_t size, Rounds r, std::vector<double> *samples);
// The client's row of a latency test from all its blocks' samples (sorted in place).
void record_latency(Bench &b, const char *test, std::uint32_t size, std::vector<double> *samples);

// Bandwidth over `count` messages of `size`; *mb_s set on the client.
bool tcp_stream(Bench &b, std::uint32_t size, std::uint64_t count, double *mb_s);
// `cap`: requests kept in flight (bounded by the EP's queue).
bool dat_write_bw(Bench &b, std::uint32_t size, std::uint64_t count, double *mb_s,
                  std::uint32_t cap = 32);
bool dat_read_bw(Bench &b, std::uint32_t size, std::uint64_t count, double *mb_s);
bool dat_send_bw(Bench &b, std::uint32_t size, std::uint64_t count, double *mb_s,
                 std::uint32_t cap = 32);

// Message rate: plan.rate_msgs messages of plan.rate_size; *mops set on the client.
// Raw TCP with one send() per message, or `batched` with plan.rate_window per send().
bool tcp_msgrate(Bench &b, bool batched, double *mops);

// Rounds for a latency measurement of `size` (fewer for large messages).
std::uint32_t latency_rounds(const Plan &p, std::uint32_t size, bool warmup);

}  // namespace datbench

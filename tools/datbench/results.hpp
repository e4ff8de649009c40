// Measured figures, and how they are printed: two tables (latency, bandwidth) with each
// figure's ratio to the raw-TCP baseline of the same size, and an optional CSV file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace datbench {

// Test names. The baseline of each section comes first.
inline constexpr const char *kTcpPingPong = "tcp_pingpong";
inline constexpr const char *kSendPingPong = "dat_send_pingpong";
inline constexpr const char *kWritePingPong = "dat_write_pingpong";
inline constexpr const char *kWriteCompletion = "dat_write_completion";
inline constexpr const char *kWriteCompletionAck = "dat_write_completion_delayed_ack";
inline constexpr const char *kTcpStream = "tcp_stream";
inline constexpr const char *kRdmaWrite = "dat_rdma_write";
inline constexpr const char *kRdmaRead = "dat_rdma_read";
inline constexpr const char *kSend = "dat_send";
// RDMA read: post to completion, reported as half the round trip like the ping-pongs.
inline constexpr const char *kReadLatency = "dat_rdma_read_rtt";
// Message rate: small messages with many in flight. The baseline sends one message per
// send() call; the batched twin packs rate_window messages per call (what qperf does).
inline constexpr const char *kTcpRate = "tcp_msgrate";
inline constexpr const char *kTcpRateBatched = "tcp_msgrate_batched";
inline constexpr const char *kWriteRate = "dat_write_rate";
inline constexpr const char *kSendRate = "dat_send_rate";

struct LatencyRow {
    std::string test;
    std::uint32_t size = 0;
    std::uint32_t iters = 0;
    double median_us = 0, p99_us = 0;  // one-way (half the round trip) for ping-pongs
};

struct BandwidthRow {
    std::string test;
    std::uint32_t size = 0;
    std::uint64_t bytes = 0;  // per measurement
    double mb_s = 0;          // median of the repetitions, 10^6 bytes per second
};

struct RateRow {
    std::string test;
    std::uint32_t size = 0;
    std::uint64_t msgs = 0;  // per measurement
    std::uint32_t window = 0;
    double mops = 0;  // median, 10^6 messages per second
};

// CPU time (user + system, all threads) of one process over a period, in percent of one CPU.
struct CpuRow {
    std::string what;  // e.g. "idle_client", "run_server"
    double seconds = 0;
    double percent = 0;
};

struct Results {
    std::vector<CpuRow> cpu;
    std::vector<LatencyRow> latency;
    std::vector<BandwidthRow> bandwidth;
    std::vector<RateRow> rate;
};

// Median and 99th percentile of samples (sorted in place).
void percentiles(std::vector<double> *samples, double *median, double *p99);
double median_of(std::vector<double> v);

// `baseline` says how the raw-TCP figures were taken ("busy-polled" or "blocking").
void print_tables(std::FILE *out, const Results &r, const std::string &header,
                  const char *baseline);
bool write_csv(const std::string &path, const Results &r);

}  // namespace datbench

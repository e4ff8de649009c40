// A TCP relay that injects faults between two tcp-provider endpoints (the fault matrix,
// fault_matrix_test.cpp; issue 9 "Faults on the path").
//
// It listens on loopback, connects each accepted connection onward to the real listener
// and forwards both directions from one thread (poll loop, non-blocking sockets), doing to
// the byte stream what a bad path does to it: hold every chunk for a fixed delay or a
// delay with jitter (order kept: TCP itself never reorders), cut it into tiny segments,
// stop forwarding for a while, reset both connections after N bytes, or half-close one
// side. What it forwarded, and when its fault fired, is in `stats()`.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace faults {

using Clock = std::chrono::steady_clock;

// Direction of a relayed connection: the connecting side is the client, the listener the
// server.
enum class Dir : int { ToServer = 0, ToClient = 1 };

struct Fault {
    enum class Kind { None, Delay, Segments, Stall, Reset, HalfClose };
    Kind kind = Kind::None;
    // Delay: each chunk read is forwarded delay_ms + U[0, jitter_ms] ms later, and never
    // before the chunk read before it.
    int delay_ms = 0;
    int jitter_ms = 0;
    // Segments: every write carries at most `segment` bytes (1: one-byte segments), a
    // random size in [1, segment] when `random_segments`; TCP_NODELAY on both sockets.
    std::size_t segment = 0;
    bool random_segments = false;
    // Stall, Reset, HalfClose fire once `after_bytes` were forwarded in direction `dir`.
    std::size_t after_bytes = 0;
    Dir dir = Dir::ToServer;
    // Stall: nothing is forwarded (either way) for stall_ms, then forwarding resumes; with
    // stall_every > 0 the stall repeats after each further stall_every bytes.
    int stall_ms = 0;
    std::size_t stall_every = 0;
    // HalfClose: shutdown(SHUT_WR) toward the side `dir` points to; what that direction
    // still brings is read and dropped. The other direction goes on, and its end is passed
    // on as the end of a TCP stream is.
    // Reset: both connections are closed with SO_LINGER 0 (an RST each way).

    // Receive buffer of the relay's sockets (0: the kernel's autotuning). A small one
    // makes a stalled relay close the sender's window soon.
    int rcvbuf = 0;
    std::uint64_t seed = 1;  // jitter and random segment sizes

    std::string describe() const;
};

struct RelayStats {
    std::size_t connections = 0;
    std::size_t bytes[2] = {0, 0};        // forwarded, per Dir
    std::size_t dropped[2] = {0, 0};      // read after a half-close and dropped
    std::size_t writes[2] = {0, 0};       // send() calls that moved bytes (segments)
    std::size_t chunks[2] = {0, 0};       // reads (each one delayed as a unit)
    std::size_t stalls = 0;               // stalls begun
    bool fired = false;                   // the Reset / HalfClose / first Stall happened
    Clock::time_point fired_at{};         // ... at this time (CLOCK_MONOTONIC)
    std::size_t fired_bytes[2] = {0, 0};  // ... when this much had been forwarded
    bool peer_reset = false;              // a side reset or failed; the other was reset
    std::string error;                    // a failure of the relay itself (empty: none)
};

class FaultRelay {
  public:
    FaultRelay() = default;
    ~FaultRelay();
    FaultRelay(const FaultRelay &) = delete;
    FaultRelay &operator=(const FaultRelay &) = delete;

    // Listens on 127.0.0.1, a port of the kernel's choice. False if that fails.
    bool listen(std::uint16_t *port, int rcvbuf = 0);
    // Starts forwarding to `target` (host byte order port) with `fault`.
    bool start(in_addr target, std::uint16_t target_port, const Fault &fault);
    // Stops the thread and closes every socket (a plain close).
    void stop();
    RelayStats stats() const;

  private:
    void run();

    int listen_fd_ = -1;
    int wake_fd_ = -1;  // eventfd: stop()
    sockaddr_in target_{};
    Fault fault_;
    std::thread thread_;
    mutable std::mutex mu_;
    RelayStats stats_;
};

}  // namespace faults

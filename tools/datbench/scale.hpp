// datscale: many connected endpoints on one IA. Shared pieces of the two peers: the plan,
// process figures (descriptors, resident memory), the raw-TCP twin of connection set-up,
// and the DAT side (scale_dat.cpp).
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "sock.hpp"

namespace datbench::scale {

// What both peers agree on; the client sends it over the control connection.
struct ScalePlan {
    std::uint32_t endpoints = 10000;  // connected endpoints in all, the busy one included
    std::uint32_t window = 32;        // connects in flight (below the tcp provider's pending
                                      // cap per listener, DAT_TCP_MAX_PENDING = 64)
    std::uint32_t lat_iters = 20000;  // timed ping-pong rounds per latency measurement
    std::uint32_t lat_warmup = 2000;
    std::uint16_t raw_port = 0;     // raw-TCP set-up listener
    std::uint8_t reserved[2] = {};  // sent as bytes: no uninitialised padding
    std::uint32_t idle_dtos = 0;    // idle EPs' max_request_dtos and max_recv_dtos (0: default)
};
static_assert(std::has_unique_object_representations_v<ScalePlan>);

// Raises the soft RLIMIT_NOFILE to the hard limit. Returns the soft limit now in force.
std::uint64_t raise_fd_limit();
// Descriptors a peer needs for n endpoints (one socket each, plus the fixed ones).
inline std::uint64_t fds_needed(std::uint32_t n) {
    return n + 64;
}
// Resident set of this process in KiB (VmRSS of /proc/self/status); 0 if unreadable.
std::uint64_t rss_kib();

// Raw TCP: n connections to port, at most `window` connecting at once (non-blocking
// connect, poll for completion); the sockets stay open in *out. Client side.
bool raw_connect(const sockaddr_storage &server, std::uint16_t port, std::uint32_t n,
                 std::uint32_t window, std::vector<Sock> *out);
// Server side: accepts n connections from listener into *out.
// (listen_on(port, backlog) with a backlog deep enough for `window` connects in flight.)
bool raw_accept(const Listener &listener, std::uint32_t n, std::vector<Sock> *out);

}  // namespace datbench::scale

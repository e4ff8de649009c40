// datbench's command line and the run configuration both peers share.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace datbench {

enum class Role { Loopback, Server, Client };

// What both peers must agree on; the client sends it to the server over the control
// connection, so a server started with different flags still runs the client's plan.
struct Plan {
    std::uint32_t lat_iters = 20000;      // timed ping-pong rounds for messages <= 4 KiB
    std::uint32_t lat_warmup = 2000;      // untimed rounds before them
    std::uint64_t bw_bytes = 256u << 20;  // bytes moved per bandwidth measurement
    std::uint32_t bw_reps = 3;            // measurements per size; the median is reported
    std::uint32_t lat_min = 8, lat_max = 64u << 10;
    std::uint32_t bw_min = 4u << 10, bw_max = 4u << 20;
    std::uint32_t step = 4;  // sizes grow by this factor (2 or 4); the maximum is always run
    std::uint8_t wait = 0;   // dat_evd_wait instead of polling dat_evd_dequeue
    std::uint8_t reserved0[3] = {};    // the plan goes over the wire whole: no padding
    std::uint32_t rate_msgs = 200000;  // messages per message-rate measurement
    std::uint32_t rate_window = 64;    // requests in flight for the message rate
    std::uint32_t rate_size = 8;
    std::uint8_t raw_only = 0;  // only the raw-TCP figures (baselines for other tools' runs)
    std::uint8_t reserved1[3] = {};
    std::uint32_t idle_s = 0;       // --cpu-idle: seconds connected and idle, CPU time measured
    std::uint32_t lat_blocks = 10;  // latency rounds per size split into blocks, tests in turn
    std::uint32_t reserved2 = 0;
};
// Sent as bytes (client to server): every byte is a field, none is uninitialised padding.
static_assert(std::has_unique_object_representations_v<Plan>);

struct Options {
    Role role = Role::Loopback;
    std::string ia = "ofa-v2-tcp-lo";
    std::string host = "127.0.0.1";  // client: the server's address (control, DAT and TCP)
    std::uint16_t port = 18500;  // control + raw TCP on port, DAT on qualifier port+1 (below the
                                 // ephemeral range, so no outgoing connection holds it)
    std::string csv;             // --csv FILE
    bool quiet = false;
    int server_cpu = -1, client_cpu = -1;  // --server-cpu / --client-cpu (-1: not pinned)
    Plan plan;
};

// Parses argv; on error or --help prints usage and returns false with *exit_code set.
bool parse_options(int argc, char **argv, Options *out, int *exit_code);

// The message sizes a plan measures: min, min*step, ... and max itself.
std::vector<std::uint32_t> sizes(std::uint32_t min, std::uint32_t max, std::uint32_t step);

}  // namespace datbench

#include "options.hpp"

#include <getopt.h>
#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace datbench {

namespace {

void usage(std::FILE *to) {
    std::fprintf(to,
                 "usage: datbench [options]                 server and client on this host\n"
                 "       datbench --server [options]         wait for a client\n"
                 "       datbench --client HOST [options]    run against a server\n"
                 "\n"
                 "Measures DAT latency (send/recv and RDMA-write ping-pong) and bandwidth\n"
                 "(RDMA write, RDMA read, send) next to a raw-TCP baseline measured in the same\n"
                 "run, and prints each figure's ratio to the baseline.\n"
                 "\n"
                 "  -i, --ia NAME        IA name from dat.conf (default ofa-v2-tcp-lo)\n"
                 "  -p, --port N         control/raw-TCP port; DAT uses qualifier N+1 (18500)\n"
                 "  -w, --wait           wait on EVDs (dat_evd_wait) instead of polling\n"
                 "                       (dat_evd_dequeue)\n"
                 "  -n, --iters N        latency rounds per size, <= 4 KiB (20000; fewer for\n"
                 "                       larger messages)\n"
                 "      --warmup N       untimed latency rounds first (default iters/10)\n"
                 "      --lat-blocks N   split each size's latency rounds into N blocks and run\n"
                 "                       raw TCP and the DAT ping-pongs block by block, in turn,\n"
                 "                       so drift in the machine's speed hits them alike (10;\n"
                 "                       1: each test's rounds in one go)\n"
                 "  -b, --bw-bytes N     bytes per bandwidth measurement (268435456)\n"
                 "  -r, --reps N         bandwidth measurements per size, median shown (3)\n"
                 "      --lat-max N      largest latency message (65536)\n"
                 "      --bw-min N       smallest bandwidth message (4096)\n"
                 "      --bw-max N       largest bandwidth message (4194304)\n"
                 "      --step 2|4       size factor between rows (4)\n"
                 "      --rate-msgs N    messages per message-rate measurement (200000)\n"
                 "      --cpu-idle N     first stay connected and idle for N s and report the\n"
                 "                       CPU time both processes used then and during the run\n"
                 "      --raw-only       only the raw-TCP baselines (for tools/bench_*.sh)\n"
                 "      --server-cpu N   pin the server process to CPU N\n"
                 "      --client-cpu N   pin the client process to CPU N\n"
                 "      --csv FILE       also write every row as CSV\n"
                 "  -q, --quiet          no progress lines on stderr\n"
                 "  -h, --help\n");
}

bool number(const char *s, unsigned long long min, unsigned long long max,
            unsigned long long *out) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) return false;
    *out = v;
    return true;
}

}  // namespace

std::vector<std::uint32_t> sizes(std::uint32_t min, std::uint32_t max, std::uint32_t step) {
    std::vector<std::uint32_t> v;
    for (std::uint64_t s = min; s < max; s *= step) v.push_back(static_cast<std::uint32_t>(s));
    v.push_back(max);
    return v;
}

bool parse_options(int argc, char **argv, Options *o, int *exit_code) {
    enum {
        kWarmup = 1000,
        kLatMax,
        kBwMin,
        kBwMax,
        kStep,
        kCsv,
        kServer,
        kClient,
        kRateMsgs,
        kServerCpu,
        kClientCpu,
        kRawOnly,
        kCpuIdle,
        kLatBlocks
    };
    static const option longs[] = {
        {"ia", required_argument, nullptr, 'i'},
        {"port", required_argument, nullptr, 'p'},
        {"wait", no_argument, nullptr, 'w'},
        {"iters", required_argument, nullptr, 'n'},
        {"warmup", required_argument, nullptr, kWarmup},
        {"lat-blocks", required_argument, nullptr, kLatBlocks},
        {"bw-bytes", required_argument, nullptr, 'b'},
        {"reps", required_argument, nullptr, 'r'},
        {"lat-max", required_argument, nullptr, kLatMax},
        {"bw-min", required_argument, nullptr, kBwMin},
        {"bw-max", required_argument, nullptr, kBwMax},
        {"step", required_argument, nullptr, kStep},
        {"csv", required_argument, nullptr, kCsv},
        {"rate-msgs", required_argument, nullptr, kRateMsgs},
        {"server-cpu", required_argument, nullptr, kServerCpu},
        {"raw-only", no_argument, nullptr, kRawOnly},
        {"cpu-idle", required_argument, nullptr, kCpuIdle},
        {"client-cpu", required_argument, nullptr, kClientCpu},
        {"server", no_argument, nullptr, kServer},
        {"client", required_argument, nullptr, kClient},
        {"quiet", no_argument, nullptr, 'q'},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    bool warmup_set = false;
    *exit_code = 2;
    for (;;) {
        int c = getopt_long(argc, argv, "i:p:wn:b:r:qh", longs, nullptr);
        if (c == -1) break;
        unsigned long long v = 0;
        bool ok = true;
        switch (c) {
            case 'i':
                o->ia = optarg;
                break;
            case 'p':
                ok = number(optarg, 1, 65534, &v);
                o->port = static_cast<std::uint16_t>(v);
                break;
            case 'w':
                o->plan.wait = 1;
                break;
            case 'n':
                ok = number(optarg, 1, 100'000'000, &v);
                o->plan.lat_iters = static_cast<std::uint32_t>(v);
                break;
            case kWarmup:
                ok = number(optarg, 0, 100'000'000, &v);
                o->plan.lat_warmup = static_cast<std::uint32_t>(v);
                warmup_set = true;
                break;
            case kLatBlocks:
                ok = number(optarg, 1, 1000, &v);
                o->plan.lat_blocks = static_cast<std::uint32_t>(v);
                break;
            case 'b':
                ok = number(optarg, 1, 1ull << 40, &v);
                o->plan.bw_bytes = v;
                break;
            case 'r':
                ok = number(optarg, 1, 1000, &v);
                o->plan.bw_reps = static_cast<std::uint32_t>(v);
                break;
            case kLatMax:
                ok = number(optarg, 8, 64u << 20, &v);
                o->plan.lat_max = static_cast<std::uint32_t>(v);
                break;
            case kBwMin:
                ok = number(optarg, 8, 64u << 20, &v);
                o->plan.bw_min = static_cast<std::uint32_t>(v);
                break;
            case kBwMax:
                ok = number(optarg, 8, 64u << 20, &v);
                o->plan.bw_max = static_cast<std::uint32_t>(v);
                break;
            case kStep:
                ok = number(optarg, 2, 4, &v) && v != 3;
                o->plan.step = static_cast<std::uint32_t>(v);
                break;
            case kRateMsgs:
                ok = number(optarg, 64, 100'000'000, &v);
                o->plan.rate_msgs = static_cast<std::uint32_t>(v);
                break;
            case kCpuIdle:
                ok = number(optarg, 1, 3600, &v);
                o->plan.idle_s = static_cast<std::uint32_t>(v);
                break;
            case kRawOnly:
                o->plan.raw_only = 1;
                break;
            case kServerCpu:
            case kClientCpu:
                ok = number(optarg, 0, CPU_SETSIZE - 1, &v);
                (c == kServerCpu ? o->server_cpu : o->client_cpu) = static_cast<int>(v);
                break;
            case kCsv:
                o->csv = optarg;
                break;
            case kServer:
                o->role = Role::Server;
                break;
            case kClient:
                o->role = Role::Client;
                o->host = optarg;
                break;
            case 'q':
                o->quiet = true;
                break;
            case 'h':
                usage(stdout);
                *exit_code = 0;
                return false;
            default:
                usage(stderr);
                return false;
        }
        if (!ok) {
            std::fprintf(stderr, "datbench: bad value for option: %s\n", optarg);
            return false;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return false;
    }
    if (o->plan.bw_min > o->plan.bw_max || o->plan.lat_min > o->plan.lat_max) {
        std::fprintf(stderr, "datbench: minimum size above maximum\n");
        return false;
    }
    if (!warmup_set) o->plan.lat_warmup = o->plan.lat_iters / 10;
    return true;
}

}  // namespace datbench

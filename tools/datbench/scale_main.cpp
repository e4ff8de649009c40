// datscale: many connected endpoints on one IA, next to raw TCP in the same run.
//
//   connection set-up rate of N-1 connections: raw TCP connect/accept, then DAT
//     dat_ep_connect / dat_cr_accept to ESTABLISHED on both sides, the same number in flight;
//   memory per endpoint: growth of each process's VmRSS while the N-1 idle endpoints are
//     created and connected, divided by N-1;
//   8-byte polled send/recv ping-pong on one busy endpoint with only it open, with the
//     N-1 idle ones open, and again after they are gone.
//
// Loopback (default) forks: the child is the server. Each process raises its descriptor
// limit to the hard limit and refuses an N that the limit cannot hold, saying which N it can.
#include <getopt.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "results.hpp"
#include "scale.hpp"
#include "scale_dat.hpp"
#include "scale_report.hpp"

using namespace datbench;
using namespace datbench::scale;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kStartupTimeoutMs = 30'000;

struct ScaleOptions {
    enum class Role { Loopback, Server, Client } role = Role::Loopback;
    std::string ia = "ofa-v2-tcp-lo", host = "127.0.0.1", csv;
    std::uint16_t port = 18600;  // control; DAT qualifier port+1, raw set-up port+2
    int server_cpu = -1, client_cpu = -1;
    bool quiet = false;
    ScalePlan plan;
};

void usage(std::FILE *to) {
    std::fprintf(to,
                 "usage: datscale [options]               server and client on this host\n"
                 "       datscale --server [options]       wait for a client\n"
                 "       datscale --client HOST [options]  run against a server\n\n"
                 "N connected endpoints on one IA per side: set-up rate against raw TCP\n"
                 "connect/accept, memory per endpoint, and 8-byte latency on one busy\n"
                 "endpoint with 1 and with N endpoints open (polling).\n\n"
                 "  -i, --ia NAME        IA name from dat.conf (default ofa-v2-tcp-lo)\n"
                 "  -p, --port N         control port; DAT qualifier N+1, raw TCP N+2 (18600)\n"
                 "  -e, --endpoints N    endpoints in all, the busy one included (10000)\n"
                 "      --window N       connects in flight (32)\n"
                 "      --idle-dtos N    idle endpoints' request and receive queue depth\n"
                 "                       (default: the provider's default EP attributes)\n"
                 "  -n, --iters N        timed ping-pong rounds per measurement (20000)\n"
                 "      --warmup N       untimed rounds first (2000)\n"
                 "      --server-cpu N   pin the server process to CPU N\n"
                 "      --client-cpu N   pin the client process to CPU N\n"
                 "      --csv FILE       also write the rows as CSV\n"
                 "  -q, --quiet          no progress lines on stderr\n");
}

bool parse(int argc, char **argv, ScaleOptions *o, int *code) {
    enum { kServer = 256, kWindow, kWarmup, kServerCpu, kClientCpu, kCsv, kIdleDtos };
    static const option longs[] = {{"ia", 1, nullptr, 'i'},
                                   {"port", 1, nullptr, 'p'},
                                   {"endpoints", 1, nullptr, 'e'},
                                   {"iters", 1, nullptr, 'n'},
                                   {"quiet", 0, nullptr, 'q'},
                                   {"help", 0, nullptr, 'h'},
                                   {"server", 0, nullptr, kServer},
                                   {"client", 1, nullptr, 'c'},
                                   {"window", 1, nullptr, kWindow},
                                   {"warmup", 1, nullptr, kWarmup},
                                   {"server-cpu", 1, nullptr, kServerCpu},
                                   {"client-cpu", 1, nullptr, kClientCpu},
                                   {"idle-dtos", 1, nullptr, kIdleDtos},
                                   {"csv", 1, nullptr, kCsv},
                                   {nullptr, 0, nullptr, 0}};
    auto num = [](const char *s, long min, long max, long *v) {
        char *end = nullptr;
        *v = std::strtol(s, &end, 0);
        return end != s && *end == '\0' && *v >= min && *v <= max;
    };
    *code = 2;
    for (int c; (c = getopt_long(argc, argv, "i:p:e:n:qhc:", longs, nullptr)) != -1;) {
        long v = 0;
        bool good = true;
        switch (c) {
            case 'i':
                o->ia = optarg;
                break;
            case 'p':
                good = num(optarg, 1, 65533, &v), o->port = static_cast<std::uint16_t>(v);
                break;
            case 'e':
                good = num(optarg, 2, 1 << 22, &v), o->plan.endpoints = v;
                break;
            case 'n':
                good = num(optarg, 1, 1 << 26, &v), o->plan.lat_iters = v;
                break;
            case kWarmup:
                good = num(optarg, 0, 1 << 26, &v), o->plan.lat_warmup = v;
                break;
            case kWindow:
                good = num(optarg, 1, 4096, &v), o->plan.window = v;
                break;
            case kServerCpu:
                good = num(optarg, 0, 4095, &v), o->server_cpu = static_cast<int>(v);
                break;
            case kClientCpu:
                good = num(optarg, 0, 4095, &v), o->client_cpu = static_cast<int>(v);
                break;
            case kIdleDtos:
                good = num(optarg, 1, 1 << 20, &v), o->plan.idle_dtos = v;
                break;
            case kCsv:
                o->csv = optarg;
                break;
            case 'q':
                o->quiet = true;
                break;
            case kServer:
                o->role = ScaleOptions::Role::Server;
                break;
            case 'c':
                o->role = ScaleOptions::Role::Client, o->host = optarg;
                break;
            case 'h':
                usage(stdout);
                *code = 0;
                return false;
            default:
                usage(stderr);
                return false;
        }
        if (!good) {
            std::fprintf(stderr, "datscale: bad value '%s'\n", optarg);
            return false;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return false;
    }
    o->plan.raw_port = static_cast<std::uint16_t>(o->port + 2);
    return true;
}

void say(const ScaleOptions &o, bool client, const char *what) {
    if (client && !o.quiet) std::fprintf(stderr, "datscale: %s\n", what);
}

// Raises the descriptor limit; false (and why, and the N this limit allows) if too low.
bool fd_room(const ScalePlan &plan, const char *side, std::uint64_t *limit) {
    *limit = raise_fd_limit();
    if (*limit >= fds_needed(plan.endpoints)) return true;
    std::uint64_t can = *limit > fds_needed(0) ? *limit - fds_needed(0) : 0;
    std::fprintf(stderr,
                 "datscale: %s: %u endpoints need about %llu descriptors, but the hard limit "
                 "(RLIMIT_NOFILE) is %llu; this limit allows -e %llu (raise it with "
                 "`ulimit -Hn` as root, or LimitNOFILE= for a service)\n",
                 side, plan.endpoints, static_cast<unsigned long long>(fds_needed(plan.endpoints)),
                 static_cast<unsigned long long>(*limit), static_cast<unsigned long long>(can));
    return false;
}

// Timed ping-pongs on the busy endpoint; the client records them.
bool pingpong(ScaleIa &dat, const Sock &control, bool client, const ScalePlan &plan, Latency *out) {
    std::vector<double> samples;
    samples.reserve(plan.lat_iters);
    if (!barrier(control)) return false;
    for (std::uint32_t i = 0; i < plan.lat_warmup + plan.lat_iters; ++i) {
        auto t0 = Clock::now();
        if (!dat.ping(client)) return false;
        if (client && i >= plan.lat_warmup)
            samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                              2);
    }
    if (client) {
        out->iters = static_cast<std::uint32_t>(samples.size());
        percentiles(&samples, &out->median_us, &out->p99_us);
    }
    return barrier(control);
}

// Set-up time of n connections: the client's clock runs from its first connect until the
// server says it has accepted (and, for DAT, seen ESTABLISHED on) every one of them.
template <class Connect>
bool timed_setup(const Sock &control, bool client, Connect connect, double *seconds) {
    if (!barrier(control)) return false;
    auto t0 = Clock::now();
    if (!connect()) return false;
    std::uint8_t done = 1;
    if (!client) return send_all(control, &done, 1) && barrier(control);
    if (!recv_all(control, &done, 1)) return false;
    *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return barrier(control);
}

// The sequence both peers run; figures land in *f on the client.
bool run(const ScaleOptions &o, bool client, const ScalePlan &plan, const Sock &control,
         const sockaddr_storage &server, const Listener &raw_listener, ScaleIa &dat,
         ScaleFigures *f) {
    const std::uint32_t idle = plan.endpoints - 1;
    const auto qual = static_cast<DAT_CONN_QUAL>(o.port + 1u);
    auto raw_setup = [&](double *seconds) {
        std::vector<Sock> raw;
        auto connect = [&] {
            return client ? raw_connect(server, plan.raw_port, idle, plan.window, &raw)
                          : raw_accept(raw_listener, idle, &raw);
        };
        return timed_setup(control, client, connect, seconds);
    };  // closed on return: their descriptors are free for the endpoints
    say(o, client, "raw TCP connect/accept");
    if (!raw_setup(&f->tcp_setup_s) || !barrier(control)) return false;
    say(o, client, "busy connection, latency with 1 endpoint");
    if (!(client ? dat.connect_busy(server, qual) : dat.accept_busy()) ||
        !pingpong(dat, control, client, plan, &f->one_before))
        return false;
    say(o, client, "idle endpoints: create, connect");
    const int me = client ? 0 : 1;
    f->rss0_kib[me] = rss_kib();
    if (!dat.create_idle(idle, plan.idle_dtos)) return false;
    auto connect = [&] {
        return client ? dat.connect_idle(server, qual, plan.window) : dat.accept_idle();
    };
    if (!timed_setup(control, client, connect, &f->dat_setup_s)) return false;
    f->rss1_kib[me] = rss_kib();
    say(o, client, "latency with every endpoint open");
    if (!pingpong(dat, control, client, plan, &f->many)) return false;
    say(o, client, "idle endpoints: disconnect, free");
    if (!dat.drop_idle() || !barrier(control)) return false;
    say(o, client, "latency with 1 endpoint again");
    if (!pingpong(dat, control, client, plan, &f->one_after)) return false;
    say(o, client, "raw TCP connect/accept again");
    if (!raw_setup(&f->tcp_after_s) || !barrier(control)) return false;
    // The server's own figures.
    std::uint64_t mine[3] = {f->rss0_kib[me], f->rss1_kib[me], f->fd_limit[me]}, peer[3] = {};
    if (!client) return send_all(control, mine, sizeof mine);
    if (!recv_all(control, peer, sizeof peer)) return false;
    f->rss0_kib[1] = peer[0], f->rss1_kib[1] = peer[1], f->fd_limit[1] = peer[2];
    return true;
}

std::string describe(const ScaleOptions &o, const ScalePlan &plan) {
    utsname u{};
    uname(&u);
    std::string load = "?";
    std::ifstream la("/proc/loadavg");
    std::getline(la, load);
    auto cpu = [](int c) { return c < 0 ? std::string("not pinned") : "CPU " + std::to_string(c); };
    return "datscale: IA " + o.ia + ", " + std::to_string(plan.endpoints) +
           " endpoints, polling (dat_evd_dequeue), " + std::to_string(plan.lat_iters) +
           " rounds (" + std::to_string(plan.lat_warmup) +
           " warm-up) per latency\nplacement: server " + cpu(o.server_cpu) + ", client " +
           cpu(o.client_cpu) + "; " + std::to_string(std::thread::hardware_concurrency()) +
           " CPUs, Linux " + u.release + "; load average at the end: " + load;
}

int server(const ScaleOptions &o) {
    if (!pin_to_cpu(o.server_cpu)) std::perror("datscale: --server-cpu");
    Listener listener = listen_on(o.port);
    if (!listener) {
        std::perror("datscale: control port");
        return 1;
    }
    Sock control = accept_one(listener, kStartupTimeoutMs);
    ScalePlan plan;
    if (!control || !recv_all(control, &plan, sizeof plan)) {
        std::fprintf(stderr, "datscale: no client\n");
        return 1;
    }
    ScaleFigures f;
    ScaleIa dat;
    Listener raw = listen_on(plan.raw_port, static_cast<int>(4 * plan.window + 64));
    std::uint8_t ready = fd_room(plan, "server", &f.fd_limit[1]) && raw &&
                         dat.open(o.ia, plan.endpoints) &&
                         dat.listen(static_cast<DAT_CONN_QUAL>(o.port + 1u));
    if (!send_all(control, &ready, 1) || !ready) return 1;
    sockaddr_storage none{};
    bool good = run(o, false, plan, control, none, raw, dat, &f);
    dat.close();
    return good ? 0 : 1;
}

int client(const ScaleOptions &o) {
    if (!pin_to_cpu(o.client_cpu)) std::perror("datscale: --client-cpu");
    const ScalePlan &plan = o.plan;
    ScaleFigures f;
    f.endpoints = plan.endpoints;
    f.window = plan.window;
    sockaddr_storage addr{};
    if (!resolve(o.host, o.port, &addr)) {
        std::fprintf(stderr, "datscale: cannot resolve %s\n", o.host.c_str());
        return 1;
    }
    if (!fd_room(plan, "client", &f.fd_limit[0])) return 1;
    ScaleIa dat;
    if (!dat.open(o.ia, plan.endpoints)) return 1;
    Sock control = connect_to(addr, kStartupTimeoutMs);
    std::uint8_t ready = 0;
    if (!control || !send_all(control, &plan, sizeof plan) || !recv_all(control, &ready, 1) ||
        !ready) {
        std::fprintf(stderr, "datscale: no server at %s port %u (or it could not get ready)\n",
                     o.host.c_str(), o.port);
        return 1;
    }
    bool good = run(o, true, plan, control, addr, Listener(), dat, &f);
    f.max_request_dtos = dat.max_request_dtos();
    f.max_recv_dtos = dat.max_recv_dtos();
    f.ia_max_eps = dat.ia_max_eps();
    dat.close();
    if (!good) {
        std::fprintf(stderr, "datscale: run failed\n");
        return 1;
    }
    print_scale(stdout, f, describe(o, plan));
    if (!o.csv.empty() && !write_scale_csv(o.csv, f)) {
        std::perror(("datscale: " + o.csv).c_str());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    ScaleOptions o;
    int code = 0;
    if (!parse(argc, argv, &o, &code)) return code;
    if (o.role == ScaleOptions::Role::Server) return server(o);
    if (o.role == ScaleOptions::Role::Client) return client(o);
    std::fflush(nullptr);
    pid_t pid = fork();  // before any DAT call: the two processes share nothing
    if (pid < 0) {
        std::perror("datscale: fork");
        return 1;
    }
    if (pid == 0) _exit(server(o));
    int rc = client(o);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "datscale: the server process failed\n");
        if (rc == 0) rc = 1;
    }
    return rc;
}

// datbench: DAT latency and bandwidth next to a raw-TCP baseline measured in the same run.
//
// Loopback (default): forks; the child is the server, the parent the client that prints.
// --server / --client HOST: one side each, e.g. on two hosts or in two network namespaces.
//
// Start-up: the server opens its IA and DAT service point (qualifier port+1) before it
// listens on the control port, so once the client's control connection is accepted the
// DAT connect finds a listener. The client sends its Plan; both then run the same
// sequence of measurements, with barriers on the control connection between them.
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "bench.hpp"
#include "dat_session.hpp"
#include "options.hpp"
#include "results.hpp"
#include "sock.hpp"

using namespace datbench;

namespace {

constexpr int kStartupTimeoutMs = 30'000;

// CPU time of the whole process (every thread, the provider's progress threads included).
struct CpuClock {
    std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
    double cpu = used();
    static double used() {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
               static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
    }
    // {seconds, percent of one CPU} since construction.
    std::pair<double, double> since() const {
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
        return {s, s > 0 ? 100.0 * (used() - cpu) / s : 0};
    }
};

void progress(const Options &o, bool client, const char *what, std::uint32_t size) {
    if (client && !o.quiet) std::fprintf(stderr, "datbench: %s %u bytes\n", what, size);
}

bool run_plan(const Options &o, bool client, const Plan &plan, const Sock &control,
              const Sock &data, DatSession &dat, Results &results) {
    std::vector<unsigned char> tcp_buf(std::max(plan.lat_max, plan.bw_max));
    Bench b{client, plan, control, data, dat, tcp_buf, results};
    for (std::uint32_t s : sizes(plan.lat_min, plan.lat_max, plan.step)) {
        progress(o, client, "latency", s);
        // Baseline and DAT in turn, block by block, so load changes hit them alike.
        std::vector<double> raw, snd, wr, rd;
        // Room for every sample first: no reallocation between two timed rounds.
        if (client)
            for (auto *v : {&raw, &snd, &wr, &rd}) v->reserve(latency_rounds(plan, s, false));
        for (Rounds r : latency_blocks(plan, s)) {
            if (!tcp_pingpong(b, s, r, &raw)) return false;
            if (plan.raw_only) continue;
            if (!dat_send_pingpong(b, s, r, &snd) || !dat_write_pingpong(b, s, r, &wr) ||
                !dat_read_latency(b, s, r, &rd))
                return false;
        }
        if (!client) continue;
        record_latency(b, kTcpPingPong, s, &raw);
        if (plan.raw_only) continue;
        record_latency(b, kSendPingPong, s, &snd);
        record_latency(b, kWritePingPong, s, &wr);
        record_latency(b, kReadLatency, s, &rd);
    }
    {
        progress(o, client, "message rate", plan.rate_size);
        // Interleaved repetitions, medians: load noise hits every test alike.
        std::vector<double> tcp, tcpb, wr, snd;
        double v = 0;
        const std::uint64_t n = plan.rate_msgs;
        if (!plan.raw_only && !dat_write_bw(b, plan.rate_size, n / 4 + 1, &v, plan.rate_window))
            return false;
        for (std::uint32_t r = 0; r < plan.bw_reps; ++r) {
            if (!tcp_msgrate(b, false, &v)) return false;
            tcp.push_back(v);
            if (!tcp_msgrate(b, true, &v)) return false;
            tcpb.push_back(v);
            if (plan.raw_only) continue;
            if (!dat_write_bw(b, plan.rate_size, n, &v, plan.rate_window)) return false;
            wr.push_back(v / plan.rate_size);
            if (!dat_send_bw(b, plan.rate_size, n, &v, plan.rate_window)) return false;
            snd.push_back(v / plan.rate_size);
        }
        if (client) {
            const char *names[] = {kTcpRate, kTcpRateBatched, kWriteRate, kSendRate};
            std::vector<double> *sets[] = {&tcp, &tcpb, &wr, &snd};
            for (int i = 0; i < (plan.raw_only ? 2 : 4); ++i)
                results.rate.push_back(
                    {names[i], plan.rate_size, n, plan.rate_window, median_of(*sets[i])});
        }
    }
    std::vector<std::uint32_t> cpl_sizes{plan.lat_min, 4096, plan.lat_max};
    cpl_sizes.erase(std::unique(cpl_sizes.begin(), cpl_sizes.end()), cpl_sizes.end());
    for (std::uint32_t s : cpl_sizes) {
        if (s > plan.lat_max || plan.raw_only) continue;
        progress(o, client, "write completion", s);
        if (!dat_write_completion(b, s, false) || !dat_write_completion(b, s, true)) return false;
    }
    for (std::uint32_t s : sizes(plan.bw_min, plan.bw_max, plan.step)) {
        progress(o, client, "bandwidth", s);
        std::uint64_t count = std::max<std::uint64_t>(plan.bw_bytes / s, 16);
        std::vector<double> tcp, wr, rd, snd;
        double v = 0;
        // A short untimed round first: connection buffers grown, pages touched.
        if (!tcp_stream(b, s, count / 4 + 1, &v) ||
            (!plan.raw_only && !dat_write_bw(b, s, count / 4 + 1, &v)))
            return false;
        for (std::uint32_t r = 0; r < plan.bw_reps; ++r) {
            if (!tcp_stream(b, s, count, &v)) return false;
            tcp.push_back(v);
            if (plan.raw_only) continue;
            if (!dat_write_bw(b, s, count, &v)) return false;
            wr.push_back(v);
            if (!dat_read_bw(b, s, count, &v)) return false;
            rd.push_back(v);
            if (!dat_send_bw(b, s, count, &v)) return false;
            snd.push_back(v);
        }
        if (client) {
            std::uint64_t bytes = count * s;
            results.bandwidth.push_back({kTcpStream, s, bytes, median_of(tcp)});
            if (plan.raw_only) continue;
            results.bandwidth.push_back({kRdmaWrite, s, bytes, median_of(wr)});
            results.bandwidth.push_back({kRdmaRead, s, bytes, median_of(rd)});
            results.bandwidth.push_back({kSend, s, bytes, median_of(snd)});
        }
    }
    return true;
}

// Both peers: stay connected and idle, then run the plan, measuring the CPU time of each
// period; the server sends its figures to the client, which records all four.
bool run_measured(const Options &o, bool client, const Plan &plan, const Sock &control,
                  const Sock &data, DatSession &dat, Results &results) {
    if (plan.idle_s == 0) return run_plan(o, client, plan, control, data, dat, results);
    progress(o, client, "idle seconds", plan.idle_s);
    CpuClock idle;
    std::this_thread::sleep_for(std::chrono::seconds(plan.idle_s));
    auto [idle_s, idle_pct] = idle.since();
    if (!barrier(control)) return false;
    CpuClock run;
    if (!run_plan(o, client, plan, control, data, dat, results)) return false;
    auto [run_s, run_pct] = run.since();
    double mine[4] = {idle_s, idle_pct, run_s, run_pct}, peer[4] = {};
    if (!client) return send_all(control, mine, sizeof mine);
    if (!recv_all(control, peer, sizeof peer)) return false;
    results.cpu.push_back({"idle_client", mine[0], mine[1]});
    results.cpu.push_back({"idle_server", peer[0], peer[1]});
    results.cpu.push_back({"run_client", mine[2], mine[3]});
    results.cpu.push_back({"run_server", peer[2], peer[3]});
    return true;
}

std::string cpu_name(int cpu) {
    return cpu < 0 ? std::string("not pinned") : "on CPU " + std::to_string(cpu);
}

std::string describe(const Options &o, const Plan &plan) {
    utsname u{};
    uname(&u);
    std::string cpu = "unknown CPU";
    std::ifstream info("/proc/cpuinfo");
    for (std::string line; std::getline(info, line);) {
        if (line.rfind("model name", 0) == 0) {
            cpu = line.substr(line.find(':') + 2);
            break;
        }
    }
    char buf[768];
    std::snprintf(buf, sizeof buf,
                  "datbench: IA %s, %s mode, peer %s; %s, %u CPUs, Linux %s\n"
                  "latency: %u rounds (%u warm-up) per size <= 4 KiB, in %u blocks, raw TCP and "
                  "DAT in turn; bandwidth: %llu bytes x %u repetitions per size\n"
                  "placement: server %s, client %s",
                  o.ia.c_str(), plan.wait ? "waiting (dat_evd_wait)" : "polling (dat_evd_dequeue)",
                  o.role == Role::Loopback ? "forked on this host" : o.host.c_str(), cpu.c_str(),
                  std::thread::hardware_concurrency(), u.release, plan.lat_iters, plan.lat_warmup,
                  plan.lat_blocks, static_cast<unsigned long long>(plan.bw_bytes), plan.bw_reps,
                  cpu_name(o.server_cpu).c_str(), cpu_name(o.client_cpu).c_str());
    return buf;
}

int server(const Options &o) {
    if (!pin_to_cpu(o.server_cpu)) std::perror("datbench: --server-cpu");
    Listener listener = listen_on(o.port);
    if (!listener) {
        std::perror("datbench: control port");
        return 1;
    }
    Sock control = accept_one(listener, kStartupTimeoutMs);
    Plan plan;
    if (!control || !recv_all(control, &plan, sizeof plan)) {
        std::fprintf(stderr, "datbench: no client\n");
        return 1;
    }
    // The client's plan decides buffer sizes and mode; the service point exists before the
    // client hears back, so its DAT connect finds a listener.
    DatSession dat;
    std::uint8_t ready = dat.open(o.ia, plan.wait != 0, std::max(plan.lat_max, plan.bw_max)) &&
                         dat.listen(o.port + 1u);
    if (!send_all(control, &ready, 1) || !ready) return 1;
    Sock data = accept_one(listener, kStartupTimeoutMs);
    if (!data) return 1;
    set_nodelay(data);
    if (!dat.accept(kStartupTimeoutMs) || !dat.exchange(control)) return 1;
    Results unused;
    bool ok = barrier(control) && run_measured(o, false, plan, control, data, dat, unused);
    dat.close();
    return ok ? 0 : 1;
}

int client(const Options &o) {
    if (!pin_to_cpu(o.client_cpu)) std::perror("datbench: --client-cpu");
    const Plan &plan = o.plan;
    sockaddr_storage addr{};
    if (!resolve(o.host, o.port, &addr)) {
        std::fprintf(stderr, "datbench: cannot resolve %s\n", o.host.c_str());
        return 1;
    }
    DatSession dat;
    if (!dat.open(o.ia, plan.wait != 0, std::max(plan.lat_max, plan.bw_max))) return 1;
    Sock control = connect_to(addr, kStartupTimeoutMs);
    std::uint8_t accepted = 0;
    if (!control || !send_all(control, &plan, sizeof plan) || !recv_all(control, &accepted, 1) ||
        !accepted) {
        std::fprintf(stderr, "datbench: no server at %s port %u (or it could not open its IA)\n",
                     o.host.c_str(), o.port);
        return 1;
    }
    Sock data = connect_to(addr, kStartupTimeoutMs);
    if (!data) return 1;
    set_nodelay(data);
    if (!dat.connect(addr, o.port + 1u) || !dat.exchange(control)) return 1;
    Results results;
    bool ok = barrier(control) && run_measured(o, true, plan, control, data, dat, results);
    dat.close();
    if (!ok) {
        std::fprintf(stderr, "datbench: run failed\n");
        return 1;
    }
    std::string baseline =
        plan.wait ? "blocking send()/recv()" : "busy-polled (non-blocking send()/recv() retried)";
    // The same kind of socket as the provider's (sock.hpp): what the connection really is.
    baseline += ", " + socket_kind(data) + " sockets";
    print_tables(stdout, results, describe(o, plan), baseline.c_str());
    if (!o.csv.empty() && !write_csv(o.csv, results)) {
        std::perror(("datbench: " + o.csv).c_str());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    int code = 0;
    if (!parse_options(argc, argv, &o, &code)) return code;
    if (o.role == Role::Server) return server(o);
    if (o.role == Role::Client) return client(o);
    // Loopback: fork before any DAT call, so the two processes share nothing.
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
        std::perror("datbench: fork");
        return 1;
    }
    if (pid == 0) _exit(server(o));
    int rc = client(o);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "datbench: the server process failed\n");
        if (rc == 0) rc = 1;
    }
    return rc;
}

#include "scale_report.hpp"

namespace datbench::scale {

namespace {

double rate(std::uint32_t n, double s) {
    return s > 0 ? n / s : 0;
}

// KiB per idle endpoint: growth of the resident set while they were created and
// connected. RSS can shrink (freed pages returned): shown as 0, not a negative figure.
double per_ep(const ScaleFigures &f, int side) {
    std::uint32_t idle = f.endpoints - 1;
    if (idle == 0 || f.rss1_kib[side] < f.rss0_kib[side]) return 0;
    return static_cast<double>(f.rss1_kib[side] - f.rss0_kib[side]) / idle;
}

double ratio(double a, double b) {
    return b > 0 ? a / b : 0;
}

// The raw baseline: mean rate of the runs before and after DAT's (load drifts).
double raw_rate(const ScaleFigures &f) {
    return (rate(f.endpoints - 1, f.tcp_setup_s) + rate(f.endpoints - 1, f.tcp_after_s)) / 2;
}

}  // namespace

void print_scale(std::FILE *out, const ScaleFigures &f, const std::string &header) {
    const std::uint32_t idle = f.endpoints - 1;
    std::fprintf(out, "%s\n", header.c_str());
    std::fprintf(out,
                 "endpoints: 1 busy + %u idle on one IA per side; idle EP attributes "
                 "(max_request_dtos %lld, max_recv_dtos %lld; the IA reports max_eps %lld)\n"
                 "descriptor limit (soft, raised to hard): client %llu, server %llu\n\n",
                 idle, static_cast<long long>(f.max_request_dtos),
                 static_cast<long long>(f.max_recv_dtos), static_cast<long long>(f.ia_max_eps),
                 static_cast<unsigned long long>(f.fd_limit[0]),
                 static_cast<unsigned long long>(f.fd_limit[1]));
    double tcp = raw_rate(f), dat = rate(idle, f.dat_setup_s);
    std::fprintf(out,
                 "Connection set-up, %u connections, %u in flight (ratio: rate / mean rate of the "
                 "two raw runs)\n",
                 idle, f.window);
    std::fprintf(out, "| test | seconds | connections/s | ratio |\n|---|---|---|---|\n");
    std::fprintf(out, "| raw TCP connect/accept, before DAT | %.3f | %.0f | %.2f |\n",
                 f.tcp_setup_s, rate(idle, f.tcp_setup_s), ratio(rate(idle, f.tcp_setup_s), tcp));
    std::fprintf(out, "| raw TCP connect/accept, after DAT | %.3f | %.0f | %.2f |\n", f.tcp_after_s,
                 rate(idle, f.tcp_after_s), ratio(rate(idle, f.tcp_after_s), tcp));
    std::fprintf(out,
                 "| DAT connect/accept to ESTABLISHED on both sides | %.3f | %.0f | %.2f |\n\n",
                 f.dat_setup_s, dat, ratio(dat, tcp));
    std::fprintf(out,
                 "Memory per idle endpoint (VmRSS growth / %u; EP object, its connection state, "
                 "one posted receive and a share of the shared EVDs; socket buffers are kernel "
                 "memory, not counted)\n",
                 idle);
    std::fprintf(out, "| process | RSS before KiB | RSS after KiB | KiB per endpoint |\n");
    std::fprintf(out, "|---|---|---|---|\n");
    const char *names[2] = {"client", "server"};
    for (int s = 0; s < 2; ++s)
        std::fprintf(out, "| %s | %llu | %llu | %.2f |\n", names[s],
                     static_cast<unsigned long long>(f.rss0_kib[s]),
                     static_cast<unsigned long long>(f.rss1_kib[s]), per_ep(f, s));
    std::fprintf(out,
                 "\n8-byte send/recv ping-pong on the busy endpoint, polling (one way, us)\n"
                 "| endpoints open | rounds | median | p99 | median / 1 endpoint before |\n"
                 "|---|---|---|---|---|\n");
    auto row = [&](const char *what, const Latency &l) {
        std::fprintf(out, "| %s | %u | %.2f | %.2f | %.3f |\n", what, l.iters, l.median_us,
                     l.p99_us, ratio(l.median_us, f.one_before.median_us));
    };
    row("1 (before the idle ones)", f.one_before);
    std::string many =
        std::to_string(f.endpoints) + " (1 busy + " + std::to_string(idle) + " idle)";
    row(many.c_str(), f.many);
    row("1 (after they are gone)", f.one_after);
    double mean1 = (f.one_before.median_us + f.one_after.median_us) / 2;
    std::fprintf(out,
                 "latency ratio, %u endpoints / mean of the two 1-endpoint medians: %.3f "
                 "(target <= 1.10)\n",
                 f.endpoints, ratio(f.many.median_us, mean1));
}

bool write_scale_csv(const std::string &path, const ScaleFigures &f) {
    std::FILE *o = std::fopen(path.c_str(), "w");
    if (o == nullptr) return false;
    const std::uint32_t idle = f.endpoints - 1;
    double tcp = raw_rate(f), dat = rate(idle, f.dat_setup_s);
    std::fprintf(o,
                 "section,test,endpoints,iterations,median_us,p99_us,value,unit,baseline_test,"
                 "ratio\n");
    std::fprintf(o, "setup,tcp_connect_accept_before,%u,%u,,,%.1f,conn_per_s,,\n", idle, idle,
                 rate(idle, f.tcp_setup_s));
    std::fprintf(o, "setup,tcp_connect_accept_after,%u,%u,,,%.1f,conn_per_s,,\n", idle, idle,
                 rate(idle, f.tcp_after_s));
    std::fprintf(o, "setup,tcp_connect_accept,%u,%u,,,%.1f,conn_per_s,,\n", idle, idle, tcp);
    std::fprintf(o, "setup,dat_connect_accept,%u,%u,,,%.1f,conn_per_s,tcp_connect_accept,%.4f\n",
                 idle, idle, dat, ratio(dat, tcp));
    std::fprintf(o, "memory,dat_ep_client,%u,,,,%.3f,kib_per_ep,,\n", idle, per_ep(f, 0));
    std::fprintf(o, "memory,dat_ep_server,%u,,,,%.3f,kib_per_ep,,\n", idle, per_ep(f, 1));
    auto lat = [&](const char *test, std::uint32_t eps, const Latency &l) {
        std::fprintf(o, "latency,%s,%u,%u,%.3f,%.3f,,us,dat_send_pingpong_1ep,%.4f\n", test, eps,
                     l.iters, l.median_us, l.p99_us, ratio(l.median_us, f.one_before.median_us));
    };
    lat("dat_send_pingpong_1ep", 1, f.one_before);
    lat("dat_send_pingpong_idle", f.endpoints, f.many);
    lat("dat_send_pingpong_1ep_after", 1, f.one_after);
    return std::fclose(o) == 0;
}

}  // namespace datbench::scale

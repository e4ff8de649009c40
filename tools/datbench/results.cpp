#include "results.hpp"

#include <algorithm>
#include <cmath>

namespace datbench {

void percentiles(std::vector<double> *s, double *median, double *p99) {
    *median = *p99 = 0;
    if (s->empty()) return;
    std::sort(s->begin(), s->end());
    *median = (*s)[s->size() / 2];
    auto idx = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(s->size()))) - 1;
    *p99 = (*s)[std::min(idx, s->size() - 1)];
}

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

namespace {

const LatencyRow *find_lat(const Results &r, const char *test, std::uint32_t size) {
    for (const auto &row : r.latency)
        if (row.test == test && row.size == size) return &row;
    return nullptr;
}

const BandwidthRow *find_bw(const Results &r, const char *test, std::uint32_t size) {
    for (const auto &row : r.bandwidth)
        if (row.test == test && row.size == size) return &row;
    return nullptr;
}

std::string size_str(std::uint32_t s) {
    char b[32];
    if (s >= (1u << 20) && s % (1u << 20) == 0)
        std::snprintf(b, sizeof b, "%u MiB", s >> 20);
    else if (s >= 1024 && s % 1024 == 0)
        std::snprintf(b, sizeof b, "%u KiB", s >> 10);
    else
        std::snprintf(b, sizeof b, "%u B", s);
    return b;
}

template <class Row>
std::vector<std::uint32_t> sizes_of(const std::vector<Row> &rows) {
    std::vector<std::uint32_t> v;
    for (const auto &r : rows)
        if (std::find(v.begin(), v.end(), r.size) == v.end()) v.push_back(r.size);
    std::sort(v.begin(), v.end());
    return v;
}

// The baseline each test is compared with.
const char *baseline_of(const std::string &test) {
    if (test == kTcpStream || test == kRdmaWrite || test == kRdmaRead || test == kSend)
        return kTcpStream;
    if (test == kTcpRate || test == kTcpRateBatched || test == kWriteRate || test == kSendRate)
        return kTcpRate;
    return kTcpPingPong;
}

const RateRow *find_rate(const Results &r, const char *test) {
    for (const auto &row : r.rate)
        if (row.test == test) return &row;
    return nullptr;
}

}  // namespace

void print_tables(std::FILE *out, const Results &r, const std::string &header,
                  const char *baseline) {
    std::fprintf(out, "%s\nraw TCP baseline: %s, same connection set-up, same process placement\n",
                 header.c_str(), baseline);
    if (!r.latency.empty()) {
        std::fprintf(out,
                     "\nOne-way latency, microseconds (median / p99; ratio = median / raw TCP "
                     "median)\n");
        std::fprintf(out, "| %-8s | %-17s | %-26s | %-26s | %-26s |\n", "size", "raw TCP ping-pong",
                     "DAT send/recv ping-pong", "DAT RDMA-write ping-pong",
                     "DAT RDMA read (RTT/2)");
        std::fprintf(out,
                     "|----------|-------------------|----------------------------|------"
                     "----------------------|----------------------------|\n");
        for (std::uint32_t s : sizes_of(r.latency)) {
            const LatencyRow *b = find_lat(r, kTcpPingPong, s);
            if (b == nullptr) continue;
            char cells[3][64];
            const char *tests[3] = {kSendPingPong, kWritePingPong, kReadLatency};
            for (int i = 0; i < 3; ++i) {
                const LatencyRow *x = find_lat(r, tests[i], s);
                if (x == nullptr)
                    std::snprintf(cells[i], sizeof cells[i], "-");
                else
                    std::snprintf(cells[i], sizeof cells[i], "%7.2f / %7.2f  %5.2fx", x->median_us,
                                  x->p99_us, b->median_us > 0 ? x->median_us / b->median_us : 0);
            }
            std::fprintf(out, "| %8s | %7.2f / %7.2f | %-26s | %-26s | %-26s |\n",
                         size_str(s).c_str(), b->median_us, b->p99_us, cells[0], cells[1],
                         cells[2]);
        }
        bool any_ack = false;
        for (const auto &row : r.latency) any_ack |= row.test == kWriteCompletion;
        if (any_ack) {
            std::fprintf(out,
                         "\nRDMA write, post to completion at the initiator, microseconds (median "
                         "/ p99):\ndelayed_ack waits until the target placed the data\n");
            std::fprintf(out, "| %-8s | %-19s | %-19s | %-10s |\n", "size", "delayed_ack=false",
                         "delayed_ack=true", "cost");
            std::fprintf(out,
                         "|----------|---------------------|---------------------|------------|\n");
            for (std::uint32_t s : sizes_of(r.latency)) {
                const LatencyRow *a = find_lat(r, kWriteCompletion, s);
                const LatencyRow *d = find_lat(r, kWriteCompletionAck, s);
                if (a == nullptr) continue;
                if (d == nullptr) {
                    std::fprintf(out, "| %8s | %7.2f / %9.2f | %-19s | %-10s |\n",
                                 size_str(s).c_str(), a->median_us, a->p99_us, "unsupported", "-");
                    continue;
                }
                std::fprintf(out, "| %8s | %7.2f / %9.2f | %7.2f / %9.2f | %+7.2f us |\n",
                             size_str(s).c_str(), a->median_us, a->p99_us, d->median_us, d->p99_us,
                             d->median_us - a->median_us);
            }
        }
    }
    if (const RateRow *base = find_rate(r, kTcpRate); base != nullptr) {
        std::fprintf(out,
                     "\nMessage rate, %u-byte messages, %u in flight, million messages/s "
                     "(median; ratio = figure / raw TCP, one send() per message)\n",
                     base->size, base->window);
        std::fprintf(out, "| %-44s | %-16s |\n", "test", "Mmsg/s   ratio");
        std::fprintf(out, "|----------------------------------------------|------------------|\n");
        const char *names[][2] = {{kTcpRate, "raw TCP, one send() per message"},
                                  {kTcpRateBatched, "raw TCP, batched (window per send())"},
                                  {kWriteRate, "DAT RDMA write, signaled"},
                                  {kSendRate, "DAT send/recv, signaled"}};
        for (const auto &n : names) {
            const RateRow *x = find_rate(r, n[0]);
            if (x == nullptr) continue;
            std::fprintf(out, "| %-44s | %7.3f  %5.2fx |\n", n[1], x->mops,
                         base->mops > 0 ? x->mops / base->mops : 0);
        }
    }
    if (!r.cpu.empty()) {
        std::fprintf(
            out, "\nCPU time (user + system, all threads of the process), percent of one CPU\n");
        for (const auto &c : r.cpu)
            std::fprintf(out, "  %-12s %6.2f %% over %.1f s\n", c.what.c_str(), c.percent,
                         c.seconds);
    }
    if (!r.bandwidth.empty()) {
        std::fprintf(out,
                     "\nBandwidth, MB/s (10^6 bytes/s; median of the repetitions; ratio = figure "
                     "/ raw TCP stream)\n");
        std::fprintf(out, "| %-8s | %-14s | %-18s | %-18s | %-18s |\n", "size", "raw TCP stream",
                     "DAT RDMA write", "DAT RDMA read", "DAT send");
        std::fprintf(out,
                     "|----------|----------------|--------------------|--------------------"
                     "|--------------------|\n");
        for (std::uint32_t s : sizes_of(r.bandwidth)) {
            const BandwidthRow *b = find_bw(r, kTcpStream, s);
            if (b == nullptr) continue;
            char cells[3][64];
            const char *tests[3] = {kRdmaWrite, kRdmaRead, kSend};
            for (int i = 0; i < 3; ++i) {
                const BandwidthRow *x = find_bw(r, tests[i], s);
                if (x == nullptr)
                    std::snprintf(cells[i], sizeof cells[i], "-");
                else
                    std::snprintf(cells[i], sizeof cells[i], "%9.0f  %5.2fx", x->mb_s,
                                  b->mb_s > 0 ? x->mb_s / b->mb_s : 0);
            }
            std::fprintf(out, "| %8s | %14.0f | %-18s | %-18s | %-18s |\n", size_str(s).c_str(),
                         b->mb_s, cells[0], cells[1], cells[2]);
        }
    }
}

bool write_csv(const std::string &path, const Results &r) {
    std::FILE *f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return false;
    std::fprintf(f, "section,test,size,iterations,median_us,p99_us,mb_per_s,baseline_test,ratio\n");
    for (const auto &row : r.latency) {
        const LatencyRow *b = find_lat(r, baseline_of(row.test), row.size);
        double ratio = b != nullptr && b->median_us > 0 ? row.median_us / b->median_us : 0;
        std::fprintf(f, "latency,%s,%u,%u,%.3f,%.3f,,%s,%.4f\n", row.test.c_str(), row.size,
                     row.iters, row.median_us, row.p99_us, baseline_of(row.test), ratio);
    }
    for (const auto &row : r.bandwidth) {
        const BandwidthRow *b = find_bw(r, baseline_of(row.test), row.size);
        double ratio = b != nullptr && b->mb_s > 0 ? row.mb_s / b->mb_s : 0;
        std::fprintf(f, "bandwidth,%s,%u,%llu,,,%.1f,%s,%.4f\n", row.test.c_str(), row.size,
                     static_cast<unsigned long long>(row.bytes / (row.size ? row.size : 1)),
                     row.mb_s, baseline_of(row.test), ratio);
    }
    for (const auto &row : r.cpu)
        std::fprintf(f, "cpu,%s,0,%.0f,,,%.3f,,\n", row.what.c_str(), row.seconds, row.percent);
    const RateRow *rb = find_rate(r, kTcpRate);
    for (const auto &row : r.rate) {
        double ratio = rb != nullptr && rb->mops > 0 ? row.mops / rb->mops : 0;
        std::fprintf(f, "rate,%s,%u,%llu,,,%.4f,%s,%.4f\n", row.test.c_str(), row.size,
                     static_cast<unsigned long long>(row.msgs), row.mops, kTcpRate, ratio);
    }
    return std::fclose(f) == 0;
}

}  // namespace datbench

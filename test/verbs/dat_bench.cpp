// dat_bench: RDMA-write bandwidth and send/receive latency through the DAT 2.0 API only,
// so the same binary measures any provider (ours or the reference's libdaplofa).
//
//   server: dat_bench -P <ia>[,<ia>...] -s [-q qual] [-m bw|lat] [-b bytes] [-n iters] [-W warm-up]
//   client: dat_bench -P <ia>[,<ia>...] -h <server address> [-q qual] [-m bw|lat] [-b bytes]
//           [-n iters] [-w window] [-W warm-up iters]
//
// The client connects (one connection per IA, the k-th on qualifier qual + k), the two
// sides exchange their buffers' RMR triplets, then:
//  bw:  the client keeps `window` RDMA writes of `bytes` in flight until `iters` are done
//       and reports MB/s (10^6 bytes/s) from its own clock: the median rate of its blocks
//       of min(100, iters/10) writes, and the overall rate;
//  lat: ping-pong of `bytes`-byte sends, reports half the round trip (median and mean, µs).
// Completions are taken by polling dat_evd_dequeue (like perftest's default). For each IA
// the client prints "RESULT <ia> <mode> <bytes> <iters> <value> <unit> ..." and a "CPU"
// line (its user and system time during that IA's blocks). With several IAs the blocks
// go round them in turn (see run()): each meets the same moments of the host.
//
// Same conditions for every provider: the buffers are page-aligned (a heap buffer's offset
// in its page depends on what the provider allocated before it, and changes how many
// pages each packet's payload touches), and `warm-up` untimed iterations (writes, or round
// trips) run first on each connection, so first-touch costs (page faults, the device's
// MR and QP caches, the kernel's workers) are out of the timed part. Server and client
// must be given the same -P, -m, -n, -w and -W.
#include <dat2/udat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Options {
    std::string ia = "ofa-v2-verbs-rxe";
    bool server = false;
    std::string host;
    DAT_CONN_QUAL qual = 45300;
    std::string mode = "bw";
    std::size_t bytes = 65536;
    long iters = 2000;
    int window = 16;
    long warmup = -1;  // -1: the mode's default (bw 200 writes, lat 200 round trips)
};

[[noreturn]] void die(const char *what, DAT_RETURN rc) {
    const char *major = "", *minor = "";
    dat_strerror(rc, &major, &minor);
    std::fprintf(stderr, "dat_bench: %s: 0x%x %s %s\n", what, rc, major, minor);
    std::exit(1);
}

void check(const char *what, DAT_RETURN rc) {
    if (rc != DAT_SUCCESS) die(what, rc);
}

// Page-aligned, zeroed memory of its own pages (mmap), whatever the heap holds.
struct Pages {
    unsigned char *p = nullptr;
    std::size_t n = 0, mapped = 0;
    Pages() = default;
    Pages(const Pages &) = delete;
    Pages &operator=(const Pages &) = delete;
    ~Pages() {
        if (p != nullptr) munmap(p, mapped);
    }
    void assign(std::size_t len) {
        long pg = sysconf(_SC_PAGESIZE);
        mapped = (len + static_cast<std::size_t>(pg) - 1) / static_cast<std::size_t>(pg) *
                 static_cast<std::size_t>(pg);
        void *m = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) die("mmap", DAT_INSUFFICIENT_RESOURCES);
        p = static_cast<unsigned char *>(m);
        n = len;
        std::memset(p, 0, mapped);  // touched now, not during the measurement
    }
    unsigned char *data() const { return p; }
    std::size_t size() const { return n; }
};

struct Region {
    Pages mem;
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lctx = 0;
    DAT_RMR_CONTEXT rctx = 0;
};

struct Node {
    std::string name;  // the IA
    DAT_CONN_QUAL qual = 0;
    DAT_RMR_TRIPLET peer{};
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL, cr = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL,
                   req = DAT_HANDLE_NULL, recv = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    Region data, msg_out, msg_in;

    void reg(Region *r, std::size_t n) {
        r->mem.assign(n);
        DAT_REGION_DESCRIPTION d;
        d.for_va = r->mem.data();
        DAT_VLEN len;
        DAT_VADDR va;
        check("dat_lmr_create",
              dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, d, n, pz, DAT_MEM_PRIV_ALL_FLAG,
                             DAT_VA_TYPE_VA, &r->lmr, &r->lctx, &r->rctx, &len, &va));
    }
};

// One event from `evd`, by polling (the reference returns a bare DAT_QUEUE_EMPTY for an
// empty DTO EVD, so only the type is compared).
DAT_EVENT poll_event(DAT_EVD_HANDLE evd, const char *what) {
    DAT_EVENT ev;
    for (;;) {
        DAT_RETURN rc = dat_evd_dequeue(evd, &ev);
        if (rc == DAT_SUCCESS) return ev;
        if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY) die(what, rc);
    }
}

DAT_EVENT wait_event(DAT_EVD_HANDLE evd, const char *what) {
    DAT_EVENT ev;
    DAT_COUNT more;
    check(what, dat_evd_wait(evd, 30'000'000, 1, &ev, &more));
    return ev;
}

void dto_ok(const DAT_EVENT &ev, const char *what) {
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
        ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
        std::fprintf(stderr, "dat_bench: %s: event 0x%x status %d\n", what, ev.event_number,
                     ev.event_data.dto_completion_event_data.status);
        std::exit(1);
    }
}

void setup(Node &n, const Options &o) {
    n.async = DAT_HANDLE_NULL;
    check("dat_ia_open", dat_ia_open(const_cast<char *>(n.name.c_str()), 8, &n.async, &n.ia));
    check("dat_pz_create", dat_pz_create(n.ia, &n.pz));
    check("cr evd", dat_evd_create(n.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &n.cr));
    check("conn evd", dat_evd_create(n.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &n.conn));
    check("req evd", dat_evd_create(n.ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &n.req));
    check("recv evd", dat_evd_create(n.ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &n.recv));
    DAT_EP_ATTR a{};
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = static_cast<DAT_SEG_LENGTH>(std::max<std::size_t>(o.bytes, 64));
    a.max_rdma_size = a.max_message_size;
    a.qos = DAT_QOS_BEST_EFFORT;
    a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.max_recv_dtos = 64;
    a.max_request_dtos = 64;
    a.max_recv_iov = 1;
    a.max_request_iov = 1;
    a.max_rdma_read_in = 4;
    a.max_rdma_read_out = 4;
    a.srq_soft_hw = DAT_HW_DEFAULT;
    a.max_rdma_read_iov = 1;
    a.max_rdma_write_iov = 1;
    check("dat_ep_create", dat_ep_create(n.ia, n.pz, n.recv, n.req, n.conn, &a, &n.ep));
    n.reg(&n.data, std::max<std::size_t>(o.bytes, 64));
    n.reg(&n.msg_out, 64);
    n.reg(&n.msg_in, 64);
}

DAT_LMR_TRIPLET iov(const Region &r, std::size_t len) {
    DAT_LMR_TRIPLET t;
    t.virtual_address = reinterpret_cast<DAT_VADDR>(r.mem.data());
    t.segment_length = static_cast<DAT_SEG_LENGTH>(len);
    t.lmr_context = r.lctx;
    return t;
}

void post_recv(Node &n, const Region &r, std::size_t len, std::uint64_t cookie) {
    DAT_LMR_TRIPLET t = iov(r, len);
    DAT_DTO_COOKIE c;
    c.as_64 = cookie;
    check("dat_ep_post_recv", dat_ep_post_recv(n.ep, 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG));
}

void post_send(Node &n, const Region &r, std::size_t len, std::uint64_t cookie) {
    DAT_LMR_TRIPLET t = iov(r, len);
    DAT_DTO_COOKIE c;
    c.as_64 = cookie;
    check("dat_ep_post_send", dat_ep_post_send(n.ep, 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG));
}

void listen(Node &n) {
    check("dat_psp_create", dat_psp_create(n.ia, n.qual, n.cr, DAT_PSP_CONSUMER_FLAG, &n.psp));
}

void connect(Node &n, const Options &o) {
    if (o.server) {
        DAT_EVENT ev = wait_event(n.cr, "waiting for a connection request");
        check("dat_cr_accept",
              dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, n.ep, 0, nullptr));
    } else {
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        if (inet_pton(AF_INET, o.host.c_str(), &sin.sin_addr) != 1)
            die("bad -h address", DAT_INVALID_PARAMETER);
        check("dat_ep_connect",
              dat_ep_connect(n.ep, reinterpret_cast<sockaddr *>(&sin), n.qual, 30'000'000, 0,
                             nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
    }
    DAT_EVENT ev = wait_event(n.conn, "waiting for the connection");
    if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        std::fprintf(stderr, "dat_bench: connection event 0x%x\n", ev.event_number);
        std::exit(1);
    }
}

double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Keeps `window` RDMA writes in flight until `count` have completed.
void write_loop(Node &n, const Options &o, long count) {
    DAT_LMR_TRIPLET t = iov(n.data, o.bytes);
    DAT_RMR_TRIPLET r = n.peer;
    r.segment_length = static_cast<DAT_SEG_LENGTH>(o.bytes);
    long posted = 0, done = 0;
    while (done < count) {
        while (posted < count && posted - done < o.window) {
            DAT_DTO_COOKIE c;
            c.as_64 = static_cast<std::uint64_t>(posted);
            check("dat_ep_post_rdma_write",
                  dat_ep_post_rdma_write(n.ep, 1, &t, c, &r, DAT_COMPLETION_DEFAULT_FLAG));
            ++posted;
        }
        dto_ok(poll_event(n.req, "write completion"), "rdma write");
        ++done;
    }
}

// `count` ping-pongs of `bytes`; the client appends half of each round trip to `half`.
void pingpong(Node &n, const Options &o, long count, std::vector<double> *half) {
    for (long i = 0; i < count; ++i) {
        if (o.server) {
            dto_ok(poll_event(n.recv, "ping"), "ping");
            post_recv(n, n.data, o.bytes, 2);
            post_send(n, n.msg_out, o.bytes, 3);
            dto_ok(poll_event(n.req, "pong send"), "pong send");
        } else {
            double t0 = now_us();
            post_send(n, n.msg_out, o.bytes, 3);
            dto_ok(poll_event(n.recv, "pong"), "pong");
            if (half != nullptr) half->push_back((now_us() - t0) / 2);
            post_recv(n, n.data, o.bytes, 2);
            dto_ok(poll_event(n.req, "ping send"), "ping send");
        }
    }
}

double seconds(const timeval &a, const timeval &b) {
    return static_cast<double>(b.tv_sec - a.tv_sec) +
           static_cast<double>(b.tv_usec - a.tv_usec) / 1e6;
}

struct Tally {
    std::vector<double> samples;  // bw: each block's MB/s; lat: each round trip's half, µs
    double us = 0, user = 0, sys = 0;
};

// The timed part, in blocks that go round the IAs (the order reversed every other block),
// so that every IA meets the same moments of a busy host: a TCG guest loses time slices
// to the host's other work, for seconds at a time. Both sides run the same sequence.
void run(std::vector<std::unique_ptr<Node>> &nodes, const Options &o) {
    const bool bw = o.mode != "lat";
    if (bw && o.server) {  // wait for the client's "done" messages
        for (auto &n : nodes) dto_ok(wait_event(n->recv, "waiting for done"), "done message");
        return;
    }
    for (auto &n : nodes) {  // untimed
        if (bw)
            write_loop(*n, o, o.warmup);
        else
            pingpong(*n, o, o.warmup, nullptr);
    }
    const long block = std::max<long>(o.window, std::min<long>(100, o.iters / 10));
    std::vector<Tally> tally(nodes.size());
    for (long done = 0, b = 0; done < o.iters; done += block, ++b) {
        long count = std::min(block, o.iters - done);
        for (std::size_t k = 0; k < nodes.size(); ++k) {
            std::size_t i = b % 2 == 0 ? k : nodes.size() - 1 - k;
            Tally &t = tally[i];
            rusage u0{}, u1{};
            getrusage(RUSAGE_SELF, &u0);
            double t0 = now_us();
            if (bw)
                write_loop(*nodes[i], o, count);
            else
                pingpong(*nodes[i], o, count, o.server ? nullptr : &t.samples);
            double us = now_us() - t0;
            getrusage(RUSAGE_SELF, &u1);
            t.us += us;
            t.user += seconds(u0.ru_utime, u1.ru_utime);
            t.sys += seconds(u0.ru_stime, u1.ru_stime);
            if (bw)
                t.samples.push_back(static_cast<double>(o.bytes) * static_cast<double>(count) / us);
        }
    }
    if (o.server) return;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        Node &n = *nodes[i];
        Tally &t = tally[i];
        std::sort(t.samples.begin(), t.samples.end());
        double med = t.samples.empty() ? 0 : t.samples[t.samples.size() / 2];
        if (bw) {
            post_send(n, n.msg_out, 8, 1);
            dto_ok(poll_event(n.req, "done send"), "done send");
            double all = static_cast<double>(o.bytes) * static_cast<double>(o.iters) / t.us;
            std::printf(
                "RESULT %s bw %zu %ld %.1f MB/s median of %zu blocks of %ld, %.1f overall\n",
                n.name.c_str(), o.bytes, o.iters, med, t.samples.size(), block, all);
        } else {
            double sum = 0;
            for (double v : t.samples) sum += v;
            std::printf("RESULT %s lat %zu %ld %.2f us median %.2f mean\n", n.name.c_str(), o.bytes,
                        o.iters, med, sum / static_cast<double>(t.samples.size()));
        }
        // Where the client's time went (rxe's requester may run in the posting syscall: sys).
        std::printf("CPU %s user %.3f s sys %.3f s wall %.3f s\n", n.name.c_str(), t.user, t.sys,
                    t.us / 1e6);
    }
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    int c;
    while ((c = getopt(argc, argv, "P:sh:q:m:b:n:w:W:")) != -1) {
        switch (c) {
            case 'P':
                o.ia = optarg;
                break;
            case 's':
                o.server = true;
                break;
            case 'h':
                o.host = optarg;
                break;
            case 'q':
                o.qual = std::strtoull(optarg, nullptr, 0);
                break;
            case 'm':
                o.mode = optarg;
                break;
            case 'b':
                o.bytes = std::strtoull(optarg, nullptr, 0);
                break;
            case 'n':
                o.iters = std::strtol(optarg, nullptr, 0);
                break;
            case 'w':
                o.window = std::atoi(optarg);
                break;
            case 'W':
                o.warmup = std::strtol(optarg, nullptr, 0);
                break;
            default:
                std::fprintf(
                    stderr,
                    "usage: %s -P ia[,ia...] (-s | -h addr) [-q qual] [-m bw|lat] [-b bytes] [-n "
                    "iters] [-w window] [-W warm-up]\n",
                    argv[0]);
                return 2;
        }
    }
    if (!o.server && o.host.empty()) o.server = true;
    if (o.mode == "lat" && o.bytes > 64) o.bytes = 64;
    if (o.warmup < 0) o.warmup = 200;
    // -P a,b: one connection per IA, measured in alternating blocks (see run()).
    std::vector<std::unique_ptr<Node>> nodes;
    for (std::size_t at = 0, k = 0; at <= o.ia.size(); ++k) {
        std::size_t end = std::min(o.ia.find(',', at), o.ia.size());
        auto n = std::make_unique<Node>();
        n->name = o.ia.substr(at, end - at);
        n->qual = o.qual + k;
        setup(*n, o);
        // One receive for the peer's triplet (and, in lat mode, the first ping).
        post_recv(*n, n->msg_in, 64, 1);
        if (o.server) listen(*n);
        nodes.push_back(std::move(n));
        at = end + 1;
    }
    if (o.server) {
        std::printf("dat_bench: server listening on qualifier %llu\n",
                    static_cast<unsigned long long>(o.qual));
        std::fflush(stdout);
    }
    for (auto &n : nodes) connect(*n, o);
    for (auto &np : nodes) {  // exchange the data buffer's RMR triplet
        Node &n = *np;
        DAT_RMR_TRIPLET mine;
        mine.virtual_address = reinterpret_cast<DAT_VADDR>(n.data.mem.data());
        mine.segment_length = static_cast<DAT_SEG_LENGTH>(n.data.mem.size());
        mine.rmr_context = n.data.rctx;
        std::memcpy(n.msg_out.mem.data(), &mine, sizeof mine);
        // Pre-post what the test needs before the peer can send it.
        post_recv(n, o.mode == "lat" ? n.data : n.msg_in, o.mode == "lat" ? o.bytes : 64, 2);
        post_send(n, n.msg_out, sizeof mine, 0);
        dto_ok(wait_event(n.req, "triplet send"), "triplet send");
        dto_ok(wait_event(n.recv, "triplet recv"), "triplet recv");
        std::memcpy(&n.peer, n.msg_in.mem.data(), sizeof n.peer);
    }
    // Both sides ready before timing starts: the receives above are posted.
    sleep(1);
    run(nodes, o);
    for (auto &n : nodes) {
        DAT_RETURN rc = dat_ep_disconnect(n->ep, DAT_CLOSE_ABRUPT_FLAG);
        if (rc == DAT_SUCCESS) {
            DAT_EVENT ev;
            DAT_COUNT more;
            dat_evd_wait(n->conn, 5'000'000, 1, &ev, &more);
        }
        dat_ia_close(n->ia, DAT_CLOSE_ABRUPT_FLAG);
    }
    return 0;
}

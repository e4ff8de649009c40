// dat_bench: RDMA-write bandwidth and send/receive latency through the DAT 2.0 API only,
// so the same binary measures any provider (ours or the reference's libdaplofa).
//
//   server: dat_bench -P <ia> -s [-q qual]
//   client: dat_bench -P <ia> -h <server address> [-q qual] [-m bw|lat] [-b bytes] [-n iters] [-w
//   window]
//
// The client connects, the two sides exchange their buffer's RMR triplet, then:
//  bw:  the client keeps `window` RDMA writes of `bytes` in flight until `iters` are done
//       and reports MB/s (10^6 bytes/s) from its own clock;
//  lat: ping-pong of `bytes`-byte sends, reports half the round trip (median and mean, µs).
// Completions are taken by polling dat_evd_dequeue (like perftest's default). The client
// prints one line "RESULT <ia> <mode> <bytes> <iters> <value> <unit> [<mean>]".
#include <dat2/udat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

struct Region {
    std::vector<unsigned char> mem;
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lctx = 0;
    DAT_RMR_CONTEXT rctx = 0;
};

struct Node {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL, cr = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL,
                   req = DAT_HANDLE_NULL, recv = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    Region data, msg_out, msg_in;

    void reg(Region *r, std::size_t n) {
        r->mem.assign(n, 0);
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
    check("dat_ia_open", dat_ia_open(const_cast<char *>(o.ia.c_str()), 8, &n.async, &n.ia));
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

void connect(Node &n, const Options &o) {
    if (o.server) {
        check("dat_psp_create", dat_psp_create(n.ia, o.qual, n.cr, DAT_PSP_CONSUMER_FLAG, &n.psp));
        std::printf("dat_bench: server listening on qualifier %llu\n",
                    static_cast<unsigned long long>(o.qual));
        std::fflush(stdout);
        DAT_EVENT ev = wait_event(n.cr, "waiting for a connection request");
        check("dat_cr_accept",
              dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, n.ep, 0, nullptr));
    } else {
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        if (inet_pton(AF_INET, o.host.c_str(), &sin.sin_addr) != 1)
            die("bad -h address", DAT_INVALID_PARAMETER);
        check("dat_ep_connect",
              dat_ep_connect(n.ep, reinterpret_cast<sockaddr *>(&sin), o.qual, 30'000'000, 0,
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

void run_bw(Node &n, const Options &o, const DAT_RMR_TRIPLET &peer) {
    if (o.server) {  // wait for the client's "done" message
        dto_ok(wait_event(n.recv, "waiting for done"), "done message");
        return;
    }
    DAT_LMR_TRIPLET t = iov(n.data, o.bytes);
    DAT_RMR_TRIPLET r = peer;
    r.segment_length = static_cast<DAT_SEG_LENGTH>(o.bytes);
    long posted = 0, done = 0;
    double t0 = now_us();
    while (done < o.iters) {
        while (posted < o.iters && posted - done < o.window) {
            DAT_DTO_COOKIE c;
            c.as_64 = static_cast<std::uint64_t>(posted);
            check("dat_ep_post_rdma_write",
                  dat_ep_post_rdma_write(n.ep, 1, &t, c, &r, DAT_COMPLETION_DEFAULT_FLAG));
            ++posted;
        }
        dto_ok(poll_event(n.req, "write completion"), "rdma write");
        ++done;
    }
    double us = now_us() - t0;
    post_send(n, n.msg_out, 8, 1);
    dto_ok(poll_event(n.req, "done send"), "done send");
    double mbs = static_cast<double>(o.bytes) * static_cast<double>(o.iters) / us;
    std::printf("RESULT %s bw %zu %ld %.1f MB/s\n", o.ia.c_str(), o.bytes, o.iters, mbs);
}

void run_lat(Node &n, const Options &o) {
    std::vector<double> half;
    half.reserve(static_cast<std::size_t>(o.iters));
    for (long i = 0; i < o.iters; ++i) {
        if (o.server) {
            dto_ok(poll_event(n.recv, "ping"), "ping");
            post_recv(n, n.data, o.bytes, 2);
            post_send(n, n.msg_out, o.bytes, 3);
            dto_ok(poll_event(n.req, "pong send"), "pong send");
        } else {
            double t0 = now_us();
            post_send(n, n.msg_out, o.bytes, 3);
            dto_ok(poll_event(n.recv, "pong"), "pong");
            half.push_back((now_us() - t0) / 2);
            post_recv(n, n.data, o.bytes, 2);
            dto_ok(poll_event(n.req, "ping send"), "ping send");
        }
    }
    if (o.server) return;
    std::sort(half.begin(), half.end());
    double sum = 0;
    for (double v : half) sum += v;
    std::printf("RESULT %s lat %zu %ld %.2f us median %.2f mean\n", o.ia.c_str(), o.bytes, o.iters,
                half[half.size() / 2], sum / static_cast<double>(half.size()));
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    int c;
    while ((c = getopt(argc, argv, "P:sh:q:m:b:n:w:")) != -1) {
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
            default:
                std::fprintf(stderr,
                             "usage: %s -P ia (-s | -h addr) [-q qual] [-m bw|lat] [-b bytes] [-n "
                             "iters] [-w window]\n",
                             argv[0]);
                return 2;
        }
    }
    if (!o.server && o.host.empty()) o.server = true;
    if (o.mode == "lat" && o.bytes > 64) o.bytes = 64;
    Node n;
    setup(n, o);
    // Both sides: one receive for the peer's triplet (and, in lat mode, the first ping).
    post_recv(n, n.msg_in, 64, 1);
    connect(n, o);
    // Exchange the data buffer's RMR triplet.
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
    DAT_RMR_TRIPLET peer;
    std::memcpy(&peer, n.msg_in.mem.data(), sizeof peer);
    // Both sides ready before timing starts: the receives above are posted.
    sleep(1);
    if (o.mode == "lat")
        run_lat(n, o);
    else
        run_bw(n, o, peer);
    DAT_RETURN rc = dat_ep_disconnect(n.ep, DAT_CLOSE_ABRUPT_FLAG);
    if (rc == DAT_SUCCESS) {
        DAT_EVENT ev;
        DAT_COUNT more;
        dat_evd_wait(n.conn, 5'000'000, 1, &ev, &more);
    }
    dat_ia_close(n.ia, DAT_CLOSE_ABRUPT_FLAG);
    return 0;
}

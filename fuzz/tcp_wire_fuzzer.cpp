// Fuzzer 4: the tcp provider's frame parser and receive state machine, black-box.
//
// The process is a DAT server on loopback (one IA, one PSP, a registered buffer with every
// remote right). Each input is one hostile client on a raw TCP socket:
//
//   byte 0, bit 0: open with a valid CONN_REQ built from wire.hpp (make_header), wait for
//                  the connection request and accept it (bit 1 set: reject it instead);
//                  clear: the bytes go straight to the listener's CONN_REQ reader.
//   byte 0, bit 2: the rest is a list of frames built with make_header (below), else the
//                  rest is written to the socket verbatim.
//   byte 0, bit 3: half-close and read what the provider says before closing.
//   byte 0, bit 4: the other way round: the provider connects (dat_ep_connect with
//                  DAT_TIMEOUT_INFINITE) to the harness's raw listener, which reads its
//                  CONN_REQ and answers with the rest of the input: with bit 2, an
//                  answer frame (CONN_ACC, CONN_REJ or anything, announced terms and
//                  private data length from the input), then frames; else verbatim.
//                  The connect must end with a connection event (ESTABLISHED first, or
//                  not) within kEventTimeout: DAT_TCP_CONNECT_ANSWER_MS is shortened for
//                  an answer that never completes.
//
// The harness writes the bytes (reading whatever comes back, so the provider never blocks
// on a full socket), closes the socket and then requires the documented outcome: an
// accepted connection ends with a connection event within kEventTimeout (else it aborts:
// a hang), every object is freed, and nothing crashes or trips a sanitizer. Only
// make_header, the Op values, kFlagAckReq and FrameHeader's field names are used, so the
// harness follows wire.hpp as it changes.
#include <dat2/udat.h>

#include "providers/tcp/wire.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

namespace wire = opendat::tcp;

char kIaName[] = "ofa-v2-tcp-lo";  // DAT_NAME_PTR is not const
// Generous: a fuzzer at nice 19 on a loaded machine can be starved for seconds, and a real
// hang is still caught (the provider reports a dead peer well within these).
constexpr DAT_TIMEOUT kEventTimeout = 10'000'000;      // us: a connection event must come
constexpr DAT_TIMEOUT kHandshakeTimeout = 10'000'000;  // us: CR / ESTABLISHED after CONN_REQ
constexpr int kIoBudgetMs = 2'000;                     // writing the input, reading replies
constexpr std::size_t kBufferSize = 64 * 1024;
constexpr int kRecvs = 4;
constexpr std::size_t kRecvSize = 4096;

alignas(64) unsigned char g_buffer[kBufferSize];  // registered once, every right

struct Server {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE cr_evd = DAT_HANDLE_NULL, conn_evd = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE recv_evd = DAT_HANDLE_NULL, req_evd = DAT_HANDLE_NULL;
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lmr_ctx = 0;
    DAT_RMR_CONTEXT rmr_ctx = 0;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    std::uint16_t port = 0;
    int listener = -1;  // the raw listener the provider connects to (bit 4)
    std::uint16_t listener_port = 0;
};
Server g;

[[noreturn]] void fatal(const char *what, DAT_RETURN rc = 0) {
    std::fprintf(stderr, "tcp_wire fuzzer: %s (0x%x)\n", what, rc);
    std::abort();
}

// poll() on one descriptor for up to `ms`, resumed after a signal: libFuzzer's -timeout
// arms a SIGALRM (every timeout/2+1 s) whose handler is not SA_RESTART, and poll() is never
// restarted anyway. An interrupted wait taken for a timeout would fail an input that did
// nothing wrong. Returns poll()'s answer: 1 ready, 0 timed out, -1 another error.
int poll_one(int fd, short events, int ms, short *revents = nullptr) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        pollfd p{fd, events, 0};
        const int n = poll(&p, 1, left.count() > 0 ? static_cast<int>(left.count()) : 0);
        if (n < 0 && errno == EINTR) continue;
        if (revents != nullptr) *revents = p.revents;
        return n;
    }
}

void check(DAT_RETURN rc, const char *what) {
    if (rc != DAT_SUCCESS) fatal(what, rc);
}

class Bytes {
  public:
    Bytes(const std::uint8_t *p, std::size_t n) : p_(p), n_(n) {}
    bool empty() const { return n_ == 0; }
    std::uint8_t u8() {
        if (n_ == 0) return 0;
        --n_;
        return *p_++;
    }
    std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
    std::uint32_t u32() { return u16() | (static_cast<std::uint32_t>(u16()) << 16); }
    std::uint64_t u64() { return u32() | (static_cast<std::uint64_t>(u32()) << 32); }
    // Up to n bytes from the input (fewer when it runs out).
    void take(std::size_t n, std::vector<std::uint8_t> &out) {
        n = n < n_ ? n : n_;
        out.insert(out.end(), p_, p_ + n);
        p_ += n;
        n_ -= n;
    }
    const std::uint8_t *rest() const { return p_; }
    std::size_t size() const { return n_; }

  private:
    const std::uint8_t *p_;
    std::size_t n_;
};

void append(std::vector<std::uint8_t> &out, const wire::FrameHeader &h) {
    const auto *b = reinterpret_cast<const std::uint8_t *>(&h);
    out.insert(out.end(), b, b + sizeof h);
}

// Structured mode: each frame is chosen by a few input bytes; the payload comes from the
// input. Most fields are plausible (the server's own rkey and buffer) so that the
// state machine gets past its checks; some are anything at all.
std::vector<std::uint8_t> frames(Bytes &in) {
    std::vector<std::uint8_t> out;
    std::uint32_t seq = 0;
    while (!in.empty() && out.size() < 64 * 1024) {
        const std::uint8_t sel = in.u8();
        const std::uint8_t how = in.u8();
        auto op = static_cast<wire::Op>(sel % 16);  // the defined ops, 0 and unknown ones
        std::uint32_t length = in.u16() % 8192;
        if (how & 0x01) length = in.u32();  // any length, up to 4 GiB
        wire::FrameHeader h = wire::make_header(op, length, (how & 0x02) ? in.u32() : seq++);
        if (how & 0x04) h.flags = wire::kFlagAckReq;
        if (how & 0x08) h.flags = in.u16();
        const std::uint16_t off = in.u16();
        h.addr = reinterpret_cast<std::uintptr_t>(g_buffer) + off % kBufferSize;
        if (how & 0x10) h.addr = in.u64();
        h.rkey = (how & 0x20) ? in.u32() : g.rmr_ctx;
        h.aux = (how & 0x40) ? in.u32() : in.u16() % 8192;  // READ_REQ: the read length
        if (how & 0x80) {  // a corrupted header: another magic or version
            h.magic ^= in.u8();
            h.version = static_cast<std::uint8_t>(h.version + in.u8() % 3);
        }
        append(out, h);
        in.take(length < 8192 ? length : 8192, out);  // a huge length gets a short payload
    }
    return out;
}

int connect_raw() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fatal("socket");
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(g.port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0) {
        // Interrupted by a signal, the connection is still being made: wait for its end.
        int error = errno;
        socklen_t len = sizeof error;
        if (error != EINTR || poll_one(fd, POLLOUT, kIoBudgetMs) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0)
            fatal("connect");
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// Writes `data` while reading (and dropping) what the provider sends, for at most
// kIoBudgetMs. Stops early when the provider closes or resets the connection.
void exchange(int fd, const std::vector<std::uint8_t> &data) {
    std::size_t sent = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kIoBudgetMs);
    unsigned char sink[16384];
    while (sent < data.size()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        if (left.count() <= 0) return;
        short revents = 0;
        if (poll_one(fd, POLLIN | POLLOUT, static_cast<int>(left.count()), &revents) <= 0) return;
        if (revents & POLLIN) {
            ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;
        }
        if (revents & (POLLERR | POLLHUP)) return;
        if (revents & POLLOUT) {
            ssize_t n =
                send(fd, data.data() + sent, data.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0)
                sent += static_cast<std::size_t>(n);
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                return;
        }
    }
}

// After shutdown(SHUT_WR): read until the provider closes, for at most 100 ms.
void drain_until_close(int fd) {
    unsigned char sink[16384];
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (std::chrono::steady_clock::now() < end) {
        short revents = 0;
        if (poll_one(fd, POLLIN, 10, &revents) < 0) return;
        if (revents == 0) continue;
        ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;
    }
}

bool wait_event(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout, DAT_EVENT *ev) {
    DAT_COUNT nmore = 0;
    return dat_evd_wait(evd, timeout, 1, ev, &nmore) == DAT_SUCCESS;
}

// Empties an EVD; connection requests found there are rejected (which frees them).
void drain(DAT_EVD_HANDLE evd) {
    DAT_EVENT ev;
    while (dat_evd_dequeue(evd, &ev) == DAT_SUCCESS) {
        if (ev.event_number == DAT_CONNECTION_REQUEST_EVENT)
            dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle, 0, nullptr);
    }
}

bool is_connection_end(DAT_EVENT_NUMBER n) {
    return n == DAT_CONNECTION_EVENT_DISCONNECTED || n == DAT_CONNECTION_EVENT_BROKEN ||
           n == DAT_CONNECTION_EVENT_TIMED_OUT || n == DAT_CONNECTION_EVENT_UNREACHABLE ||
           n == DAT_CONNECTION_EVENT_PEER_REJECTED || n == DAT_CONNECTION_EVENT_NON_PEER_REJECTED;
}

std::uint16_t port_of(const sockaddr *sa) {
    return ntohs(reinterpret_cast<const sockaddr_in *>(sa)->sin_port);
}

// Waits for the connection request of socket `fd`. Requests of earlier inputs (a raw
// input may happen to be a valid CONN_REQ) are told apart by the client port and rejected.
DAT_CR_HANDLE ours(int fd) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len);
    DAT_EVENT ev;
    while (wait_event(g.cr_evd, kHandshakeTimeout, &ev)) {
        if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) continue;
        DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
        DAT_CR_PARAM p{};
        check(dat_cr_query(cr, DAT_CR_FIELD_ALL, &p), "dat_cr_query");
        if (p.remote_ia_address_ptr != nullptr &&
            port_of(p.remote_ia_address_ptr) == ntohs(local.sin_port))
            return cr;
        dat_cr_reject(cr, 0, nullptr);
    }
    fatal("a valid CONN_REQ gave no connection request");
}

// Posts `n` receives of kRecvSize into the buffer's first slots (false: the queue is full).
bool post_recvs(DAT_EP_HANDLE ep, int n) {
    for (int i = 0; i < n; ++i) {
        DAT_LMR_TRIPLET iov{};
        iov.lmr_context = g.lmr_ctx;
        iov.virtual_address = reinterpret_cast<std::uintptr_t>(g_buffer + i * kRecvSize);
        iov.segment_length = kRecvSize;
        DAT_DTO_COOKIE cookie;
        cookie.as_64 = static_cast<DAT_UINT64>(i);
        if (dat_ep_post_recv(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS)
            return false;
    }
    return true;
}

// After the peer closed: the connection must end with an event within kEventTimeout. A
// SEND without a posted receive waits for one, by design (the endpoint stops reading, as
// an RC responder's RNR retry; docs/tcp-provider.md), and the end of the stream waits
// behind it: so when nothing happens for a while, more receives are posted, as the
// application would, until the stream's end is read.
bool ends_in_time(DAT_EP_HANDLE ep) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(kEventTimeout);
    DAT_EVENT ev;
    while (std::chrono::steady_clock::now() < end) {
        if (wait_event(g.conn_evd, 100'000, &ev)) {
            if (is_connection_end(ev.event_number)) return true;
            continue;
        }
        drain(g.recv_evd);
        post_recvs(ep, kRecvs);
    }
    return false;
}

// Writes the input's bytes to the peer of `fd` (exchange), half-closes if asked, closes.
void send_and_close(int fd, const std::vector<std::uint8_t> &bytes, bool half_close) {
    exchange(fd, bytes);
    if (half_close) {
        shutdown(fd, SHUT_WR);
        drain_until_close(fd);
    }
    close(fd);
}

// The raw listener of the active mode, on loopback, any port.
void listen_raw() {
    g.listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sin;
    if (g.listener < 0 || bind(g.listener, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0 ||
        listen(g.listener, 16) != 0 ||
        getsockname(g.listener, reinterpret_cast<sockaddr *>(&sin), &len) != 0)
        fatal("raw listener");
    g.listener_port = ntohs(sin.sin_port);
}

// Active mode: the provider's connection to the raw listener, its CONN_REQ read (header and
// what it announces). -1 if it never came (then the connect must still end).
int accept_provider() {
    constexpr int kHandshakeMs = static_cast<int>(kHandshakeTimeout / 1000);
    if (poll_one(g.listener, POLLIN, kHandshakeMs) != 1) return -1;
    int fd = -1;
    do fd = accept4(g.listener, nullptr, nullptr, SOCK_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return -1;
    // The provider's progress thread sends the CONN_REQ once the connect completes: as
    // long as the handshake may take on a starved machine, not the I/O budget.
    wire::FrameHeader req{};
    std::size_t got = 0;
    const char *why = "no byte within the handshake timeout";
    while (got < sizeof req) {
        if (poll_one(fd, POLLIN, kHandshakeMs) != 1) break;
        ssize_t n = recv(fd, reinterpret_cast<char *>(&req) + got, sizeof req - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            why = n == 0 ? "the connection ended" : "recv failed";
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    if (got != sizeof req || req.op != wire::kConnReq) {
        std::fprintf(stderr, "tcp_wire fuzzer: %zu of %zu header bytes, op %u: %s (errno %d)\n",
                     got, sizeof req, static_cast<unsigned>(req.op),
                     got == sizeof req ? "not a CONN_REQ" : why, errno);
        fatal("the provider sent no CONN_REQ");
    }
    return fd;
}

// Active mode, structured: the listener's answer frame, then frames as in the passive mode.
std::vector<std::uint8_t> answer(Bytes &in) {
    std::vector<std::uint8_t> out;
    const std::uint8_t sel = in.u8();
    const auto op = static_cast<wire::Op>(sel % 4 == 0   ? in.u8() % 16
                                          : sel % 4 == 3 ? wire::kConnRej
                                                         : wire::kConnAcc);
    std::uint32_t pdata_len = in.u8() % 80;  // the maximum is 64: some are above it
    if (sel & 0x04) pdata_len = in.u32();
    wire::WireTerms terms;
    terms.version = static_cast<std::uint8_t>(in.u8() % 4);
    terms.caps = (sel & 0x08) ? in.u32() : in.u8();
    wire::FrameHeader h = wire::make_handshake(op, pdata_len, terms);
    if (sel & 0x10) h.seq = in.u32();
    if (sel & 0x20) h.flags = in.u16();
    if (sel & 0x40) h.magic ^= in.u8();
    append(out, h);
    in.take(pdata_len < 80 ? pdata_len : 80, out);  // a short one never completes
    const std::vector<std::uint8_t> rest = frames(in);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

// Active mode: the provider connects to the harness, which answers with the input.
void active(Bytes &in, bool framed, bool half_close) {
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    check(dat_ep_create(g.ia, g.pz, g.recv_evd, g.req_evd, g.conn_evd, nullptr, &ep),
          "dat_ep_create");
    if (!post_recvs(ep, kRecvs)) fatal("post_recv");
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    check(dat_ep_connect(ep, reinterpret_cast<sockaddr *>(&sin), g.listener_port,
                         DAT_TIMEOUT_INFINITE, 0, nullptr, DAT_QOS_BEST_EFFORT,
                         DAT_CONNECT_DEFAULT_FLAG),
          "dat_ep_connect");
    const int fd = accept_provider();
    if (fd >= 0) {
        std::vector<std::uint8_t> bytes;
        if (framed)
            bytes = answer(in);
        else
            in.take(in.size(), bytes);
        send_and_close(fd, bytes, half_close);
    }
    // Whatever the listener answered, or if it never answered, the connect ends.
    if (!ends_in_time(ep)) fatal("no connection event after the listener's answer: hang");
    DAT_RETURN rc = dat_ep_free(ep);
    if (rc != DAT_SUCCESS) {
        dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG);
        check(dat_ep_free(ep), "dat_ep_free after an abrupt disconnect");
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    // The active mode's answer that never completes ends at this deadline, well within
    // kEventTimeout (the default is a minute).
    setenv("DAT_TCP_CONNECT_ANSWER_MS", "1000", 1);
    check(dat_ia_open(kIaName, 8, &g.async_evd, &g.ia), "dat_ia_open (is DAT_OVERRIDE set?)");
    check(dat_pz_create(g.ia, &g.pz), "dat_pz_create");
    check(dat_evd_create(g.ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &g.cr_evd), "cr evd");
    check(dat_evd_create(g.ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &g.conn_evd),
          "conn evd");
    check(dat_evd_create(g.ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &g.recv_evd), "recv evd");
    check(dat_evd_create(g.ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &g.req_evd), "req evd");
    DAT_REGION_DESCRIPTION region;
    region.for_va = g_buffer;
    DAT_VLEN reg_len = 0;
    DAT_VADDR reg_addr = 0;
    check(
        dat_lmr_create(g.ia, DAT_MEM_TYPE_VIRTUAL, region, kBufferSize, g.pz, DAT_MEM_PRIV_ALL_FLAG,
                       DAT_VA_TYPE_VA, &g.lmr, &g.lmr_ctx, &g.rmr_ctx, &reg_len, &reg_addr),
        "dat_lmr_create");
    DAT_CONN_QUAL qual = 0;
    check(dat_psp_create_any(g.ia, &qual, g.cr_evd, DAT_PSP_CONSUMER_FLAG, &g.psp),
          "dat_psp_create_any");
    g.port = static_cast<std::uint16_t>(qual);  // the loopback IA's port base is 0
    listen_raw();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    Bytes in(data, size);
    const std::uint8_t mode = in.u8();
    const bool handshake = mode & 0x01, reject = mode & 0x02, framed = mode & 0x04,
               half_close = mode & 0x08;
    for (DAT_EVD_HANDLE e : {g.cr_evd, g.conn_evd, g.recv_evd, g.req_evd}) drain(e);
    if (mode & 0x10) {
        active(in, framed, half_close);
        for (DAT_EVD_HANDLE e : {g.cr_evd, g.conn_evd, g.recv_evd, g.req_evd}) drain(e);
        return 0;
    }

    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    check(dat_ep_create(g.ia, g.pz, g.recv_evd, g.req_evd, g.conn_evd, nullptr, &ep),
          "dat_ep_create");
    if (!post_recvs(ep, kRecvs)) fatal("post_recv");

    const int fd = connect_raw();
    bool connected = false;
    if (handshake) {
        std::vector<std::uint8_t> req;
        const std::uint8_t pdata_len = in.u8() % 64;
        append(req, wire::make_header(wire::kConnReq, pdata_len));
        in.take(pdata_len, req);
        req.resize(sizeof(wire::FrameHeader) + pdata_len);  // always a complete CONN_REQ
        exchange(fd, req);
        DAT_EVENT ev;
        DAT_CR_HANDLE cr = ours(fd);
        if (reject) {
            check(dat_cr_reject(cr, 0, nullptr), "dat_cr_reject");
        } else {
            check(dat_cr_accept(cr, ep, 0, nullptr), "dat_cr_accept");
            if (!wait_event(g.conn_evd, kHandshakeTimeout, &ev) ||
                ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
                fatal("accepted connection not established");
            connected = true;
        }
    }

    std::vector<std::uint8_t> bytes;
    if (framed)
        bytes = frames(in);
    else
        in.take(in.size(), bytes);
    send_and_close(fd, bytes, half_close);

    if (connected) {
        // Whatever the peer sent, the connection must end with an event, promptly.
        if (!ends_in_time(ep)) fatal("no connection event after the peer closed: hang");
    }
    DAT_RETURN rc = dat_ep_free(ep);
    if (rc != DAT_SUCCESS) {
        dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG);
        check(dat_ep_free(ep), "dat_ep_free after an abrupt disconnect");
    }
    // A raw CONN_REQ written without the handshake bit may still have produced a request.
    for (DAT_EVD_HANDLE e : {g.cr_evd, g.conn_evd, g.recv_evd, g.req_evd}) drain(e);
    return 0;
}

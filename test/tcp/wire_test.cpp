// Tests of the tcp provider's own wire protocol (docs/tcp-provider.md), through a raw
// socket next to the DAT API: what a peer that is not a DAT provider can send, and what the
// provider does about it. They belong to the tcp transport, so they are not part of the
// provider-generic conformance suite (test/conformance).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"

using namespace dattest;

namespace {

// Raw TCP connection to this process's listening port (port base 0: port = qualifier).
int raw_connect(DAT_CONN_QUAL qual) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(static_cast<std::uint16_t>(qual));
    sin.sin_addr = own_address();
    if (::connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

// The tcp provider's frame header (providers/tcp/wire.hpp), rebuilt here on purpose: the
// test speaks the documented wire format, not the provider's code.
struct RawHeader {
    std::uint32_t magic = 0x3154444f;
    std::uint8_t version = 1;
    std::uint8_t op = 0;
    std::uint16_t flags = 0;
    std::uint32_t length = 0;
    std::uint32_t seq = 0;
    std::uint64_t addr = 0;
    std::uint32_t rkey = 0;
    std::uint32_t aux = 0;
};

// Memory placed by RDMA is written by the provider's progress thread. A consumer that
// learns out of band (here: a pipe) that the data is there synchronizes with the provider
// through any DAT call on the endpoint before reading it, as on an HCA; without that,
// ThreadSanitizer rightly sees no ordering.
void sync_with_provider(DAT_EP_HANDLE ep) {
    DAT_EP_STATE st;
    dat_ep_get_status(ep, &st, nullptr, nullptr);
}

}  // namespace

TEST(TcpWire, MalformedFramesCloseTheConnection) {
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);

    // Garbage instead of a connection request: refused, no CR event.
    int g = raw_connect(qual);
    ASSERT_GE(g, 0);
    char junk[64];
    std::memset(junk, 0xEE, sizeof junk);
    ASSERT_EQ(write(g, junk, sizeof junk), static_cast<ssize_t>(sizeof junk));
    char c;
    EXPECT_LE(read(g, &c, 1), 0);  // the provider closed it (FIN or, with our junk unread, RST)
    close(g);
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(s.next(s.cr_evd, &ev, 200000)), DAT_TIMEOUT_EXPIRED);

    // A proper request, accepted, then a frame with an absurd opcode.
    int fd = raw_connect(qual);
    ASSERT_GE(fd, 0);
    RawHeader req;
    req.op = 1;  // CONN_REQ
    ASSERT_EQ(write(fd, &req, sizeof req), static_cast<ssize_t>(sizeof req));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    RawHeader acc;
    ASSERT_EQ(read(fd, &acc, sizeof acc), static_cast<ssize_t>(sizeof acc));
    EXPECT_EQ(acc.op, 2);  // CONN_ACC
    RawHeader bad;
    bad.op = 200;
    bad.length = 0xFFFFFFFF;
    ASSERT_EQ(write(fd, &bad, sizeof bad), static_cast<ssize_t>(sizeof bad));
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);
    ASSERT_EQ(s.next(s.async_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_EP_BROKEN);
    close(fd);
}

// A peer that completes the TCP handshake but never answers the connection request: the
// connect times out with DAT_CONNECTION_EVENT_TIMED_OUT.
TEST(TcpWire, ConnectTimesOut) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = own_address();
    ASSERT_EQ(bind(l, reinterpret_cast<sockaddr *>(&sin), sizeof sin), 0);
    ASSERT_EQ(::listen(l, 4), 0);
    socklen_t len = sizeof sin;
    getsockname(l, reinterpret_cast<sockaddr *>(&sin), &len);
    Node c;
    ASSERT_EQ(c.open(), DAT_SUCCESS);
    ASSERT_EQ(c.make_ep(), DAT_SUCCESS);
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(dat_ep_connect(c.ep, reinterpret_cast<sockaddr *>(&sin), ntohs(sin.sin_port), 200'000,
                             0, nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_EVENT ev;
    ASSERT_EQ(c.next(c.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_TIMED_OUT);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
    close(l);
}

// Random frames (valid magic and version, random opcode, lengths, addresses and keys,
// random payload) from a raw socket, connection after connection: the provider never
// crashes, never writes outside the registered buffers, and each connection ends.
TEST(TcpWire, RandomFramesNeverCorruptMemory) {
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    Buffer recv_buf, region;
    ASSERT_EQ(s.reg(&recv_buf, 256), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&region, 4096), DAT_SUCCESS);
    std::vector<unsigned char> guard(4096, 0xC3);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    std::uint64_t rng = 0x9E3779B97F4A7C15ull;
    auto next = [&] {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
    };
    for (int round = 0; round < 200; ++round) {
        std::memset(region.mem.data(), 0xC3, region.mem.size());
        sync_with_provider(s.ep);
        DAT_LMR_TRIPLET iov = recv_buf.iov();
        DAT_DTO_COOKIE ck;
        ck.as_64 = static_cast<DAT_UINT64>(round);
        ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
        int fd = raw_connect(qual);
        ASSERT_GE(fd, 0);
        RawHeader req;
        req.op = 1;
        ASSERT_EQ(write(fd, &req, sizeof req), static_cast<ssize_t>(sizeof req));
        ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
        for (int f = 0; f < 8; ++f) {
            RawHeader h;
            // Mostly data-path opcodes (SEND..DISC), sometimes anything.
            h.op = static_cast<std::uint8_t>((next() % 5) != 0 ? 4 + next() % 7 : next() % 256);
            h.flags = static_cast<std::uint16_t>(next() & 1);
            h.length = static_cast<std::uint32_t>(next() % 512);
            h.seq = static_cast<std::uint32_t>(next());
            // Aim near the real region half the time: a near miss must still be refused.
            h.addr = (next() & 1) ? reinterpret_cast<std::uintptr_t>(region.mem.data()) +
                                        (next() % 8192) - 2048
                                  : next();
            h.rkey = (next() & 3) == 0 ? region.lmr_ctx : static_cast<std::uint32_t>(next());
            h.aux = static_cast<std::uint32_t>(next() % 8192);
            std::vector<unsigned char> payload(h.length);
            for (auto &b : payload) b = static_cast<unsigned char>(next());
            // MSG_NOSIGNAL: the provider may already have closed the connection.
            if (send(fd, &h, sizeof h, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof h)) break;
            if (!payload.empty() && send(fd, payload.data(), payload.size(), MSG_NOSIGNAL) < 0)
                break;
        }
        close(fd);
        DAT_EVENT ev;
        // The connection ends (broken, or disconnected if a DISC frame came up).
        for (;;) {
            ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
            if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) break;
        }
        EXPECT_TRUE(ev.event_number == DAT_CONNECTION_EVENT_BROKEN ||
                    ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED)
            << std::hex << ev.event_number;
        while (dat_evd_dequeue(s.recv_evd, &ev) == DAT_SUCCESS) {
        }
        while (dat_evd_dequeue(s.async_evd, &ev) == DAT_SUCCESS) {
        }
        sync_with_provider(s.ep);
        // No key we handed out was used: the region is as we left it.
        ASSERT_EQ(region.mem, guard) << "round " << round;
        ASSERT_EQ(dat_ep_reset(s.ep), DAT_SUCCESS);
    }
}

namespace {

// Reads exactly n bytes (or fails the test).
bool read_all(int fd, void *p, std::size_t n) {
    auto *b = static_cast<unsigned char *>(p);
    while (n > 0) {
        ssize_t r = read(fd, b, n);
        if (r <= 0) return false;
        b += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

}  // namespace

// One endpoint, two connections: the first ends in the middle of everything (a protection
// violation puts it in drain mode with a NAK queued, a half-close sent and bytes of the
// peer's next frames read ahead), the second must start from a clean stream in both
// directions. Connect, accept and teardown each used to reset their own list of stream
// fields; a field one of them forgot (the drain mode, the staged bytes, the stop after the
// NAK, a half-sent frame) shows up here as a lost message in one direction or the other.
TEST(TcpWire, EndpointReusedAfterABrokenStreamStartsClean) {
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    Buffer recv_buf, send_buf;
    ASSERT_EQ(s.reg(&recv_buf, 256), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&send_buf, 16), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    DAT_EVENT ev;

    // Connection 1: a WRITE with a key nobody issued, followed by more frames in the same
    // segment (they land in the staging buffer with it).
    int fd = raw_connect(qual);
    ASSERT_GE(fd, 0);
    RawHeader req;
    req.op = 1;
    ASSERT_EQ(write(fd, &req, sizeof req), static_cast<ssize_t>(sizeof req));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    RawHeader acc;
    ASSERT_TRUE(read_all(fd, &acc, sizeof acc));
    ASSERT_EQ(acc.op, 2);
    std::vector<unsigned char> burst;
    RawHeader wr;
    wr.op = 5;  // WRITE
    wr.length = 100;
    wr.seq = 7;
    wr.addr = 0x1000;
    wr.rkey = 0xDEADBEEF;
    burst.insert(burst.end(), reinterpret_cast<unsigned char *>(&wr),
                 reinterpret_cast<unsigned char *>(&wr) + sizeof wr);
    burst.resize(burst.size() + wr.length, 0xAB);
    RawHeader snd;
    snd.op = 4;  // SEND, half of it: the stream ends inside this frame
    snd.length = 64;
    burst.insert(burst.end(), reinterpret_cast<unsigned char *>(&snd),
                 reinterpret_cast<unsigned char *>(&snd) + sizeof snd);
    burst.resize(burst.size() + 20, 0xCD);
    ASSERT_EQ(write(fd, burst.data(), burst.size()), static_cast<ssize_t>(burst.size()));
    RawHeader nak;
    ASSERT_TRUE(read_all(fd, &nak, sizeof nak));
    EXPECT_EQ(nak.op, 9);  // NAK
    EXPECT_EQ(nak.seq, 7u);
    close(fd);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);
    while (dat_evd_dequeue(s.async_evd, &ev) == DAT_SUCCESS) {
    }
    ASSERT_EQ(dat_ep_reset(s.ep), DAT_SUCCESS);

    // Connection 2 on the same endpoint: a message each way arrives whole.
    DAT_LMR_TRIPLET riov = recv_buf.iov();
    DAT_DTO_COOKIE ck{};
    ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &riov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    fd = raw_connect(qual);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, &req, sizeof req), static_cast<ssize_t>(sizeof req));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    ASSERT_TRUE(read_all(fd, &acc, sizeof acc));
    ASSERT_EQ(acc.op, 2);
    RawHeader msg;
    msg.op = 4;
    msg.length = 64;
    std::vector<unsigned char> text(64);
    for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<unsigned char>(i + 1);
    ASSERT_EQ(write(fd, &msg, sizeof msg), static_cast<ssize_t>(sizeof msg));
    ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length, 64u);
    sync_with_provider(s.ep);
    EXPECT_TRUE(std::equal(text.begin(), text.end(), recv_buf.mem.begin()));

    std::memset(send_buf.mem.data(), 0x5A, send_buf.mem.size());
    DAT_LMR_TRIPLET siov = send_buf.iov();
    ASSERT_EQ(dat_ep_post_send(s.ep, 1, &siov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    RawHeader out;
    ASSERT_TRUE(read_all(fd, &out, sizeof out));
    EXPECT_EQ(out.op, 4);
    EXPECT_EQ(out.length, 16u);
    unsigned char body[16];
    ASSERT_TRUE(read_all(fd, body, sizeof body));
    EXPECT_EQ(body[0], 0x5A);
    EXPECT_EQ(body[15], 0x5A);
    ASSERT_EQ(s.next(s.req_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    close(fd);
}

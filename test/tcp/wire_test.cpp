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
#include <cstdlib>
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

// ---- Wire versions (docs/tcp-provider.md, "Versions and growth") ----

namespace {

// Version 2's view of the header: the high byte of version 1's flags is hdr_len.
std::uint8_t hdr_len_of(const RawHeader &h) {
    return static_cast<std::uint8_t>(h.flags >> 8);
}

// Accepts one raw connection whose CONN_REQ is `req`; returns the socket and the CONN_ACC.
int raw_accepted(Node &s, DAT_CONN_QUAL qual, const RawHeader &req, RawHeader *acc) {
    int fd = raw_connect(qual);
    if (fd < 0) return -1;
    if (write(fd, &req, sizeof req) != static_cast<ssize_t>(sizeof req) ||
        s.accept_one() != DAT_SUCCESS || !read_all(fd, acc, sizeof *acc)) {
        close(fd);
        return -1;
    }
    return fd;
}

// The provider sends `n` bytes of 0x5A; returns the frame header that arrives.
RawHeader provider_sends(Node &s, Buffer &buf, int fd, std::size_t n) {
    std::memset(buf.mem.data(), 0x5A, n);
    DAT_LMR_TRIPLET iov = buf.iov(0, n);
    DAT_DTO_COOKIE ck{};
    EXPECT_EQ(dat_ep_post_send(s.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    RawHeader h;
    EXPECT_TRUE(read_all(fd, &h, sizeof h));
    std::vector<unsigned char> body(h.length);
    EXPECT_TRUE(read_all(fd, body.data(), body.size()));
    EXPECT_EQ(std::count(body.begin(), body.end(), 0x5A), static_cast<long>(n));
    DAT_EVENT ev;
    EXPECT_EQ(s.next(s.req_evd, &ev), DAT_SUCCESS);
    return h;
}

// The raw peer sends `text` as a SEND with the given header; the provider must deliver it.
void peer_sends(Node &s, Buffer &recv_buf, int fd, RawHeader h,
                const std::vector<unsigned char> &extension,
                const std::vector<unsigned char> &text) {
    DAT_LMR_TRIPLET riov = recv_buf.iov();
    DAT_DTO_COOKIE ck{};
    ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &riov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    h.op = 4;
    h.length = static_cast<std::uint32_t>(text.size());
    std::vector<unsigned char> frame(reinterpret_cast<unsigned char *>(&h),
                                     reinterpret_cast<unsigned char *>(&h) + sizeof h);
    frame.insert(frame.end(), extension.begin(), extension.end());
    frame.insert(frame.end(), text.begin(), text.end());
    ASSERT_EQ(write(fd, frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length, text.size());
    sync_with_provider(s.ep);
    EXPECT_TRUE(std::equal(text.begin(), text.end(), recv_buf.mem.begin()));
}

std::vector<unsigned char> counting(std::size_t n, unsigned char first) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(first + i);
    return v;
}

}  // namespace

// A version-1 peer (the frames the provider spoke before version 2, byte for byte: aux 0,
// no capabilities, hdr_len byte 0) is answered in version 1: the CONN_ACC announces our
// version 2, and every data frame both ways is a version-1 frame.
TEST(TcpWireVersion, Version1PeerIsAnsweredInVersion1) {
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    Buffer recv_buf, send_buf;
    ASSERT_EQ(s.reg(&recv_buf, 256), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&send_buf, 256), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    RawHeader req, acc;
    req.op = 1;
    int fd = raw_accepted(s, qual, req, &acc);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(acc.op, 2);
    EXPECT_EQ(acc.version, 1);  // handshake framing, readable by version 1
    EXPECT_EQ(hdr_len_of(acc), 0);
    EXPECT_EQ(acc.aux, 2u);   // what we speak
    EXPECT_EQ(acc.rkey, 7u);  // ours (IMMEDIATE, ATOMICS, SOLICITED): none in common with it
    peer_sends(s, recv_buf, fd, RawHeader{}, {}, counting(100, 1));
    RawHeader out = provider_sends(s, send_buf, fd, 40);
    EXPECT_EQ(out.op, 4);
    EXPECT_EQ(out.version, 1);
    EXPECT_EQ(out.flags, 0);  // version 1's 16-bit flags: nothing in the hdr_len byte
    close(fd);
}

// A newer peer (version 7, every capability bit) gets our version 2 and the capabilities
// we implement (IMMEDIATE, ATOMICS, SOLICITED), not the ones we do not know. Its headers may be
// longer than ours: 16 bytes of fields we do not know after the base header are skipped, the
// payload behind them arrives intact.
TEST(TcpWireVersion, NewerPeerAgreesOnVersion2AndLongerHeadersAreSkipped) {
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    Buffer recv_buf, send_buf;
    ASSERT_EQ(s.reg(&recv_buf, 256), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&send_buf, 256), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    RawHeader req, acc;
    req.op = 1;
    req.aux = 7;
    req.rkey = 0xFFFFFFFF;
    int fd = raw_accepted(s, qual, req, &acc);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(acc.version, 1);
    EXPECT_EQ(acc.aux, 2u);
    EXPECT_EQ(acc.rkey, 7u);
    RawHeader v2;
    v2.version = 2;
    v2.flags = 4 << 8;  // hdr_len 4: the plain 32 bytes
    peer_sends(s, recv_buf, fd, v2, {}, counting(50, 3));
    v2.flags = 6 << 8;  // hdr_len 6: 48 bytes, 16 of them unknown to us
    peer_sends(s, recv_buf, fd, v2, std::vector<unsigned char>(16, 0xEE), counting(200, 9));
    v2.flags = 255 << 8;  // the longest header there is
    peer_sends(s, recv_buf, fd, v2, std::vector<unsigned char>(255 * 8 - 32, 0xEF),
               counting(7, 11));
    RawHeader out = provider_sends(s, send_buf, fd, 64);
    EXPECT_EQ(out.version, 2);
    EXPECT_EQ(hdr_len_of(out), 4);
    close(fd);
}

// What the rule refuses, each on a fresh version-2 connection: an op whose capability was
// not agreed (write-with-immediate, atomics: the raw peer offers no capability), a frame of another
// version, a header length shorter than the base, a flag nobody defined. Each is a protocol error:
// the asynchronous EP error and DAT_CONNECTION_EVENT_BROKEN. And a CONN_REQ that does not use the
// handshake's version-1 framing is refused at the listener, before any CR event.
TEST(TcpWireVersion, WhatTheRuleRefuses) {
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    struct Case {
        const char *what;
        std::uint8_t version, op;
        std::uint16_t flags;
    };
    const Case cases[] = {
        {"WRITE_IMM without the immediate capability", 2, 11, 4 << 8},
        {"atomic request without the atomics capability", 2, 12, 4 << 8},
        {"version 1 frame on a version 2 connection", 1, 4, 0},
        {"version 3 frame on a version 2 connection", 3, 4, 4 << 8},
        {"hdr_len 2 (16-byte header)", 2, 4, 2 << 8},
        {"unknown flag 0x80", 2, 4, (4 << 8) | 0x80},
        {"SOLICITED flag without the solicited capability", 2, 4, (4 << 8) | 0x02},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.what);
        RawHeader req, acc;
        req.op = 1;
        req.aux = 2;
        int fd = raw_accepted(s, qual, req, &acc);
        ASSERT_GE(fd, 0);
        RawHeader bad;
        bad.version = c.version;
        bad.op = c.op;
        bad.flags = c.flags;
        ASSERT_EQ(write(fd, &bad, sizeof bad), static_cast<ssize_t>(sizeof bad));
        DAT_EVENT ev;
        ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
        EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);
        ASSERT_EQ(s.next(s.async_evd, &ev), DAT_SUCCESS);
        EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_EP_BROKEN);
        close(fd);
        ASSERT_EQ(dat_ep_reset(s.ep), DAT_SUCCESS);
    }
    for (std::uint16_t flags : {std::uint16_t{0}, std::uint16_t{4 << 8}}) {
        RawHeader req;
        req.op = 1;
        req.version = flags != 0 ? 1 : 2;  // version byte 2, or an extended header
        req.flags = flags;
        int fd = raw_connect(qual);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(write(fd, &req, sizeof req), static_cast<ssize_t>(sizeof req));
        char ch;
        EXPECT_LE(read(fd, &ch, 1), 0);  // closed: the active side sees NON_PEER_REJECTED
        close(fd);
        DAT_EVENT ev;
        EXPECT_EQ(DAT_GET_TYPE(s.next(s.cr_evd, &ev, 200000)), DAT_TIMEOUT_EXPIRED);
    }
}

// The provider as the active side against a version-1 listener (a raw socket answering as
// the version-1 provider did): the CONN_REQ is one a version-1 listener accepts (version
// byte 1, 32 bytes), it announces version 2, and after the version-1 CONN_ACC every frame
// is version 1.
TEST(TcpWireVersion, ProviderConnectsToAVersion1Listener) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = own_address();
    ASSERT_EQ(bind(l, reinterpret_cast<sockaddr *>(&sin), sizeof sin), 0);
    ASSERT_EQ(::listen(l, 4), 0);
    socklen_t len = sizeof sin;
    ASSERT_EQ(getsockname(l, reinterpret_cast<sockaddr *>(&sin), &len), 0);
    Node c;
    ASSERT_EQ(c.open(), DAT_SUCCESS);
    ASSERT_EQ(c.make_ep(), DAT_SUCCESS);
    Buffer recv_buf, send_buf;
    ASSERT_EQ(c.reg(&recv_buf, 256), DAT_SUCCESS);
    ASSERT_EQ(c.reg(&send_buf, 256), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_connect(c.ep, reinterpret_cast<sockaddr *>(&sin), ntohs(sin.sin_port), kWait,
                             0, nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_SUCCESS);
    int fd = accept(l, nullptr, nullptr);
    ASSERT_GE(fd, 0);
    RawHeader req;
    ASSERT_TRUE(read_all(fd, &req, sizeof req));
    EXPECT_EQ(req.magic, 0x3154444fu);
    EXPECT_EQ(req.version, 1);
    EXPECT_EQ(req.op, 1);
    EXPECT_EQ(hdr_len_of(req), 0);
    EXPECT_EQ(req.length, 0u);
    EXPECT_EQ(req.aux, 2u);
    RawHeader acc;  // as version 1 answered: aux 0, rkey 0
    acc.op = 2;
    ASSERT_EQ(write(fd, &acc, sizeof acc), static_cast<ssize_t>(sizeof acc));
    DAT_EVENT ev;
    ASSERT_EQ(c.next(c.conn_evd, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    RawHeader out = provider_sends(c, send_buf, fd, 32);
    EXPECT_EQ(out.version, 1);
    EXPECT_EQ(out.flags, 0);
    peer_sends(c, recv_buf, fd, RawHeader{}, {}, counting(77, 5));
    close(fd);
    close(l);
}

// Two providers, one told to speak version 1 (DAT_TCP_WIRE_VERSION=1, in the forked
// client), the other version 2: they agree on version 1 and move data both ways.
TEST(TcpWireVersion, Version1AndVersion2ProvidersInteroperate) {
    // Fork before any provider thread exists (ThreadSanitizer cannot follow a fork after
    // threads); the child learns the qualifier through the channel.
    Channel ch;
    int pid = spawn([&ch] {
        ch.child_side();
        DAT_CONN_QUAL qual = 0;
        CHILD_CHECK(ch.recv(&qual));
        setenv("DAT_TCP_WIRE_VERSION", "1", 1);
        Node c;
        CHILD_CHECK(c.open() == DAT_SUCCESS);
        CHILD_CHECK(c.make_ep() == DAT_SUCCESS);
        Buffer in, out;
        CHILD_CHECK(c.reg(&in, 4096) == DAT_SUCCESS);
        CHILD_CHECK(c.reg(&out, 4096) == DAT_SUCCESS);
        DAT_LMR_TRIPLET iov = in.iov();
        DAT_DTO_COOKIE k{};
        CHILD_CHECK(dat_ep_post_recv(c.ep, 1, &iov, k, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
        DAT_EVENT_NUMBER outcome{};
        CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS);
        CHILD_CHECK(outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        for (std::size_t i = 0; i < out.mem.size(); ++i)
            out.mem[i] = static_cast<unsigned char>(i * 7);
        DAT_LMR_TRIPLET oiov = out.iov();
        CHILD_CHECK(dat_ep_post_send(c.ep, 1, &oiov, k, DAT_COMPLETION_DEFAULT_FLAG) ==
                    DAT_SUCCESS);
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(c.next(c.recv_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.transfered_length == 4096);
        sync_with_provider(c.ep);
        for (std::size_t i = 0; i < in.mem.size(); ++i)
            CHILD_CHECK(in.mem[i] == static_cast<unsigned char>(i * 3));
        DAT_EVENT_NUMBER end{};
        CHILD_CHECK(c.disconnect_and_wait(DAT_CLOSE_GRACEFUL_FLAG, &end) == DAT_SUCCESS);
        return 0;
    });
    ASSERT_GT(pid, 0);
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    Buffer recv_buf, send_buf;
    ASSERT_EQ(s.reg(&recv_buf, 4096), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&send_buf, 4096), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    DAT_LMR_TRIPLET riov = recv_buf.iov();
    DAT_DTO_COOKIE ck{};
    ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &riov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length, 4096u);
    sync_with_provider(s.ep);
    for (std::size_t i = 0; i < recv_buf.mem.size(); ++i)
        ASSERT_EQ(recv_buf.mem[i], static_cast<unsigned char>(i * 7)) << i;
    for (std::size_t i = 0; i < send_buf.mem.size(); ++i)
        send_buf.mem[i] = static_cast<unsigned char>(i * 3);
    DAT_LMR_TRIPLET siov = send_buf.iov();
    ASSERT_EQ(dat_ep_post_send(s.ep, 1, &siov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    ASSERT_EQ(s.next(s.req_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
    EXPECT_EQ(reap(pid), 0);
}

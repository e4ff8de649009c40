// The IB extension frames of the tcp wire protocol (docs/tcp-provider.md, "IB extensions")
// from a raw socket that announces version 2 with both capabilities: well-formed
// WRITE_IMM and ATOMIC_REQ do what they say; malformed ones break the connection; a bad
// atomic target is answered with a NAK and the memory stays unchanged; and a connection
// whose peer offered no capability refuses the extension posts.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include <dat2/dat_ib_extensions.h>

#include "dat_fixture.hpp"

using namespace dattest;

namespace {

// The documented frame header (not the provider's code).
struct Hdr {
    std::uint32_t magic = 0x3154444f;
    std::uint8_t version = 2;
    std::uint8_t op = 0;
    std::uint8_t flags = 0;
    std::uint8_t hdr_len = 4;
    std::uint32_t length = 0;
    std::uint32_t seq = 0;
    std::uint64_t addr = 0;
    std::uint32_t rkey = 0;
    std::uint32_t aux = 0;
};
static_assert(sizeof(Hdr) == 32);

constexpr std::uint8_t kConnReq = 1, kSend = 4, kNak = 9, kWriteImm = 11, kAtomicReq = 12,
                       kAtomicResp = 13;
constexpr DAT_MEM_PRIV_FLAGS kAtomicPriv = static_cast<DAT_MEM_PRIV_FLAGS>(
    static_cast<int>(DAT_MEM_PRIV_ALL_FLAG) | static_cast<int>(DAT_IB_MEM_PRIV_REMOTE_ATOMIC));

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

bool write_all(int fd, const void *p, std::size_t n) {
    return send(fd, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
}

// A raw peer connected to `s`'s listener and accepted; it announces `version` and the
// capability bits `caps`. Returns the socket.
int raw_peer(Node &s, DAT_CONN_QUAL qual, std::uint32_t caps, std::uint8_t version = 2) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(static_cast<std::uint16_t>(qual));
    sin.sin_addr = own_address();
    if (::connect(fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0) {
        close(fd);
        return -1;
    }
    Hdr req;
    req.version = 1;
    req.hdr_len = 0;
    req.op = kConnReq;
    req.aux = version;
    req.rkey = caps;
    Hdr acc;
    if (!write_all(fd, &req, sizeof req) || s.accept_one() != DAT_SUCCESS ||
        !read_all(fd, &acc, sizeof acc)) {
        close(fd);
        return -1;
    }
    return fd;  // accept_one waited for ESTABLISHED
}

Hdr atomic_req(std::uint64_t addr, std::uint32_t rkey, std::uint32_t kind) {
    Hdr h;
    h.op = kAtomicReq;
    h.hdr_len = 6;
    h.addr = addr;
    h.rkey = rkey;
    h.aux = kind;
    h.seq = 77;
    return h;
}

// `s` opened with an EP, `region` (`len` bytes, atomic privileges) registered, one
// receive of cookie `cookie` posted into `rbuf` (64 bytes), and listening on *qual.
void listen_with_receive(Node &s, Buffer &region, std::size_t len, Buffer &rbuf, DAT_UINT64 cookie,
                         DAT_CONN_QUAL *qual) {
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&region, len, kAtomicPriv), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&rbuf, 64), DAT_SUCCESS);
    DAT_LMR_TRIPLET l = rbuf.iov();
    DAT_DTO_COOKIE ck;
    ck.as_64 = cookie;
    ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &l, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    ASSERT_EQ(s.listen(qual), DAT_SUCCESS);
}

// The connection ends as a protocol error: BROKEN and the asynchronous EP error.
void expect_broken(Node &s) {
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);
    ASSERT_EQ(s.next(s.async_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_EP_BROKEN);
}

}  // namespace

TEST(TcpWireExt, WellFormedExtensionFramesWork) {
    Node s;
    Buffer region, rbuf;
    DAT_CONN_QUAL qual = 0;
    ASSERT_NO_FATAL_FAILURE(listen_with_receive(s, region, 256, rbuf, 42, &qual));
    int fd = raw_peer(s, qual, 3);
    ASSERT_GE(fd, 0);
    const auto base = reinterpret_cast<std::uintptr_t>(region.mem.data());
    // WRITE_IMM: 32 bytes placed at offset 64, then the receive completes with 0xABCD.
    Hdr w;
    w.op = kWriteImm;
    w.length = 32;
    w.addr = base + 64;
    w.rkey = region.rmr_ctx;
    w.aux = 0xABCD;
    std::vector<unsigned char> data(32, 0x3C);
    ASSERT_TRUE(write_all(fd, &w, sizeof w) && write_all(fd, data.data(), data.size()));
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, static_cast<DAT_EVENT_NUMBER>(DAT_IB_DTO_EVENT));
    const auto *x = reinterpret_cast<const DAT_IB_EXTENSION_EVENT_DATA *>(ev.event_extension_data);
    EXPECT_EQ(x->type, DAT_IB_RDMA_WRITE_IMMED_DATA);
    EXPECT_EQ(x->val.immed.data, 0xABCDu);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64, 42u);
    EXPECT_EQ(ev.event_data.dto_completion_event_data.transfered_length, 32u);
    EXPECT_EQ(region.mem[64], 0x3C);
    EXPECT_EQ(region.mem[95], 0x3C);
    EXPECT_EQ(region.mem[96], 0);
    // ATOMIC_REQ fetch-and-add 5 on the word at offset 128 (holding 10): answered with 10.
    std::uint64_t ten = 10;
    std::memcpy(&region.mem[128], &ten, 8);
    {
        DAT_EP_STATE st;  // our write is seen by the provider's thread after a DAT call
        dat_ep_get_status(s.ep, &st, nullptr, nullptr);
    }
    Hdr a = atomic_req(base + 128, region.rmr_ctx, 0);
    std::uint64_t operands[2] = {5, 0};
    ASSERT_TRUE(write_all(fd, &a, sizeof a) && write_all(fd, operands, sizeof operands));
    Hdr resp;
    ASSERT_TRUE(read_all(fd, &resp, sizeof resp));
    EXPECT_EQ(resp.op, kAtomicResp);
    EXPECT_EQ(resp.seq, 77u);
    EXPECT_EQ(resp.addr, 10u);
    EXPECT_EQ(resp.length, 0u);
    // Compare-and-swap 15 -> 99: answered with 15, the word is 99.
    a = atomic_req(base + 128, region.rmr_ctx, 1);
    std::uint64_t cas[2] = {15, 99};
    ASSERT_TRUE(write_all(fd, &a, sizeof a) && write_all(fd, cas, sizeof cas));
    ASSERT_TRUE(read_all(fd, &resp, sizeof resp));
    EXPECT_EQ(resp.op, kAtomicResp);
    EXPECT_EQ(resp.addr, 15u);
    {
        DAT_EP_STATE st;
        dat_ep_get_status(s.ep, &st, nullptr, nullptr);
    }
    std::uint64_t now;
    std::memcpy(&now, &region.mem[128], 8);
    EXPECT_EQ(now, 99u);
    close(fd);
}

// Each malformed extension frame, on a fresh connection, is a protocol error.
TEST(TcpWireExt, MalformedExtensionFramesBreakTheConnection) {
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    Buffer region;
    ASSERT_EQ(s.reg(&region, 256, kAtomicPriv), DAT_SUCCESS);
    const auto base = reinterpret_cast<std::uintptr_t>(region.mem.data());
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    struct Case {
        const char *what;
        Hdr h;
        std::size_t ext;  // operand bytes sent after the header
    };
    Hdr no_operands = atomic_req(base, region.rmr_ctx, 0);
    no_operands.hdr_len = 4;
    Hdr bad_kind = atomic_req(base, region.rmr_ctx, 9);
    Hdr with_payload = atomic_req(base, region.rmr_ctx, 0);
    with_payload.length = 8;
    Hdr unsolicited;
    unsolicited.op = kAtomicResp;
    unsolicited.seq = 5;
    Hdr huge;
    huge.op = kWriteImm;
    huge.length = 0x80000000u;
    huge.addr = base;
    huge.rkey = region.rmr_ctx;
    const Case cases[] = {
        {"atomic request without operands (hdr_len 4)", no_operands, 0},
        {"atomic request of an unknown kind", bad_kind, 16},
        {"atomic request with a payload", with_payload, 16},
        {"atomic response nobody asked for", unsolicited, 0},
        {"write with immediate above max_rdma_size", huge, 0},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.what);
        int fd = raw_peer(s, qual, 3);
        ASSERT_GE(fd, 0);
        std::vector<unsigned char> bytes(sizeof c.h + c.ext + 8, 0);
        std::memcpy(bytes.data(), &c.h, sizeof c.h);
        ASSERT_TRUE(write_all(fd, bytes.data(), bytes.size()));
        expect_broken(s);
        close(fd);
        ASSERT_EQ(dat_ep_reset(s.ep), DAT_SUCCESS);
    }
    for (unsigned char b : region.mem) ASSERT_EQ(b, 0);
}

// An atomic the target must refuse (unaligned, no REMOTE_ATOMIC, unknown key) is answered
// with a NAK carrying DAT_DTO_ERR_REMOTE_ACCESS; the memory is unchanged.
TEST(TcpWireExt, RefusedAtomicIsNakedAndLeavesMemoryUnchanged) {
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    Buffer atomic_ok, no_atomic;
    ASSERT_EQ(s.reg(&atomic_ok, 64, kAtomicPriv), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&no_atomic, 64), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    const auto ok_base = reinterpret_cast<std::uintptr_t>(atomic_ok.mem.data());
    const Hdr cases[] = {
        atomic_req(ok_base + 4, atomic_ok.rmr_ctx, 0),
        atomic_req(reinterpret_cast<std::uintptr_t>(no_atomic.mem.data()), no_atomic.rmr_ctx, 0),
        atomic_req(ok_base, atomic_ok.rmr_ctx ^ 0x5A5A5A5Au, 1),
        atomic_req(ok_base + 64, atomic_ok.rmr_ctx, 0),  // just past the region
    };
    for (const Hdr &h : cases) {
        int fd = raw_peer(s, qual, 3);
        ASSERT_GE(fd, 0);
        std::uint64_t operands[2] = {1, 1};
        ASSERT_TRUE(write_all(fd, &h, sizeof h) && write_all(fd, operands, sizeof operands));
        Hdr nak;
        ASSERT_TRUE(read_all(fd, &nak, sizeof nak));
        EXPECT_EQ(nak.op, kNak);
        EXPECT_EQ(nak.seq, 77u);
        EXPECT_EQ(nak.aux, static_cast<std::uint32_t>(DAT_DTO_ERR_REMOTE_ACCESS));
        close(fd);
        DAT_EVENT ev;
        ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
        EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);
        ASSERT_EQ(dat_ep_reset(s.ep), DAT_SUCCESS);
    }
    for (unsigned char b : atomic_ok.mem) ASSERT_EQ(b, 0);
    for (unsigned char b : no_atomic.mem) ASSERT_EQ(b, 0);
}

// A peer that offered no capability: the extension posts are refused at once with
// DAT_MODEL_NOT_SUPPORTED (no frame it would reject is sent), and plain traffic still works.
TEST(TcpWireExt, PeerWithoutTheCapabilityRefusesThePost) {
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    Buffer src;
    ASSERT_EQ(s.reg(&src, 64, kAtomicPriv), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    int fd = raw_peer(s, qual, 0);
    ASSERT_GE(fd, 0);
    DAT_LMR_TRIPLET l = src.iov(0, 8);
    DAT_RMR_TRIPLET r{};
    r.virtual_address = 0x1000;
    r.segment_length = 8;
    r.rmr_context = 1;
    DAT_DTO_COOKIE ck;
    ck.as_64 = 1;
    EXPECT_EQ(DAT_GET_TYPE(dat_ib_post_rdma_write_immed(s.ep, 1, &l, ck, &r, 7u,
                                                        DAT_COMPLETION_DEFAULT_FLAG)),
              DAT_MODEL_NOT_SUPPORTED);
    EXPECT_EQ(
        DAT_GET_TYPE(dat_ib_post_fetch_and_add(s.ep, 1, &l, ck, &r, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_MODEL_NOT_SUPPORTED);
    EXPECT_EQ(
        DAT_GET_TYPE(dat_ib_post_cmp_and_swap(s.ep, 0, 1, &l, ck, &r, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_MODEL_NOT_SUPPORTED);
    ASSERT_EQ(dat_ep_post_send(s.ep, 1, &l, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    Hdr out;
    ASSERT_TRUE(read_all(fd, &out, sizeof out));
    EXPECT_EQ(out.op, kSend);  // the first frame after the handshake: nothing was queued
    close(fd);
}

// A peer that announces version 1 but also capability bits (version 1 has none,
// docs/tcp-provider.md "Versions and growth"): the connection speaks version 1 without
// capabilities. Extension posts are refused with DAT_MODEL_NOT_SUPPORTED, as for any
// version-1 peer (the ATOMIC_REQ would need a header extension, which version 1 cannot
// carry), and the peer's own WRITE_IMM is a protocol error.
TEST(TcpWireExt, Version1PeerClaimingCapabilitiesGetsNone) {
    Node s;
    Buffer src, rbuf;
    DAT_CONN_QUAL qual = 0;
    ASSERT_NO_FATAL_FAILURE(listen_with_receive(s, src, 64, rbuf, 1, &qual));
    int fd = raw_peer(s, qual, 0x7, 1);  // every documented capability bit
    ASSERT_GE(fd, 0);
    DAT_DTO_COOKIE ck;
    ck.as_64 = 1;
    DAT_LMR_TRIPLET l = src.iov(0, 8);
    DAT_RMR_TRIPLET r{};
    r.virtual_address = 0x1000;
    r.segment_length = 8;
    r.rmr_context = 1;
    EXPECT_EQ(
        DAT_GET_TYPE(dat_ib_post_fetch_and_add(s.ep, 1, &l, ck, &r, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_MODEL_NOT_SUPPORTED);
    EXPECT_EQ(DAT_GET_TYPE(dat_ib_post_rdma_write_immed(s.ep, 1, &l, ck, &r, 7u,
                                                        DAT_COMPLETION_DEFAULT_FLAG)),
              DAT_MODEL_NOT_SUPPORTED);
    // The peer's WRITE_IMM in version-1 framing: not an op of this connection.
    Hdr h;
    h.version = 1;
    h.hdr_len = 0;
    h.op = kWriteImm;
    h.length = 8;
    h.seq = 1;
    h.addr = reinterpret_cast<std::uintptr_t>(src.mem.data());
    h.rkey = src.rmr_ctx;
    h.aux = 99;
    unsigned char payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    write_all(fd, &h, sizeof h);
    write_all(fd, payload, sizeof payload);
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);
    sync_with_provider(s.ep);
    EXPECT_EQ(src.mem[0], 0) << "a version-1 peer's WRITE_IMM was executed";
    close(fd);
}

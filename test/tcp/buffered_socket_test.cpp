// Unit tests of the tcp receive path's buffered socket (providers/tcp/buffered_socket.*)
// and iovec cursor (iov.hpp) over a real socketpair: header assembly across any split of
// the stream, payloads staged or read straight into their destination, skipping, the
// budget, and the ends of a stream. Single-threaded and deterministic: the writer side is
// filled before each read round.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "tcp/buffered_socket.hpp"
#include "tcp/iov.hpp"

using opendat::tcp::BufferedSocket;
using opendat::tcp::IovCursor;
using Io = BufferedSocket::Io;

namespace {

class SocketPair : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_), 0);
        int big = 4 << 20;
        setsockopt(fds_[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        setsockopt(fds_[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    }
    void TearDown() override {
        if (fds_[0] >= 0) close(fds_[0]);
        if (fds_[1] >= 0) close(fds_[1]);
    }
    int reader() const { return fds_[0]; }
    // Writes everything (the pair's buffers are large enough for each test's bytes).
    void put(const void *p, std::size_t n) {
        auto *b = static_cast<const unsigned char *>(p);
        while (n > 0) {
            ssize_t w = write(fds_[1], b, n);
            ASSERT_GT(w, 0) << "socketpair full";
            b += w;
            n -= static_cast<std::size_t>(w);
        }
    }
    void close_writer() {
        close(fds_[1]);
        fds_[1] = -1;
    }
    static std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
        std::vector<unsigned char> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 131 + seed);
        return v;
    }

    int fds_[2]{-1, -1};
    BufferedSocket in_;
};

constexpr std::uint64_t kBudget = 8u << 20;

}  // namespace

// A 32-byte header written one byte at a time, with a read round after each byte: every
// round but the last says Again and keeps what it has.
TEST_F(SocketPair, HeaderAssembledFromOneByteWrites) {
    auto hdr = pattern(32, 7);
    unsigned char got[32]{};
    std::size_t have = 0;
    for (std::size_t i = 0; i < hdr.size(); ++i) {
        put(&hdr[i], 1);
        in_.begin_round(reader(), kBudget);
        Io io = in_.assemble(got, sizeof got, &have);
        EXPECT_EQ(have, i + 1);
        EXPECT_EQ(io, i + 1 == hdr.size() ? Io::Done : Io::Again) << "byte " << i;
    }
    EXPECT_EQ(std::memcmp(got, hdr.data(), sizeof got), 0);
    EXPECT_EQ(in_.staged(), 0u);
}

// Many small frames (header + payload) written in one go come in with one recv: the
// first round hands them all out, without a second system call in between.
TEST_F(SocketPair, SmallFramesCoalesced) {
    std::vector<unsigned char> stream;
    for (unsigned f = 0; f < 50; ++f) {
        auto h = pattern(32, f);
        h[0] = static_cast<unsigned char>(f);  // payload length
        stream.insert(stream.end(), h.begin(), h.end());
        auto p = pattern(f, f + 100);
        stream.insert(stream.end(), p.begin(), p.end());
    }
    ASSERT_LT(stream.size(), BufferedSocket::kStage);
    put(stream.data(), stream.size());
    in_.begin_round(reader(), kBudget);
    for (unsigned f = 0; f < 50; ++f) {
        unsigned char h[32];
        std::size_t have = 0;
        ASSERT_EQ(in_.assemble(h, sizeof h, &have), Io::Done);
        ASSERT_EQ(h[0], f);
        std::vector<unsigned char> payload(f);
        IovCursor<4> dst;
        dst.push(payload.data(), payload.size());
        ASSERT_EQ(in_.read_into(&dst), Io::Done);
        EXPECT_EQ(payload, pattern(f, f + 100)) << "frame " << f;
    }
    EXPECT_EQ(in_.staged(), 0u);
    // The stream is exhausted and the round already saw a short read: no further recv.
    unsigned char h[32];
    std::size_t have = 0;
    EXPECT_EQ(in_.assemble(h, sizeof h, &have), Io::Again);
    EXPECT_EQ(have, 0u);
}

// A large payload behind its header: the staged part is copied, the rest read with readv
// straight into a scattered destination (three segments of odd sizes), and the next
// frame's header right behind it is intact.
TEST_F(SocketPair, LargePayloadScatteredDirectly) {
    const std::size_t n = 3u << 20;
    auto header = pattern(32, 1);
    auto payload = pattern(n, 2);
    auto next = pattern(32, 3);
    std::vector<unsigned char> stream(header);
    stream.insert(stream.end(), payload.begin(), payload.end());
    stream.insert(stream.end(), next.begin(), next.end());
    put(stream.data(), stream.size());

    std::vector<unsigned char> a(1000), b(n - 1000 - 777), c(777);
    unsigned char h[32];
    std::size_t have = 0;
    in_.begin_round(reader(), kBudget);
    ASSERT_EQ(in_.assemble(h, sizeof h, &have), Io::Done);
    IovCursor<4> dst;
    dst.push(a.data(), a.size());
    dst.push(b.data(), b.size());
    dst.push(c.data(), c.size());
    ASSERT_EQ(dst.left(), n);
    Io io = in_.read_into(&dst);
    while (io == Io::Again) {  // the kernel may hand the stream out in pieces
        in_.begin_round(reader(), kBudget);
        io = in_.read_into(&dst);
    }
    ASSERT_EQ(io, Io::Done);
    std::vector<unsigned char> joined(a);
    joined.insert(joined.end(), b.begin(), b.end());
    joined.insert(joined.end(), c.begin(), c.end());
    EXPECT_EQ(joined, payload);
    have = 0;
    in_.begin_round(reader(), kBudget);
    ASSERT_EQ(in_.assemble(h, sizeof h, &have), Io::Done);
    EXPECT_EQ(std::memcmp(h, next.data(), sizeof h), 0);
}

// Large frames back to back: the readv that places a payload also brings what follows it
// into the staging buffer, so the next header is there without another system call, and
// every payload and header still comes out intact whatever the read-ahead took.
TEST_F(SocketPair, DirectReadBringsTheNextHeader) {
    const std::size_t n = 20000;  // more than the staging buffer: read directly
    std::vector<unsigned char> stream;
    for (unsigned f = 0; f < 3; ++f) {
        auto h = pattern(32, f);
        stream.insert(stream.end(), h.begin(), h.end());
        auto p = pattern(n, f + 50);
        stream.insert(stream.end(), p.begin(), p.end());
    }
    put(stream.data(), stream.size());
    in_.begin_round(reader(), kBudget);
    for (unsigned f = 0; f < 3; ++f) {
        unsigned char h[32];
        std::size_t have = 0;
        ASSERT_EQ(in_.assemble(h, sizeof h, &have), Io::Done) << "frame " << f;
        EXPECT_EQ(std::memcmp(h, pattern(32, f).data(), sizeof h), 0) << "frame " << f;
        std::vector<unsigned char> payload(n);
        IovCursor<4> dst;
        dst.push(payload.data(), 7000);
        dst.push(payload.data() + 7000, n - 7000);
        ASSERT_EQ(in_.read_into(&dst), Io::Done) << "frame " << f;
        EXPECT_EQ(payload, pattern(n, f + 50)) << "frame " << f;
        if (f < 2)
            EXPECT_GE(in_.staged(), 32u) << "the next header came with the payload, frame " << f;
        else
            EXPECT_EQ(in_.staged(), 0u);
    }
}

// The same stream fed one byte per round, payload and all: the result does not depend on
// how the stream is cut.
TEST_F(SocketPair, PayloadFromOneByteWrites) {
    auto payload = pattern(300, 9);
    std::vector<unsigned char> got(payload.size());
    IovCursor<2> dst;
    dst.push(got.data(), 100);
    dst.push(got.data() + 100, 200);
    for (std::size_t i = 0; i < payload.size(); ++i) {
        put(&payload[i], 1);
        in_.begin_round(reader(), kBudget);
        Io io = in_.read_into(&dst);
        EXPECT_EQ(io, i + 1 == payload.size() ? Io::Done : Io::Again);
        EXPECT_EQ(dst.left(), payload.size() - i - 1);
    }
    EXPECT_EQ(got, payload);
}

// skip() drops exactly what it is told, across the staging buffer's refills.
TEST_F(SocketPair, SkipDropsExactly) {
    auto junk = pattern(20000, 4);
    auto hdr = pattern(32, 5);
    put(junk.data(), junk.size());
    put(hdr.data(), hdr.size());
    std::uint64_t left = junk.size();
    in_.begin_round(reader(), kBudget);
    Io io = in_.skip(&left);
    while (io == Io::Again) {
        in_.begin_round(reader(), kBudget);
        io = in_.skip(&left);
    }
    ASSERT_EQ(io, Io::Done);
    EXPECT_EQ(left, 0u);
    unsigned char h[32];
    std::size_t have = 0;
    ASSERT_EQ(in_.assemble(h, sizeof h, &have), Io::Done);
    EXPECT_EQ(std::memcmp(h, hdr.data(), sizeof h), 0);
}

// A round stops asking the socket once its budget is spent (checked before each read; one
// read may overshoot it); staged bytes are still handed out, and the next round continues
// where the last one stopped.
TEST_F(SocketPair, BudgetEndsTheRound) {
    auto data = pattern(64 * 1024, 6);
    put(data.data(), data.size());
    std::uint64_t left = data.size();
    in_.begin_round(reader(), 1);  // one read's worth
    EXPECT_EQ(in_.skip(&left), Io::Again);
    EXPECT_EQ(left, data.size() - BufferedSocket::kStage);  // exactly one staging refill
    // What follows is still in order: the next round picks up the rest.
    std::vector<unsigned char> got(static_cast<std::size_t>(left));
    IovCursor<1> dst;
    dst.push(got.data(), got.size());
    in_.begin_round(reader(), kBudget);
    Io io = in_.read_into(&dst);
    for (int rounds = 0; io == Io::Again && rounds < 1000; ++rounds) {
        in_.begin_round(reader(), kBudget);
        io = in_.read_into(&dst);
    }
    ASSERT_EQ(io, Io::Done);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + BufferedSocket::kStage));
}

// The peer's orderly close is Closed once the staged bytes are used up; bytes before it
// are delivered first.
TEST_F(SocketPair, OrderlyCloseAfterData) {
    auto hdr = pattern(20, 8);
    put(hdr.data(), hdr.size());
    close_writer();
    unsigned char h[32];
    std::size_t have = 0;
    in_.begin_round(reader(), kBudget);
    Io io = in_.assemble(h, sizeof h, &have);
    if (io == Io::Again) {  // the short read ended the round; the next sees the FIN
        in_.begin_round(reader(), kBudget);
        io = in_.assemble(h, sizeof h, &have);
    }
    EXPECT_EQ(io, Io::Closed);
    EXPECT_EQ(have, 20u);
    EXPECT_EQ(std::memcmp(h, hdr.data(), 20), 0);
}

// A socket error is Failed with its errno (reading a socket that is not connected).
TEST_F(SocketPair, SocketErrorReported) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(s, 0);
    unsigned char h[32];
    std::size_t have = 0;
    in_.begin_round(s, kBudget);
    EXPECT_EQ(in_.assemble(h, sizeof h, &have), Io::Failed);
    EXPECT_EQ(in_.error(), ENOTCONN);
    close(s);
}

// reset() forgets what a previous stream left staged.
TEST_F(SocketPair, ResetDropsStagedBytes) {
    auto a = pattern(100, 10);
    put(a.data(), a.size());
    unsigned char h[32];
    std::size_t have = 0;
    in_.begin_round(reader(), kBudget);
    ASSERT_EQ(in_.assemble(h, sizeof h, &have), Io::Done);
    EXPECT_EQ(in_.staged(), 68u);
    in_.reset();
    EXPECT_EQ(in_.staged(), 0u);
}

// The cursor: empty buffers take no slot, a segment list is cut at the limit, and
// consume/fill move across segment boundaries.
TEST(IovCursor, SegmentsLimitAndConsume) {
    unsigned char m[64]{};
    DAT_LMR_TRIPLET seg[4] = {
        {reinterpret_cast<DAT_VADDR>(m), 10, 0},
        {reinterpret_cast<DAT_VADDR>(m + 10), 0, 0},
        {reinterpret_cast<DAT_VADDR>(m + 20), 20, 0},
        {reinterpret_cast<DAT_VADDR>(m + 40), 20, 0},
    };
    IovCursor<8> c;
    c.push_segments(seg, 4, 25);
    ASSERT_EQ(c.count(), 2);
    EXPECT_EQ(c.left(), 25u);
    EXPECT_EQ(c.data()[1].iov_len, 15u);
    unsigned char src[25];
    std::iota(src, src + 25, 1);
    c.fill(src, 12);
    EXPECT_EQ(c.count(), 1);
    EXPECT_EQ(c.left(), 13u);
    EXPECT_EQ(m[9], 10);
    EXPECT_EQ(m[21], 12);
    c.consume(13);
    EXPECT_EQ(c.left(), 0u);
    EXPECT_EQ(c.count(), 0);
    c.clear();
    c.push(m, 0);
    EXPECT_EQ(c.count(), 0);
    c.push_segments(seg, 4);
    EXPECT_EQ(c.left(), 50u);
    EXPECT_EQ(c.count(), 3);
}

// copy_bytes, which places a small message without a call into libc: every length from 0
// to 130 (each size class, its edges, and memcpy's side) copies exactly its bytes, at
// every alignment of source and destination, and writes nothing around them.
TEST(CopyBytes, EveryLengthExactlyAndNothingAround) {
    for (std::size_t n = 0; n <= 130; ++n) {
        for (std::size_t shift = 0; shift < 8; ++shift) {
            std::vector<unsigned char> from(n + 16), to(n + 32, 0xA5);
            for (std::size_t i = 0; i < from.size(); ++i)
                from[i] = static_cast<unsigned char>(i * 7 + n + 1);
            opendat::tcp::copy_bytes(to.data() + 8 + shift, from.data() + shift, n);
            for (std::size_t i = 0; i < to.size(); ++i) {
                const bool inside = i >= 8 + shift && i < 8 + shift + n;
                const unsigned char want = inside ? from[i - 8] : 0xA5;
                ASSERT_EQ(to[i], want) << "length " << n << ", shift " << shift << ", byte " << i;
            }
        }
    }
}

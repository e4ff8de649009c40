// Unit tests of the transmit path's system call (providers/tcp/send_frames.*) over a real
// socketpair: the flat copy for small frames and sendmsg for large ones put the same
// bytes on the stream, in order, and return what was sent.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "tcp/send_frames.hpp"

using opendat::tcp::IovCap;
using opendat::tcp::kFlatSendMax;
using opendat::tcp::send_frames;

namespace {

class SendFrames : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_), 0);
    }
    void TearDown() override {
        close(fds_[0]);
        close(fds_[1]);
    }
    // Sends `parts` (sizes; contents numbered across the parts) and checks what arrives.
    void round_trip(const std::vector<std::size_t> &parts) {
        std::vector<std::vector<unsigned char>> bufs;
        std::vector<iovec> iov;
        std::vector<unsigned char> expect;
        for (std::size_t len : parts) {
            bufs.emplace_back(len);
            for (auto &b : bufs.back()) {
                b = static_cast<unsigned char>(expect.size() * 7 + 3);
                expect.push_back(b);
            }
        }
        for (auto &b : bufs) iov.push_back({b.data(), b.size()});
        msghdr msg{};
        msg.msg_iov = iov.data();
        msg.msg_iovlen = iov.size();
        ASSERT_EQ(send_frames(fds_[0], msg), static_cast<ssize_t>(expect.size()));
        std::vector<unsigned char> got(expect.size() + 1);
        ssize_t n = expect.empty() ? 0 : recv(fds_[1], got.data(), got.size(), 0);
        ASSERT_EQ(n, static_cast<ssize_t>(expect.size()));
        got.resize(expect.size());
        EXPECT_EQ(got, expect);
        EXPECT_EQ(recv(fds_[1], got.data(), 1, MSG_DONTWAIT), -1);  // nothing more
    }
    int fds_[2] = {-1, -1};
};

TEST_F(SendFrames, HeaderAndSmallPayloadFlat) {
    round_trip({32, 8});
}

TEST_F(SendFrames, EmptyIovecsAreSkipped) {
    round_trip({0, 32, 0, 8, 0});
}

TEST_F(SendFrames, ManySmallFramesUpToTheFlatLimit) {
    round_trip({32, 8, 32, 8, 32, 8, 32, 8, 32, 320});  // exactly kFlatSendMax
    static_assert(4 * 40 + 32 + 320 == kFlatSendMax);
}

TEST_F(SendFrames, OneByteOverTheLimitGoesThroughSendmsg) {
    round_trip({32, kFlatSendMax - 31});
}

TEST_F(SendFrames, OneLargeBuffer) {
    round_trip({64 * 1024});
}

TEST_F(SendFrames, ManyLargeBuffers) {
    round_trip({32, 4096, 32, 4096, 32, 4096});
}

// A full socket: EAGAIN from either path, as sendmsg reports it.
TEST_F(SendFrames, FullSocketSaysEagain) {
    std::vector<unsigned char> big(1 << 16, 1);
    iovec one{big.data(), big.size()};
    msghdr fill{};
    fill.msg_iov = &one;
    fill.msg_iovlen = 1;
    while (send_frames(fds_[0], fill) > 0) {
    }
    ASSERT_EQ(errno, EAGAIN);
    unsigned char hdr[32] = {}, pay[8] = {};
    iovec two[2] = {{hdr, sizeof hdr}, {pay, sizeof pay}};
    msghdr small{};
    small.msg_iov = two;
    small.msg_iovlen = 2;
    EXPECT_EQ(send_frames(fds_[0], small), -1);
    EXPECT_EQ(errno, EAGAIN);
}

// A transmit budget caps one call: within the third iovec here, then put back.
TEST_F(SendFrames, IovCapSendsAtMostTheCapAndPutsTheIovecBack) {
    std::vector<unsigned char> a(100, 1), b(200, 2), c(4000, 3), d(50, 4);
    iovec iov[4] = {
        {a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}, {d.data(), d.size()}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 4;
    {
        IovCap cap(msg, 1000);
        EXPECT_EQ(msg.msg_iovlen, 3u);
        EXPECT_EQ(iov[2].iov_len, 700u);
        ASSERT_EQ(send_frames(fds_[0], msg), 1000);
    }
    EXPECT_EQ(iov[2].iov_len, 4000u);
    std::vector<unsigned char> got(2000);
    ASSERT_EQ(recv(fds_[1], got.data(), got.size(), 0), 1000);
    EXPECT_EQ(got[99], 1);
    EXPECT_EQ(got[100], 2);
    EXPECT_EQ(got[300], 3);
    EXPECT_EQ(got[999], 3);
    // A cap at or above the total leaves everything as it was.
    msg.msg_iovlen = 4;
    {
        IovCap cap(msg, 4350);
        EXPECT_EQ(msg.msg_iovlen, 4u);
        EXPECT_EQ(iov[3].iov_len, 50u);
    }
    {
        IovCap cap(msg, 300);  // exactly the first two
        EXPECT_EQ(msg.msg_iovlen, 3u);
        EXPECT_EQ(iov[2].iov_len, 0u);
    }
    EXPECT_EQ(iov[2].iov_len, 4000u);
}

}  // namespace

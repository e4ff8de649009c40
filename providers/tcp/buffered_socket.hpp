// The receive side of one TCP stream, as the frame parser needs it: "give me the next n
// bytes of the stream, here".
//
// Small frames are coalesced: one recv() into the staging buffer brings in several headers
// and small payloads, which are then copied out (cheaper than a system call each). A
// payload larger than the staging buffer, past what is already staged, is read with readv
// straight into its destination; the same readv brings what follows the frame into the
// staging buffer (the next header, at least). A read that comes back short means
// the socket is drained, so the round ends without the extra recv() that would only say
// EAGAIN (epoll is level-triggered: more data brings the caller back). A round also ends
// once its byte budget is spent, so one busy connection cannot starve the others; staged
// bytes are always handed out, budget or not (the socket may hold nothing more that
// would wake the caller for them).
//
// No allocation, no locking: the owner (one endpoint, under its mutex) calls it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tcp/iov.hpp"

namespace opendat::tcp {

class BufferedSocket {
  public:
    static constexpr std::size_t kStage = 8192;

    enum class Io {
        Done,    // the requested bytes are all there
        Again,   // not yet: the socket is drained (or the budget spent); progress was kept
        Closed,  // the peer closed the stream (orderly FIN)
        Failed,  // the socket failed: error() says why
    };

    // A new stream: forget what was staged from the previous one.
    void reset() noexcept { pos_ = len_ = 0; }
    // Starts one round of reading from `fd`: at most about `budget` bytes from the socket.
    void begin_round(int fd, std::uint64_t budget) noexcept {
        fd_ = fd;
        budget_ = round_budget_ = budget;
        drained_ = false;
    }
    // Whether this round has taken bytes from the socket.
    bool took_bytes() const noexcept { return budget_ != round_budget_; }

    std::size_t staged() const noexcept { return len_ - pos_; }
    // Staged bytes, or the socket's next ones when none are (what assemble reads first).
    Io fill() noexcept { return staged() > 0 ? Io::Done : refill(); }
    // The staged bytes in place, and dropping n of them (n <= staged()): a caller that
    // can use a whole frame where it lies (TcpEp::rx_fast_send) copies it only once.
    const unsigned char *peek() const noexcept { return stage_ + pos_; }
    void drop(std::size_t n) noexcept { pos_ += n; }
    int error() const noexcept { return errno_; }

    // Assembles `want` bytes at `dst` (a header): *have counts what is already there.
    Io assemble(void *dst, std::size_t want, std::size_t *have) noexcept;
    // Drops `*left` bytes of the stream, counting down.
    Io skip(std::uint64_t *left) noexcept;
    // Moves the stream's next dst->left() bytes into dst's buffers.
    template <int N>
    Io read_into(IovCursor<N> *dst) noexcept;

  private:
    // Refills the (empty) staging buffer: Done if it holds bytes now.
    Io refill() noexcept;
    // readv straight into the destination (and past it, into the staging buffer).
    Io read_direct(iovec *iov, int n, std::uint64_t want, std::size_t *got) noexcept;
    // How a read that brought nothing ended: `n` is 0 (the stream's end) or -errno.
    Io end_of_read(long n) noexcept;
    const unsigned char *take(std::size_t len) noexcept {
        const unsigned char *p = stage_ + pos_;
        pos_ += len;
        return p;
    }

    int fd_ = -1;
    // The two budgets are not neighbours: begin_round's two stores of one constant into
    // adjacent words became one 16-byte store from .rodata, a line and a page more on
    // every round of a polled connection (docs/benchmarks.md).
    std::uint64_t budget_ = 0;
    bool drained_ = false;
    int errno_ = 0;
    std::uint64_t round_budget_ = 0;
    std::size_t pos_ = 0, len_ = 0;
    unsigned char stage_[kStage];
};

template <int N>
[[gnu::hot]] BufferedSocket::Io BufferedSocket::read_into(IovCursor<N> *dst) noexcept {
    while (dst->left() > 0) {
        if (staged() > 0) {
            std::size_t n =
                dst->left() < staged() ? static_cast<std::size_t>(dst->left()) : staged();
            dst->fill(take(n), n);
            continue;
        }
        if (dst->left() < kStage) {
            // A small remainder: stage it together with whatever follows it.
            if (Io io = refill(); io != Io::Done) return io;
            continue;
        }
        // Straight into the destination, and what follows the frame into the staging
        // buffer (empty here) with the same call: a stream of large frames then costs one
        // system call each, not a readv for the payload and a recv for the next header.
        iovec iov[N + 1];
        const int n = dst->count();
        std::memcpy(iov, dst->data(), sizeof(iovec) * static_cast<std::size_t>(n));
        iov[n] = {stage_, kStage};
        std::size_t got = 0;
        Io io = read_direct(iov, n + 1, dst->left() + kStage, &got);
        if (io != Io::Done) return io;
        const std::size_t mine = got < dst->left() ? got : static_cast<std::size_t>(dst->left());
        dst->consume(mine);
        pos_ = 0;
        len_ = got - mine;
    }
    return Io::Done;
}

}  // namespace opendat::tcp

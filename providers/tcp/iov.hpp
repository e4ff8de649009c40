// Scatter/gather lists for the wire I/O: a fixed-capacity iovec array with a cursor that
// moves forward as bytes are sent, received or copied, and the one place where a DAT
// segment list (LMR triplets) becomes iovecs. Header-only: both directions use it on
// every frame, so it must inline into the hot path.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <dat2/udat.h>

namespace opendat::tcp {

// Segments per posted request or receive (the provider's max_iov).
constexpr int kMaxIov = 16;

// Where a DAT segment's bytes are: the process's own memory, at its virtual address.
inline void *segment_base(const DAT_LMR_TRIPLET &seg) noexcept {
    return reinterpret_cast<void *>(static_cast<std::uintptr_t>(seg.virtual_address));
}

// Copies `n` bytes, a small message's in line: up to 64 bytes as overlapping 16-, 8-, 4- or
// 1-byte moves (what libc's memcpy itself does for small sizes), without the call through
// the PLT to libc, whose stub, GOT entry and code are lines a ping-pong's every message
// fetched again after the system call before it (docs/benchmarks.md). Larger: memcpy.
[[gnu::always_inline]] inline void copy_bytes(void *to, const void *from, std::size_t n) noexcept {
    auto *d = static_cast<unsigned char *>(to);
    const auto *s = static_cast<const unsigned char *>(from);
    auto move = [&](std::size_t at, auto width) {
        unsigned char chunk[decltype(width)::value];
        __builtin_memcpy(chunk, s + at, sizeof chunk);
        __builtin_memcpy(d + at, chunk, sizeof chunk);
    };
    using W16 = std::integral_constant<std::size_t, 16>;
    using W8 = std::integral_constant<std::size_t, 8>;
    using W4 = std::integral_constant<std::size_t, 4>;
    if (n > 64) {
        std::memcpy(d, s, n);
    } else if (n > 32) {
        move(0, W16{});
        move(16, W16{});
        move(n - 32, W16{});
        move(n - 16, W16{});
    } else if (n >= 16) {
        move(0, W16{});
        move(n - 16, W16{});
    } else if (n >= 8) {
        move(0, W8{});
        move(n - 8, W8{});
    } else if (n >= 4) {
        move(0, W4{});
        move(n - 4, W4{});
    } else if (n > 0) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

// The bytes of a DAT segment list, in order, copied to `to` (room for all of them); the
// end of the copy. A small frame's flat copy (TcpEp::send_alone).
inline unsigned char *copy_segments(const DAT_LMR_TRIPLET *seg, std::uint32_t n,
                                    unsigned char *to) noexcept {
    for (std::uint32_t i = 0; i < n; ++i) {
        const auto len = static_cast<std::size_t>(seg[i].segment_length);
        if (len == 0) continue;
        std::memcpy(to, segment_base(seg[i]), len);
        to += len;
    }
    return to;
}

// The bytes a DAT segment list covers, saturated at the largest count (its lengths come
// from the application unchecked, and must not wrap into a small capacity).
inline std::uint64_t segments_bytes(const DAT_LMR_TRIPLET *seg, std::uint32_t n) noexcept {
    std::uint64_t sum = 0;
    for (std::uint32_t i = 0; i < n; ++i)
        if (__builtin_add_overflow(sum, seg[i].segment_length, &sum)) return ~std::uint64_t{0};
    return sum;
}

template <int N>
class IovCursor {
  public:
    static constexpr int kCapacity = N;

    void clear() noexcept {
        n_ = idx_ = 0;
        left_ = 0;
    }
    // Appends one buffer; empty ones are dropped (they would cost readv/sendmsg a slot).
    // The caller sizes N for its frames: at most one header plus kMaxIov segments.
    void push(void *base, std::size_t len) noexcept {
        if (len == 0) return;
        v_[n_++] = {base, len};
        left_ += len;
    }
    void push(const void *base, std::size_t len) noexcept { push(const_cast<void *>(base), len); }
    // Appends the segments of a DAT segment list in order, at most `limit` bytes in all:
    // a message shorter than its receive buffer fills the first segments only.
    void push_segments(const DAT_LMR_TRIPLET *seg, std::uint32_t n,
                       std::uint64_t limit = ~std::uint64_t{0}) noexcept {
        for (std::uint32_t i = 0; i < n && limit > 0; ++i) {
            std::uint64_t take = seg[i].segment_length < limit ? seg[i].segment_length : limit;
            push(segment_base(seg[i]), static_cast<std::size_t>(take));
            limit -= take;
        }
    }

    // Bytes not yet consumed, and the iovecs that hold them.
    std::uint64_t left() const noexcept { return left_; }
    iovec *data() noexcept { return v_ + idx_; }
    int count() const noexcept { return n_ - idx_; }

    // Moves past `len` bytes (sent, or received in place by readv). len <= left().
    void consume(std::size_t len) noexcept {
        left_ -= len;
        while (len > 0) {
            iovec &v = v_[idx_];
            std::size_t take = len < v.iov_len ? len : v.iov_len;
            v.iov_base = static_cast<char *>(v.iov_base) + take;
            v.iov_len -= take;
            len -= take;
            if (v.iov_len == 0) ++idx_;
        }
    }
    // Copies `len` bytes into the buffers and moves past them. len <= left().
    void fill(const unsigned char *from, std::size_t len) noexcept {
        left_ -= len;
        while (len > 0) {
            iovec &v = v_[idx_];
            std::size_t take = len < v.iov_len ? len : v.iov_len;
            std::memcpy(v.iov_base, from, take);
            v.iov_base = static_cast<char *>(v.iov_base) + take;
            v.iov_len -= take;
            from += take;
            len -= take;
            if (v.iov_len == 0) ++idx_;
        }
    }

  private:
    iovec v_[N];  // not value-initialised: only [0, n_) is ever read
    int n_ = 0, idx_ = 0;
    std::uint64_t left_ = 0;
};

}  // namespace opendat::tcp

// BufferedSocket: the system calls behind the receive path (see buffered_socket.hpp).
#include "tcp/buffered_socket.hpp"
#include "util/sys_io.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace opendat::tcp {

[[gnu::hot]] BufferedSocket::Io BufferedSocket::assemble(void *dst, std::size_t want,
                                                         std::size_t *have) noexcept {
    while (*have < want) {
        if (staged() == 0) {
            if (Io io = refill(); io != Io::Done) return io;
        }
        std::size_t n = want - *have < staged() ? want - *have : staged();
        std::memcpy(static_cast<unsigned char *>(dst) + *have, take(n), n);
        *have += n;
    }
    return Io::Done;
}

[[gnu::hot]] BufferedSocket::Io BufferedSocket::skip(std::uint64_t *left) noexcept {
    while (*left > 0) {
        if (staged() == 0) {
            if (Io io = refill(); io != Io::Done) return io;
        }
        std::size_t n = *left < staged() ? static_cast<std::size_t>(*left) : staged();
        take(n);
        *left -= n;
    }
    return Io::Done;
}

[[gnu::hot]] BufferedSocket::Io BufferedSocket::refill() noexcept {
    if (drained_ || budget_ == 0) return Io::Again;
    pos_ = len_ = 0;
    for (;;) {
        const long n = sys::recv_raw(fd_, stage_, kStage, MSG_DONTWAIT);  // or -errno
        if (n > 0) {
            len_ = static_cast<std::size_t>(n);
            budget_ = budget_ > len_ ? budget_ - len_ : 0;
            drained_ = len_ < kStage;
            return Io::Done;
        }
        if (n == -EINTR) continue;
        return end_of_read(n);
    }
}

[[gnu::hot]] BufferedSocket::Io BufferedSocket::read_direct(iovec *iov, int n, std::uint64_t want,
                                                            std::size_t *got) noexcept {
    if (drained_ || budget_ == 0) return Io::Again;
    for (;;) {
        ssize_t r = sys::readv(fd_, iov, n);
        if (r > 0) {
            *got = static_cast<std::size_t>(r);
            budget_ = budget_ > *got ? budget_ - *got : 0;
            drained_ = *got < want;
            return Io::Done;
        }
        if (r < 0 && errno == EINTR) continue;
        return end_of_read(r < 0 ? -errno : 0);
    }
}

[[gnu::hot]] BufferedSocket::Io BufferedSocket::end_of_read(long n) noexcept {
    if (n == 0) return Io::Closed;
    if (n == -EAGAIN || n == -EWOULDBLOCK) {
        drained_ = true;
        return Io::Again;
    }
    errno_ = static_cast<int>(-n);
    return Io::Failed;
}

}  // namespace opendat::tcp

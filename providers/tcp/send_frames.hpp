// The transmit path's one system call: queued frames (header and payload iovecs) to the
// socket.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace opendat::tcp {

// Frames up to this many bytes in all leave from one flat copy with send(): on the
// loopback of our CI machines sendmsg's import of the msghdr and a second iovec costs
// 175-320 ns a call (docs/benchmarks.md, "A flat send for small frames"), copying a few
// hundred bytes a fraction of that. Larger batches keep sendmsg (no copy).
inline constexpr std::size_t kFlatSendMax = 512;

// sendmsg(fd, msg, MSG_NOSIGNAL | MSG_DONTWAIT), the same bytes in the same order and
// the same result, through send() when the frames total at most kFlatSendMax bytes. The
// caller holds what keeps the payloads' memory alive (the revocation hold), as it does
// for the kernel's copy.
ssize_t send_frames(int fd, const msghdr &msg) noexcept;

// At most `max` bytes of `msg` for one call: cuts the iovec count and the last iovec's
// length, and puts that length back when it goes. A nonblocking sendmsg on loopback goes
// on copying for as long as the reader keeps making room, so a transmit budget must be
// enforced before the call, not after it.
class IovCap {
  public:
    IovCap(msghdr &msg, std::uint64_t max) noexcept {
        std::uint64_t total = 0;
        for (std::size_t i = 0; i < msg.msg_iovlen; ++i) {
            iovec &v = msg.msg_iov[i];
            if (v.iov_len <= max - total) {
                total += v.iov_len;
                continue;
            }
            cut_ = &v;
            len_ = v.iov_len;
            v.iov_len = static_cast<std::size_t>(max - total);
            msg.msg_iovlen = i + 1;
            return;
        }
    }
    ~IovCap() {
        if (cut_ != nullptr) cut_->iov_len = len_;
    }
    IovCap(const IovCap &) = delete;
    IovCap &operator=(const IovCap &) = delete;

  private:
    iovec *cut_ = nullptr;
    std::size_t len_ = 0;
};

}  // namespace opendat::tcp

// The transmit path's one system call: queued frames (header and payload iovecs) to the
// socket.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>

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

}  // namespace opendat::tcp

#include "tcp/send_frames.hpp"
#include "util/sys_io.hpp"

#include <cstring>

namespace opendat::tcp {

[[gnu::hot]] ssize_t send_frames(int fd, const msghdr &msg) noexcept {
    constexpr int kFlags = MSG_NOSIGNAL | MSG_DONTWAIT;
    if (msg.msg_iovlen == 1)
        return sys::send(fd, msg.msg_iov[0].iov_base, msg.msg_iov[0].iov_len, kFlags);
    std::size_t total = 0;
    for (std::size_t i = 0; i < msg.msg_iovlen; ++i) {
        if (msg.msg_iov[i].iov_len > kFlatSendMax - total) return sys::sendmsg(fd, &msg, kFlags);
        total += msg.msg_iov[i].iov_len;
    }
    unsigned char flat[kFlatSendMax];  // not initialised: every byte sent is copied first
    std::size_t at = 0;
    for (std::size_t i = 0; i < msg.msg_iovlen; ++i) {
        if (msg.msg_iov[i].iov_len == 0) continue;
        std::memcpy(flat + at, msg.msg_iov[i].iov_base, msg.msg_iov[i].iov_len);
        at += msg.msg_iov[i].iov_len;
    }
    return sys::send(fd, flat, total, kFlags);
}

}  // namespace opendat::tcp

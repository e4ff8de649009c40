#include "tcp/any_port.hpp"

#include <sys/random.h>

#include <cerrno>

#include "tcp/net.hpp"

namespace opendat::tcp {

int bind_any_port(int fd, const sockaddr_storage &addr, socklen_t addr_len,
                  std::uint16_t base) noexcept {
    sockaddr_storage a = addr;
    if (base == 0) {
        set_port(&a, 0);
        return bind(fd, reinterpret_cast<sockaddr *>(&a), addr_len) == 0 ? 0 : errno;
    }
    const std::uint32_t span = 65535u - base;  // ports base+1 .. 65535 (qualifier 0 = "any")
    if (span == 0) return EADDRINUSE;
    std::uint32_t start = 0;
    if (getrandom(&start, sizeof start, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof start))
        start = 0;
    int last = EADDRINUSE;
    for (std::uint32_t i = 0; i < span; ++i) {
        auto port = static_cast<std::uint16_t>(base + 1 + (start + i) % span);
        set_port(&a, port);
        if (bind(fd, reinterpret_cast<sockaddr *>(&a), addr_len) == 0) return 0;
        last = errno;
        if (last != EADDRINUSE && last != EACCES) return last;
    }
    return last;
}

}  // namespace opendat::tcp

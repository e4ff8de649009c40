// dat_psp_create_any under a port base: the qualifier handed back is the TCP port minus
// the base, so the port must lie above the base. The kernel's choice of an ephemeral port
// does not know the base (a port below it would give a qualifier that wraps around).
#pragma once

#include <sys/socket.h>

#include <cstdint>

namespace opendat::tcp {

// Binds `fd` to `addr` (port field ignored) on a free port in (base, 65535]; with base 0,
// wherever the kernel chooses. 0, or the errno of the last attempt (EADDRINUSE when every
// port of the range is taken).
int bind_any_port(int fd, const sockaddr_storage &addr, socklen_t addr_len,
                  std::uint16_t base) noexcept;

}  // namespace opendat::tcp

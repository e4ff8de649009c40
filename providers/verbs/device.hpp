// Finding the RDMA device and port an IA stands for, from its dat.conf ia_params.
//
// ia_params = "<netdev | IPv4 | IPv6 | hostname | verbs device> [<port>]":
//  - a network device name: its first IPv4 address (else IPv6);
//  - a numeric address or a host name;
//  - a verbs device name (e.g. "rxe0", "mlx5_0") and a port number (default 1): the
//    IPv4 address found in that port's GID table (RoCE).
// The address is then bound with rdma_cm, which tells which device and port serve it;
// that bound id is kept for the IA's lifetime so the device stays referenced.
#pragma once

#include <sys/socket.h>

#include <string>

#include <dat2/udat.h>

#include "verbs/raii.hpp"

namespace opendat::verbs {

struct Device {
    sockaddr_storage addr{};     // the IA address (port 0): DAT_IA_ATTR.ia_address_ptr
    IdPtr bound;                 // an rdma_cm id bound to addr (owns the device reference)
    ibv_context *ctx = nullptr;  // owned by librdmacm, valid while `bound` lives
    std::uint8_t port = 1;
    ibv_device_attr attr{};
    ibv_port_attr port_attr{};
    std::string name;   // verbs device name
    std::string what;   // the first word of ia_params
    int want_port = 0;  // the second (0: any)
};

// Step 1, no RDMA needed: the IA address from `params` (sets addr, what, want_port).
// DAT_INVALID_ADDRESS, traced with the reason, when the name is no network device, RDMA
// device, address or resolvable host (as the reference's cma provider for a missing netdev).
DAT_RETURN resolve_address(const char *ia_name, const std::string &params, Device *out) noexcept;
// Step 2: bind the address with rdma_cm on `ch` and query the device and port.
// DAT_INVALID_ADDRESS when no RDMA device serves the address; DAT_INTERNAL_ERROR when a
// verbs/rdma_cm call fails.
DAT_RETURN bind_device(const char *ia_name, rdma_event_channel *ch, Device *out) noexcept;

}  // namespace opendat::verbs

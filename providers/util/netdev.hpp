// Resolving a network-device name from ia_params ("eth0", "dummy0") to the address an IA
// uses; shared by every provider whose IAs are named by interface.
#pragma once

#include <sys/socket.h>

#include <string>

namespace opendat::util {

// The first IPv4 address of interface `name`, else its first IPv6 address. False when the
// interface does not exist or has no address.
bool netdev_address(const std::string &name, sockaddr_storage *out, socklen_t *len) noexcept;

}  // namespace opendat::util

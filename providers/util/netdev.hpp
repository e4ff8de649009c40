// Socket addresses for IAs named in dat.conf: splitting ia_params, resolving a network
// device, a numeric address or a host name, and the small sockaddr helpers every
// address-based transport needs. Shared by every provider whose IAs are named by address.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace opendat::util {

// ia_params = "<name> [<number>]" (tcp: address and port base; verbs: address or device
// and port). `number` is 0 when absent or not a number; the caller checks its range.
// False when the name is missing.
bool split_ia_params(const std::string &params, std::string *name, long *number) noexcept;

// The first IPv4 address of interface `name`, else its first IPv6 address. False when the
// interface does not exist or has no address.
bool netdev_address(const std::string &name, sockaddr_storage *out, socklen_t *len) noexcept;
// A numeric IPv4/IPv6 address or a host name (getaddrinfo), port 0.
bool host_address(const std::string &name, sockaddr_storage *out, socklen_t *len) noexcept;
// A network device's address, else host_address.
bool ia_address(const std::string &name, sockaddr_storage *out, socklen_t *len) noexcept;

socklen_t sockaddr_len(const sockaddr *sa) noexcept;
void set_port(sockaddr_storage *ss, std::uint16_t port) noexcept;
std::uint16_t get_port(const sockaddr_storage &ss) noexcept;
// "address" or, with a port other than 0, "address:port"; "<family N>" for a family
// other than IPv4/IPv6. Returns buf.
const char *addr_str(const sockaddr *sa, char *buf, std::size_t len) noexcept;

}  // namespace opendat::util

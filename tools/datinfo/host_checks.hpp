// Facts about this host that explain why an IA cannot be opened: network interfaces, RDMA
// devices, local addresses, the memlock limit.
#pragma once

#include <optional>
#include <string>
#include <sys/resource.h>

namespace datinfo {

bool network_interface_exists(const std::string &name);
bool rdma_device_exists(const std::string &name);
// Number of entries in /sys/class/infiniband (0 also when the directory is missing).
int rdma_device_count();
// `text` is an IPv4/IPv6 literal; *assigned tells whether an interface of this host has it.
bool is_ip_literal(const std::string &text, bool *assigned);

struct MemlockLimit {
    rlim_t soft = 0;
    rlim_t hard = 0;
};
std::optional<MemlockLimit> memlock_limit();
// Below this, RDMA memory registration of ordinary buffers fails sooner or later.
constexpr rlim_t kMemlockRecommended = rlim_t{64} << 20;
// "8192 KiB", "unlimited"
std::string describe_limit(rlim_t v);

}  // namespace datinfo

#include "host_checks.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>
#include <filesystem>

namespace datinfo {

bool network_interface_exists(const std::string &name) {
    return !name.empty() && name.size() < IF_NAMESIZE && if_nametoindex(name.c_str()) != 0;
}

bool rdma_device_exists(const std::string &name) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        return false;
    std::error_code ec;
    return std::filesystem::exists("/sys/class/infiniband/" + name, ec);
}

int rdma_device_count() {
    std::error_code ec;
    int n = 0;
    for (auto it = std::filesystem::directory_iterator("/sys/class/infiniband", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
        ++n;
    return n;
}

bool is_ip_literal(const std::string &text, bool *assigned) {
    in_addr v4{};
    in6_addr v6{};
    int family = 0;
    if (inet_pton(AF_INET, text.c_str(), &v4) == 1)
        family = AF_INET;
    else if (inet_pton(AF_INET6, text.c_str(), &v6) == 1)
        family = AF_INET6;
    else
        return false;
    *assigned = false;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) return true;
    for (ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != family) continue;
        if (family == AF_INET &&
            std::memcmp(&reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr, &v4, sizeof v4) ==
                0)
            *assigned = true;
        if (family == AF_INET6 &&
            std::memcmp(&reinterpret_cast<sockaddr_in6 *>(i->ifa_addr)->sin6_addr, &v6,
                        sizeof v6) == 0)
            *assigned = true;
    }
    freeifaddrs(list);
    return true;
}

std::optional<MemlockLimit> memlock_limit() {
    rlimit rl{};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return std::nullopt;
    return MemlockLimit{rl.rlim_cur, rl.rlim_max};
}

std::string describe_limit(rlim_t v) {
    if (v == RLIM_INFINITY) return "unlimited";
    return std::to_string(static_cast<unsigned long long>(v) / 1024) + " KiB";
}

}  // namespace datinfo

#include "util/netdev.hpp"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstring>
#include <memory>

namespace opendat::util {

bool netdev_address(const std::string &name, sockaddr_storage *out, socklen_t *len) noexcept {
    ifaddrs *raw = nullptr;
    if (getifaddrs(&raw) != 0) return false;
    std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> list(raw, &freeifaddrs);
    // IPv4 first: it is what peers on the same network most likely reach us by.
    for (int family : {AF_INET, AF_INET6}) {
        for (ifaddrs *i = list.get(); i != nullptr; i = i->ifa_next) {
            if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != family || name != i->ifa_name)
                continue;
            *len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
            std::memcpy(out, i->ifa_addr, *len);
            return true;
        }
    }
    return false;
}

}  // namespace opendat::util

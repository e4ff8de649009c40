#include "util/netdev.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

namespace opendat::util {

bool split_ia_params(const std::string &params, std::string *name, long *number) noexcept {
    try {
        std::istringstream in(params);
        std::string first;
        long n = 0;
        in >> first;
        if (!(in >> n)) n = 0;
        if (first.empty()) return false;
        *name = std::move(first);
        *number = n;
        return true;
    } catch (...) {
        return false;
    }
}

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
            *out = sockaddr_storage{};
            std::memcpy(out, i->ifa_addr, *len);
            set_port(out, 0);
            return true;
        }
    }
    return false;
}

bool host_address(const std::string &name, sockaddr_storage *out, socklen_t *len) noexcept {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (getaddrinfo(name.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return false;
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(res, &freeaddrinfo);
    if (res->ai_addrlen > sizeof *out) return false;
    *out = sockaddr_storage{};
    std::memcpy(out, res->ai_addr, res->ai_addrlen);
    *len = static_cast<socklen_t>(res->ai_addrlen);
    set_port(out, 0);
    return true;
}

bool ia_address(const std::string &name, sockaddr_storage *out, socklen_t *len) noexcept {
    return netdev_address(name, out, len) || host_address(name, out, len);
}

socklen_t sockaddr_len(const sockaddr *sa) noexcept {
    return sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

void set_port(sockaddr_storage *ss, std::uint16_t port) noexcept {
    if (ss->ss_family == AF_INET6)
        reinterpret_cast<sockaddr_in6 *>(ss)->sin6_port = htons(port);
    else
        reinterpret_cast<sockaddr_in *>(ss)->sin_port = htons(port);
}

std::uint16_t get_port(const sockaddr_storage &ss) noexcept {
    if (ss.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(&ss)->sin6_port);
    return ntohs(reinterpret_cast<const sockaddr_in *>(&ss)->sin_port);
}

const char *addr_str(const sockaddr *sa, char *buf, std::size_t len) noexcept {
    char host[INET6_ADDRSTRLEN];
    unsigned port = 0;
    const void *a = nullptr;
    if (sa->sa_family == AF_INET) {
        auto *s = reinterpret_cast<const sockaddr_in *>(sa);
        a = &s->sin_addr;
        port = ntohs(s->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        auto *s = reinterpret_cast<const sockaddr_in6 *>(sa);
        a = &s->sin6_addr;
        port = ntohs(s->sin6_port);
    }
    if (a == nullptr || inet_ntop(sa->sa_family, a, host, sizeof host) == nullptr)
        std::snprintf(buf, len, "<family %d>", sa->sa_family);
    else if (port != 0)
        std::snprintf(buf, len, "%s:%u", host, port);
    else
        std::snprintf(buf, len, "%s", host);
    return buf;
}

}  // namespace opendat::util

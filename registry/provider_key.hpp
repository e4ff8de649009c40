// The registry key: a DAT_PROVIDER_INFO 4-tuple (IA name, API major, API minor, thread
// safety). Equality is the reference's: same name length and bytes, same versions, same
// thread-safety value.
#pragma once

#include "registry/registry.hpp"

#include <cstring>
#include <string>

namespace opendat::registry {

// The name is read with a bound: a caller's ia_name[] need not be NUL-terminated.
inline std::string key_name(const DAT_PROVIDER_INFO &k) {
    return std::string(k.ia_name, strnlen(k.ia_name, DAT_NAME_MAX_LENGTH));
}

inline bool same_key(const DAT_PROVIDER_INFO &a, const DAT_PROVIDER_INFO &b) noexcept {
    const std::size_t la = strnlen(a.ia_name, DAT_NAME_MAX_LENGTH);
    const std::size_t lb = strnlen(b.ia_name, DAT_NAME_MAX_LENGTH);
    return la == lb && std::memcmp(a.ia_name, b.ia_name, la) == 0 &&
           a.dapl_version_major == b.dapl_version_major &&
           a.dapl_version_minor == b.dapl_version_minor && a.is_thread_safe == b.is_thread_safe;
}

// The persistent copy given to dat_provider_init. The parser guarantees name length <= 255.
inline DAT_PROVIDER_INFO key_of(const ConfigEntry &e) noexcept {
    DAT_PROVIDER_INFO k{};
    std::memcpy(k.ia_name, e.ia_name.data(),
                std::min<std::size_t>(e.ia_name.size(), DAT_NAME_MAX_LENGTH - 1));
    k.dapl_version_major = e.api_major;
    k.dapl_version_minor = e.api_minor;
    k.is_thread_safe = e.thread_safe ? DAT_TRUE : DAT_FALSE;
    return k;
}

// "'ofa-v2-ib0' u2.0 nonthreadsafe", for messages.
inline std::string describe_key(const DAT_PROVIDER_INFO &k) {
    return "'" + key_name(k) + "' u" + std::to_string(k.dapl_version_major) + "." +
           std::to_string(k.dapl_version_minor) +
           (k.is_thread_safe ? " threadsafe" : " nonthreadsafe");
}

}  // namespace opendat::registry

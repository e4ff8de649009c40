// Pattern B of docs/dat-abi.md §3.3: functions whose first argument is an IA handle
// translate the consumer's small integer into the provider's raw IA before dispatching.
#pragma once

#include "dispatch.hpp"
#include "ia_table.hpp"

namespace opendat::dat {

// The raw IA for a consumer IA handle, or nullptr (NULL, out of range, or free slot).
inline void *raw_ia(DAT_IA_HANDLE ia) noexcept {
    return IaTable::instance().lookup(reinterpret_cast<std::uintptr_t>(ia));
}

template <auto Slot, typename... Args>
[[gnu::always_inline]] inline DAT_RETURN forward_ia(const char *function, DAT_IA_HANDLE ia,
                                                    Args... args) noexcept {
    void *raw = raw_ia(ia);
    if (__builtin_expect(raw == nullptr, 0)) return kInvalidIa;
    return call<Slot>(function, static_cast<DAT_IA_HANDLE>(raw), args...);
}

// Generic handles (consumer context, handle type): a live IA index is translated, anything
// else must be a provider object (handle_check.hpp); nullptr when it is neither.
inline DAT_HANDLE generic_handle(const char *function, DAT_HANDLE handle) noexcept {
    void *raw = raw_ia(static_cast<DAT_IA_HANDLE>(handle));
    if (raw != nullptr) return static_cast<DAT_HANDLE>(raw);
    return handles::valid(function, handle) ? handle : nullptr;
}

}  // namespace opendat::dat

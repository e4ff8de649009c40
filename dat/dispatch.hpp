// Handle -> provider -> slot dispatch, shared by every wrapper file.
//
// Every object a provider hands out as a handle starts with a pointer to its DAT_PROVIDER
// table (docs/dat-abi.md §3.1). A wrapper checks the handle for NULL exactly as the
// reference does, refuses with the same code a handle no registered provider issued
// (handle_check.hpp: a few compares and one cached load, no syscall once the page is
// known), then makes one plain indirect call through the slot: no lock, no allocation, no
// trace unless the DAT domain is at detail level. An empty slot answers
// DAT_NOT_IMPLEMENTED instead of jumping to address 0.
#pragma once

#include "api.hpp"
#include "handle_check.hpp"

#include <trace/trace.hpp>

#include <cstdint>

namespace opendat::dat {

// The reference builds every error as class | type | subtype (§7.1).
constexpr DAT_RETURN error(DAT_UINT32 type, DAT_UINT32 subtype = 0) noexcept {
    return DAT_CLASS_ERROR | type | subtype;
}

constexpr DAT_RETURN kNotImplemented = error(DAT_NOT_IMPLEMENTED);  // 0xBFFF0000
constexpr DAT_RETURN kInvalidIa = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
constexpr DAT_RETURN kNoMemory = error(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);

// The handle passed handles::valid(), but a garbage pointer can pass it too when the word it
// names happens to equal a provider table; the provider's own check then refuses it. Read
// as valid() read it, so a sanitizer build does not report that read first.
inline const DAT_PROVIDER *provider_of(const void *handle) noexcept {
    return handles::first_word(handle);
}

// Out of line and cold: the trace for an empty slot (level 3, names function and provider).
[[gnu::cold]] DAT_RETURN not_implemented(const char *function,
                                         const DAT_PROVIDER *provider) noexcept;

// The traced variant of call(): kept out of line so that the untraced path stays a test
// and a tail jump (no register saves for a call that almost never happens).
template <typename Fn, typename Handle, typename... Args>
[[gnu::noinline, gnu::cold]] DAT_RETURN traced_call(const char *function, Fn fn, Handle handle,
                                                    Args... args) noexcept {
    DAT_TRC(trace::kDetail, "api", "%s(%p)", function, static_cast<const void *>(handle));
    const DAT_RETURN r = fn(handle, args...);
    DAT_TRC(trace::kDetail, "api", "%s -> 0x%x", function, r);
    return r;
}

// Calls provider->*Slot(handle, args...). Handle must already be checked for NULL.
template <auto Slot, typename Handle, typename... Args>
[[gnu::always_inline]] inline DAT_RETURN call(const char *function, Handle handle,
                                              Args... args) noexcept {
    const DAT_PROVIDER *provider = provider_of(handle);
    auto fn = provider->*Slot;
    if (__builtin_expect(fn == nullptr, 0)) return not_implemented(function, provider);
    if (__builtin_expect(trace::dat_domain().enabled(trace::kDetail), 0))
        return traced_call(function, fn, handle, args...);
    return fn(handle, args...);
}

// Pattern A (§3.3): NULL handle -> `null_code`, a handle no provider issued -> the same
// code, else dispatch.
template <auto Slot, DAT_RETURN NullCode, typename Handle, typename... Args>
[[gnu::always_inline]] inline DAT_RETURN forward(const char *function, Handle handle,
                                                 Args... args) noexcept {
    if (__builtin_expect(handle == nullptr, 0)) return NullCode;
    if (__builtin_expect(!handles::valid(function, handle), 0)) return NullCode;
    return call<Slot>(function, handle, args...);
}

// forward() for calls that end the handle's life (dat_*_free, dat_cr_accept/reject): on
// success the provider may have given the memory back, so its page leaves the cache.
template <auto Slot, DAT_RETURN NullCode, typename Handle, typename... Args>
inline DAT_RETURN forward_end(const char *function, Handle handle, Args... args) noexcept {
    const DAT_RETURN r = forward<Slot, NullCode>(function, handle, args...);
    if (r == DAT_SUCCESS) handles::forget_page(handle);
    return r;
}

}  // namespace opendat::dat

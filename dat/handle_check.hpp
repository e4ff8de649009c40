// Refusing a handle no provider issued, before it is dereferenced (docs/dat-abi.md §3.1:
// libdat2 reads the provider table pointer from a handle's first word).
//
// A handle passes when
//  1. it is not NULL, not in the first page, below the top of user space and 8-aligned
//     (every provider object starts with a pointer): no memory touched;
//  2. its first word can be read without a fault: a direct-mapped cache of pages known to be
//     readable answers in one load; a miss asks the kernel (process_vm_readv on our own
//     process, which fails with EFAULT instead of faulting) and fills the cache;
//  3. that word is the DAT_PROVIDER table of a provider registered with this library.
// The provider then checks type, liveness and ownership itself (OpenDAT providers: see
// providers/util/object.hpp). A page stays cached while the provider's memory stays
// mapped; a successful dat_*_free, cr_accept/cr_reject and every dat_ia_close evict the
// page(s) concerned, because a provider may give that memory back to the system.
#pragma once

#include "api.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace opendat::dat::handles {

constexpr std::size_t kPageShift = 12;
constexpr std::size_t kCacheSlots = 1024;
constexpr std::size_t kMaxProviders = 64;

extern std::atomic<std::uintptr_t> g_readable[kCacheSlots];
extern std::atomic<const DAT_PROVIDER *> g_providers[kMaxProviders];
extern std::atomic<std::size_t> g_provider_slots;  // slots in use (high-water mark)

inline std::size_t slot_of(std::uintptr_t page) noexcept {
    return (page ^ (page >> 10)) & (kCacheSlots - 1);
}

// Slow path of step 2: asks the kernel, fills the cache. Out of line and cold.
[[gnu::cold]] bool probe_readable(std::uintptr_t address) noexcept;
// Trace line for a refused handle (cold).
[[gnu::cold]] void refused(const char *function, const void *handle, const char *why) noexcept;

// The load of step 3. The address was shown readable, but it need not be an object: it may
// be a heap redzone, freed memory or the sanitizer's own shadow, which a sanitizer would
// report (or, for the shadow, fault on while checking the load). In sanitizer builds the
// load is therefore done by an uninstrumented, never-inlined function: what matters here
// is the machine's answer, not the sanitizer's opinion of who owns the bytes.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OPENDAT_HANDLE_LOAD_UNCHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define OPENDAT_HANDLE_LOAD_UNCHECKED 1
#endif
#endif
#if !defined(OPENDAT_HANDLE_LOAD_UNCHECKED)
#define OPENDAT_HANDLE_LOAD gnu::always_inline
#elif defined(__clang__)
#define OPENDAT_HANDLE_LOAD gnu::noinline, clang::no_sanitize("address", "thread", "memory")
#else
#define OPENDAT_HANDLE_LOAD gnu::noinline, gnu::no_sanitize("address", "thread")
#endif
[[OPENDAT_HANDLE_LOAD]] inline const DAT_PROVIDER *first_word(const void *handle) noexcept {
    return *static_cast<const DAT_PROVIDER *const *>(handle);
}
#undef OPENDAT_HANDLE_LOAD

inline bool registered(const DAT_PROVIDER *p) noexcept {
    const std::size_t n = g_provider_slots.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i)
        if (g_providers[i].load(std::memory_order_relaxed) == p) return p != nullptr;
    return false;
}

// Steps 1-3. `function` names the caller in the trace line of a refusal.
[[gnu::always_inline]] inline bool valid(const char *function, const void *handle) noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(handle);
    if (__builtin_expect(a < (std::uintptr_t{1} << kPageShift) || (a >> 47) != 0 || (a & 7) != 0,
                         0)) {
        refused(function, handle, "not a pointer to an object");
        return false;
    }
    const std::uintptr_t page = a >> kPageShift;
    if (__builtin_expect(g_readable[slot_of(page)].load(std::memory_order_relaxed) != page, 0) &&
        !probe_readable(a)) {
        refused(function, handle, "unreadable address");
        return false;
    }
    if (__builtin_expect(!registered(first_word(handle)), 0)) {
        refused(function, handle, "no registered provider issued it");
        return false;
    }
    return true;
}

// Registry hooks: a provider table becomes (in)valid as a handle's first word.
void provider_added(const DAT_PROVIDER *p) noexcept;
void provider_removed(const DAT_PROVIDER *p) noexcept;

// The provider may have returned the memory of `handle` (freed) or of everything (IA closed).
inline void forget_page(const void *handle) noexcept {
    const std::uintptr_t page = reinterpret_cast<std::uintptr_t>(handle) >> kPageShift;
    std::atomic<std::uintptr_t> &s = g_readable[slot_of(page)];
    std::uintptr_t expected = page;
    s.compare_exchange_strong(expected, 0, std::memory_order_relaxed);
}
void forget_all_pages() noexcept;

}  // namespace opendat::dat::handles

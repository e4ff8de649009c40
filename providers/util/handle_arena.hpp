// The memory every DAT object (util::Header) of this provider library lives in.
//
// A DAT handle is the object's address, so a stale handle is only safe to check if its
// address is never given to another object. The arena hands out addresses from 64 MiB
// chunks reserved with mmap and never unmapped nor reused within the process:
//  - a handle outside this library's chunks is not ours (another provider, a foreign
//    library, garbage): one bitmap load says so without touching the handle's memory;
//  - a handle inside a chunk can always be read without a fault (the chunk is one
//    anonymous read-write mapping; pages never used or given back read as zeros);
//  - a freed object's magic is overwritten by an atomic store the compiler cannot drop,
//    and once every object on a page is dead the page is given back to the kernel
//    (MADV_DONTNEED) and reads as zeros: "not live", never "someone else's object".
// Each object is preceded by a 16-byte prefix recording its size, so a delete through
// any static type releases the right pages.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace opendat::util::arena {

constexpr unsigned kChunkShift = 26;   // 64 MiB chunks
constexpr unsigned kAddressBits = 47;  // user space of a 4-level-paging x86-64/arm64 process
constexpr std::size_t kAlign = 16;

// One bit per possible chunk of the address space (2^21 bits, 256 KiB of zero bss).
extern std::atomic<std::uint64_t>
    g_chunk_bits[(std::size_t{1} << (kAddressBits - kChunkShift)) / 64];
extern std::uint32_t g_secret;  // random per process: live tags are not predictable

// True when `p` lies in a chunk of this library's arena (then p..p+16 is readable).
inline bool contains(const void *p) noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if ((a >> kAddressBits) != 0 || (a & (kAlign - 1)) != 0) return false;
    const std::uintptr_t chunk = a >> kChunkShift;
    return (g_chunk_bits[chunk / 64].load(std::memory_order_acquire) >> (chunk % 64)) & 1u;
}

// The magic a live object at `p` carries: tied to its address and a per-process secret,
// so bytes that merely look like a header (e.g. a peer's private data inside another
// object) do not pass as one.
inline std::uint32_t live_tag(const void *p) noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return g_secret ^ static_cast<std::uint32_t>(a >> 4) ^ static_cast<std::uint32_t>(a >> 36);
}

// Storage for an object of `size` bytes, or nullptr (no memory, address space exhausted).
void *allocate(std::size_t size) noexcept;
// Returns the storage of an object `allocate` gave (any other pointer is ignored).
void release(void *p) noexcept;

// Counters for tests and measurements.
struct Stats {
    std::size_t live_objects;
    std::size_t chunks;
    std::size_t pages_returned;
};
Stats stats() noexcept;

}  // namespace opendat::util::arena

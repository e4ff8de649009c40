#include "util/handle_arena.hpp"

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "trace/trace.hpp"

// GCC says __SANITIZE_ADDRESS__; clang (before 15) only answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define OPENDAT_ARENA_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OPENDAT_ARENA_LSAN 1
#endif
#endif
#if defined(OPENDAT_ARENA_LSAN)
#include <sanitizer/lsan_interface.h>
#endif

namespace opendat::util::arena {

std::atomic<std::uint64_t> g_chunk_bits[(std::size_t{1} << (kAddressBits - kChunkShift)) / 64];
std::uint32_t g_secret = 0x9e3779b9u;

namespace {

constexpr std::size_t kChunkSize = std::size_t{1} << kChunkShift;
constexpr std::size_t kPrefix = kAlign;         // holds the object's size
constexpr std::uint32_t kDeadTag = 0xdeadda7a;  // = kMagicDead (object.hpp)

struct Chunk {
    std::uintptr_t base = 0;
    std::size_t used = 0;             // bump offset: addresses below were handed out
    std::vector<std::uint16_t> live;  // live objects touching each page
};

std::size_t page_size() noexcept {
    static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return p;
}

// The arena's bookkeeping. Creation and release of DAT objects are not on the data path;
// one mutex is enough. Never destroyed: stale handles may be checked until the very end.
struct State {
    std::mutex mu;
    std::vector<Chunk *> chunks;  // every chunk ever reserved, in address order of creation
    Chunk *current = nullptr;
    std::size_t live_objects = 0;
    std::size_t pages_returned = 0;
};
// In static storage rather than on the heap, so that nothing is left to leak when the
// provider library is unloaded (the reaper below frees the rest).
alignas(State) unsigned char g_state_storage[sizeof(State)];
State &state() noexcept {
    static State *s = new (g_state_storage) State;
    return *s;
}

// At unload (or exit): with no object left, the bookkeeping goes; the chunks stay mapped
// (address space only) so that a stale handle can still never meet a new object there.
struct Reaper {
    ~Reaper() {
        State &s = state();
        std::lock_guard lk(s.mu);
        if (s.live_objects != 0) return;  // the consumer leaked objects: keep their pages
        for (Chunk *c : s.chunks) delete c;
        std::vector<Chunk *>().swap(s.chunks);
        s.current = nullptr;
    }
} g_reaper;

// Reserves a chunk aligned to its size, so one bit per 64 MiB names it.
Chunk *new_chunk() noexcept {
    void *raw = mmap(nullptr, 2 * kChunkSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) {
        DAPL_TRC(trace::kError, "arena", "cannot reserve a %zu MiB handle chunk: %s",
                 kChunkSize >> 20, std::strerror(errno));
        return nullptr;
    }
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t base = (start + kChunkSize - 1) & ~(kChunkSize - 1);
    if (base > start) munmap(raw, base - start);
    const std::uintptr_t end = start + 2 * kChunkSize;
    if (end > base + kChunkSize)
        munmap(reinterpret_cast<void *>(base + kChunkSize), end - (base + kChunkSize));
    if ((base >> kAddressBits) != 0) {  // a 5-level-paging address: cannot be named
        munmap(reinterpret_cast<void *>(base), kChunkSize);
        return nullptr;
    }
    auto *c = new (std::nothrow) Chunk;
    if (c == nullptr) {
        munmap(reinterpret_cast<void *>(base), kChunkSize);
        return nullptr;
    }
    try {
        c->live.assign(kChunkSize / page_size(), 0);
        state().chunks.push_back(c);
    } catch (...) {
        delete c;
        munmap(reinterpret_cast<void *>(base), kChunkSize);
        return nullptr;
    }
    c->base = base;
    if (g_secret == 0x9e3779b9u) {
        std::uint32_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) == sizeof r) g_secret = r | 1u;
    }
#if defined(OPENDAT_ARENA_LSAN)
    // LeakSanitizer scans malloc'd memory, not our mapping: without this, heap memory that
    // only live DAT objects point to (an EVD's ring, say) would be reported as leaked.
    __lsan_register_root_region(reinterpret_cast<void *>(base), kChunkSize);
#endif
    const std::uintptr_t index = base >> kChunkShift;
    g_chunk_bits[index / 64].fetch_or(std::uint64_t{1} << (index % 64), std::memory_order_release);
    DAPL_TRC(trace::kDetail, "arena", "handle chunk %p reserved", reinterpret_cast<void *>(base));
    return c;
}

Chunk *chunk_of(State &s, std::uintptr_t a) noexcept {
    for (Chunk *c : s.chunks)
        if (a >= c->base && a < c->base + kChunkSize) return c;
    return nullptr;
}

void add_pages(Chunk *c, std::uintptr_t a, std::size_t size, int delta) noexcept {
    const std::size_t ps = page_size();
    const std::size_t first = (a - c->base) / ps;
    const std::size_t last = (a + size - 1 - c->base) / ps;
    for (std::size_t p = first; p <= last; ++p)
        c->live[p] = static_cast<std::uint16_t>(c->live[p] + delta);
}

// Gives back page `p` if no live object touches it and the bump pointer has left it.
void maybe_return(State &s, Chunk *c, std::size_t p) noexcept {
    const std::size_t ps = page_size();
    if (c->live[p] != 0 || (p + 1) * ps > c->used) return;
    madvise(reinterpret_cast<void *>(c->base + p * ps), ps, MADV_DONTNEED);
    ++s.pages_returned;
}

}  // namespace

void *allocate(std::size_t size) noexcept {
    const std::size_t need = (kPrefix + size + kAlign - 1) & ~(kAlign - 1);
    if (need > kChunkSize / 4) return nullptr;
    State &s = state();
    std::lock_guard lk(s.mu);
    for (;;) {
        Chunk *c = s.current;
        if (c == nullptr || c->used + need > kChunkSize) {
            if (c != nullptr) {
                const std::size_t last = (c->used == 0 ? 0 : (c->used - 1) / page_size());
                c->used = kChunkSize;  // closed: its last page may be given back now
                maybe_return(s, c, last);
            }
            c = s.current = new_chunk();
            if (c == nullptr) return nullptr;
        }
        const std::uintptr_t block = c->base + c->used;
        const std::uintptr_t object = block + kPrefix;
        const std::size_t old_page = c->used == 0 ? 0 : (c->used - 1) / page_size();
        c->used += need;
        // A tag that reads as "dead" or as zero memory cannot mark a live object: skip
        // this address (once in 2^31 allocations).
        const std::uint32_t tag = live_tag(reinterpret_cast<void *>(object));
        if (tag == kDeadTag || tag == 0) continue;
        add_pages(c, block, need, +1);
        // The page the bump pointer just left may have emptied before it moved on.
        if (old_page != (c->used - 1) / page_size()) maybe_return(s, c, old_page);
        *reinterpret_cast<std::size_t *>(block) = need;
        ++s.live_objects;
        return reinterpret_cast<void *>(object);
    }
}

void release(void *p) noexcept {
    if (p == nullptr || !contains(p)) return;
    const auto object = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t block = object - kPrefix;
    State &s = state();
    std::lock_guard lk(s.mu);
    Chunk *c = chunk_of(s, object);
    if (c == nullptr) return;
    auto *size_slot = reinterpret_cast<std::size_t *>(block);
    const std::size_t need = *size_slot;
    if (need == 0) return;  // double release: already gone
    *size_slot = 0;
    add_pages(c, block, need, -1);
    --s.live_objects;
    const std::size_t ps = page_size();
    for (std::size_t pg = (block - c->base) / ps; pg <= (block + need - 1 - c->base) / ps; ++pg)
        maybe_return(s, c, pg);
}

Stats stats() noexcept {
    State &s = state();
    std::lock_guard lk(s.mu);
    return Stats{s.live_objects, s.chunks.size(), s.pages_returned};
}

}  // namespace opendat::util::arena

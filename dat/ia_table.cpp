#include "ia_table.hpp"

#include <trace/trace.hpp>

#include <new>

namespace opendat::dat {

namespace {
// constinit: usable from any constructor or provider callback, whatever the init order.
// No destructor runs at exit, so providers torn down late can still translate handles;
// the chunks stay reachable from here, so leak checkers do not report them.
constinit IaTable g_table;
}  // namespace

IaTable &IaTable::instance() noexcept {
    return g_table;
}

IaTable::Chunk *IaTable::chunk(std::size_t n) const noexcept {
    if (n == 0) return const_cast<Chunk *>(&first_);
    return more_[n].load(std::memory_order_acquire);
}

void *IaTable::lookup(std::uintptr_t index) const noexcept {
    if (index >= capacity()) return nullptr;
    // Chunk n is published before the capacity that reaches it, and never freed.
    return chunk(index / kChunk)->slot[index % kChunk].load(std::memory_order_acquire);
}

std::uintptr_t IaTable::reverse(const void *raw) const noexcept {
    if (raw == nullptr) return 0;
    const std::uintptr_t cap = capacity();
    for (std::uintptr_t i = 1; i < cap; ++i)
        if (lookup(i) == raw) return i;
    return 0;
}

std::uintptr_t IaTable::insert(void *raw) noexcept {
    std::lock_guard lock(mutex_);
    const std::uintptr_t cap = capacity_.load(std::memory_order_relaxed);
    for (std::uintptr_t i = 1; i < cap; ++i) {
        auto &s = chunk(i / kChunk)->slot[i % kChunk];
        if (s.load(std::memory_order_relaxed) == nullptr) {
            s.store(raw, std::memory_order_release);
            return i;
        }
    }
    const std::size_t n = cap / kChunk;
    if (n >= kMaxChunks) {
        DAT_TRC(trace::kError, "ia-table", "IA handle table full (%zu entries)",
                static_cast<std::size_t>(cap));
        return 0;
    }
    Chunk *grown = new (std::nothrow) Chunk;
    if (grown == nullptr) return 0;
    DAT_TRC(trace::kDetail, "ia-table", "growing the IA handle table from %zu to %zu",
            static_cast<std::size_t>(cap), static_cast<std::size_t>(cap + kChunk));
    grown->slot[0].store(raw, std::memory_order_relaxed);
    // Publish the chunk before the capacity that makes it reachable.
    more_[n].store(grown, std::memory_order_release);
    capacity_.store(cap + kChunk, std::memory_order_release);
    return cap;
}

void IaTable::release(std::uintptr_t index) noexcept {
    std::lock_guard lock(mutex_);
    if (index == 0 || index >= capacity_.load(std::memory_order_relaxed)) return;
    chunk(index / kChunk)->slot[index % kChunk].store(nullptr, std::memory_order_release);
}

}  // namespace opendat::dat

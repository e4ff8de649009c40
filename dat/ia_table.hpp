// The IA handle table (docs/dat-abi.md §3.2): consumers see small integers (1, 2, ...), the
// providers' raw IA objects live in this table. The lowest free slot >= 1 is handed out;
// the table starts with 64 slots and grows by 64.
//
// Writers (open/close) serialise on a mutex. Readers never lock: the table is a directory
// of fixed 64-slot chunks that are published once and never moved or freed, so a lookup is
// two acquire loads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace opendat::dat {

class IaTable {
  public:
    static constexpr std::size_t kChunk = 64;        // initial size and growth step
    static constexpr std::size_t kMaxChunks = 4096;  // 262144 IAs: far beyond any provider

    constexpr IaTable() = default;
    IaTable(const IaTable &) = delete;
    IaTable &operator=(const IaTable &) = delete;

    static IaTable &instance() noexcept;

    // Stores `raw` in the lowest free slot >= 1 and returns its index; 0 when memory for a
    // new chunk is unavailable or the table is at its limit.
    std::uintptr_t insert(void *raw) noexcept;
    // Empties slot `index` (no-op for an out-of-range index).
    void release(std::uintptr_t index) noexcept;

    // Number of slots (the reference's "table size"): 64, 128, ...
    std::uintptr_t capacity() const noexcept { return capacity_.load(std::memory_order_acquire); }
    // The raw IA in slot `index`, or nullptr if out of range or empty.
    void *lookup(std::uintptr_t index) const noexcept;
    // The index whose slot holds `raw`, or 0 if none does.
    std::uintptr_t reverse(const void *raw) const noexcept;

  private:
    struct Chunk {
        std::atomic<void *> slot[kChunk]{};
    };
    Chunk *chunk(std::size_t n) const noexcept;

    Chunk first_{};                            // the initial 64 slots live in static storage
    std::atomic<Chunk *> more_[kMaxChunks]{};  // more_[n] holds chunk n (n >= 1)
    std::atomic<std::uintptr_t> capacity_{kChunk};
    std::mutex mutex_;
};

}  // namespace opendat::dat

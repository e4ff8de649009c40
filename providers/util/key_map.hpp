// KeyMap: memory keys (lmr_context / rmr_context) to their registered ranges, for the
// access check that every post and every incoming RDMA frame makes.
//
// Open addressing with linear probing in one flat array: a lookup hashes the key with one
// multiply and usually reads one cache line, where std::unordered_map divides by a prime
// and follows a bucket pointer and a node pointer (on the ping-pong's path, right after the
// kernel has evicted our lines, each pointer was a cache miss). Keys are random and never
// 0, so 0 marks a free slot; erase shifts the following entries back, so there are no
// tombstones and a lookup stops at the first free slot. The table doubles at half full.
//
// Not thread-safe: MemTable guards it with its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "util/memory_range.hpp"

namespace opendat::util {

class KeyMap {
  public:
    // The range registered under `key`, or nullptr. `key` may be anything (a peer's).
    const MemRange *find(std::uint32_t key) const noexcept {
        if (key == 0 || slots_ == nullptr) return nullptr;
        for (std::size_t i = home(key);; i = (i + 1) & mask_) {
            const Slot &s = slots_[i];
            if (s.key == key) return &s.range;
            if (s.key == 0) return nullptr;
        }
    }
    bool contains(std::uint32_t key) const noexcept { return find(key) != nullptr; }
    std::size_t size() const noexcept { return size_; }

    // Records a new key (not 0, not present). False: no memory to grow, nothing changed.
    bool insert(std::uint32_t key, const MemRange &range) noexcept;
    // Forgets `key` if present.
    void erase(std::uint32_t key) noexcept;

  private:
    struct Slot {
        std::uint32_t key = 0;
        MemRange range;
    };
    std::size_t home(std::uint32_t key) const noexcept {
        // Fibonacci hashing: the top bits of the product, spread over the whole table.
        return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
    }
    bool grow() noexcept;
    void place(std::uint32_t key, const MemRange &range) noexcept;

    std::unique_ptr<Slot[]> slots_;
    std::size_t mask_ = 0;  // capacity - 1 (capacity a power of two)
    unsigned shift_ = 64;   // 64 - log2(capacity)
    std::size_t size_ = 0;
};

}  // namespace opendat::util

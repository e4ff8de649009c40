#include "util/key_map.hpp"

#include <new>
#include <utility>

namespace opendat::util {

namespace {
constexpr std::size_t kFirstCapacity = 64;
}  // namespace

void KeyMap::place(std::uint32_t key, const MemRange &range) noexcept {
    std::size_t i = home(key);
    while (slots_[i].key != 0) i = (i + 1) & mask_;
    slots_[i].key = key;
    slots_[i].range = range;
}

bool KeyMap::grow() noexcept {
    const std::size_t old_cap = slots_ == nullptr ? 0 : mask_ + 1;
    const std::size_t cap = old_cap == 0 ? kFirstCapacity : old_cap * 2;
    std::unique_ptr<Slot[]> fresh(new (std::nothrow) Slot[cap]);
    if (fresh == nullptr) return false;
    std::unique_ptr<Slot[]> old = std::exchange(slots_, std::move(fresh));
    mask_ = cap - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
    for (std::size_t i = 0; i < old_cap; ++i)
        if (old[i].key != 0) place(old[i].key, old[i].range);
    return true;
}

bool KeyMap::insert(std::uint32_t key, const MemRange &range) noexcept {
    // At most half full: probe runs stay short, and a lookup always finds a free slot.
    if ((slots_ == nullptr || 2 * (size_ + 1) > mask_ + 1) && !grow()) return false;
    place(key, range);
    ++size_;
    return true;
}

void KeyMap::erase(std::uint32_t key) noexcept {
    if (key == 0 || slots_ == nullptr) return;
    std::size_t i = home(key);
    while (slots_[i].key != key) {
        if (slots_[i].key == 0) return;
        i = (i + 1) & mask_;
    }
    // Backward shift: move each later entry of the run into the hole unless its home lies
    // cyclically after the hole (it would then become unreachable from its home).
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
        const std::size_t h = home(slots_[j].key);
        const bool reachable = ((j - h) & mask_) >= ((j - hole) & mask_);
        if (!reachable) continue;
        slots_[hole] = slots_[j];
        hole = j;
    }
    slots_[hole] = Slot{};
    --size_;
}

}  // namespace opendat::util

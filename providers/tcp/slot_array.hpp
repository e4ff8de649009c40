// The scatter/gather lists of a ring's slots (kMaxIov triplets per slot), allocated
// without being written. A zero-filled array makes every page resident at ep_create: an
// idle endpoint with the default queue depths then cost about 175 KiB (datscale, 10,000
// endpoints). Left unwritten, only the pages of slots that work is posted to are ever
// touched. Only the triplets a post wrote (its niov) are read back.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace opendat::tcp {

template <class T>
class SlotArray {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>);

  public:
    // Throws std::bad_alloc, like the vectors it stands next to.
    void allocate(std::size_t n) {
        p_ = std::make_unique_for_overwrite<T[]>(n);
        n_ = n;
    }
    T &operator[](std::size_t i) noexcept { return p_[i]; }
    const T &operator[](std::size_t i) const noexcept { return p_[i]; }
    std::size_t size() const noexcept { return n_; }
    void swap(SlotArray &o) noexcept {
        p_.swap(o.p_);
        std::swap(n_, o.n_);
    }

  private:
    std::unique_ptr<T[]> p_;
    std::size_t n_ = 0;
};

}  // namespace opendat::tcp

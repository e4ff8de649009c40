// How many objects use one: the LMRs, RMRs, EPs and SRQs in a PZ, the EPs and service
// points naming an EVD, the EPs of an SRQ, the EVDs attached to a CNO. A free is refused
// (DAT_INVALID_STATE) while the count is above zero.
//
// A check of the count alone cannot keep that promise when a create and a free of what
// it uses run at once: the free sees no user, the create counts itself after its
// transport call, and the create's transport works on a PZ (or EVD, SRQ, CNO) that the
// free is tearing down. So the count and the free's decision are one word: a free turns
// 0 into kFreeing in one step (begin_free), and a create counts itself before it uses
// the object (take), which fails once the free has begun. Exactly one of the two wins;
// the loser answers as if it came a moment later (DAT_INVALID_HANDLE for the create,
// DAT_INVALID_STATE ... IN_USE for the free).
#pragma once

#include <atomic>
#include <climits>

#include "util/status.hpp"

namespace opendat::util {

class UseCount {
  public:
    // Counts one more user; false once a free of the object has begun.
    [[nodiscard]] bool take() noexcept {
        int n = n_.load(std::memory_order_relaxed);
        do {
            if (n == kFreeing) return false;
        } while (!n_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel,
                                           std::memory_order_relaxed));
        return true;
    }
    // One user fewer (it took its use with take()).
    void drop() noexcept { n_.fetch_sub(1, std::memory_order_release); }

    enum class Free { Begun, InUse, AlreadyFreeing };
    // The free's decision: from here no take() succeeds. AlreadyFreeing: another free of
    // the same object won, so this one answers DAT_INVALID_HANDLE.
    [[nodiscard]] Free begin_free() noexcept {
        int n = 0;
        if (n_.compare_exchange_strong(n, kFreeing, std::memory_order_acq_rel)) return Free::Begun;
        return n == kFreeing ? Free::AlreadyFreeing : Free::InUse;
    }
    // The number of users: a snapshot for limits and tests (0 once a free has begun).
    int count() const noexcept {
        const int n = n_.load(std::memory_order_acquire);
        return n == kFreeing ? 0 : n;
    }

  private:
    static constexpr int kFreeing = INT_MIN;
    std::atomic<int> n_{0};
};

// A free's decision as its answer: DAT_SUCCESS once begun (no use can be taken any more),
// `in_use` while a user is counted, `gone` when another free of the object won.
inline DAT_RETURN begin_free(UseCount &uses, DAT_RETURN in_use, DAT_RETURN gone) noexcept {
    switch (uses.begin_free()) {
        case UseCount::Free::Begun:
            return DAT_SUCCESS;
        case UseCount::Free::InUse:
            return in_use;
        case UseCount::Free::AlreadyFreeing:
            break;
    }
    return gone;
}

// The use count of `obj`, or nullptr for no object.
template <class T>
UseCount *uses_of(T *obj) noexcept {
    return obj != nullptr ? &obj->users : nullptr;
}

// The uses a create (or dat_ep_modify) takes before its transport call: given back when
// it fails, kept (keep()) when it succeeds.
class UseHold {
  public:
    UseHold() = default;
    UseHold(const UseHold &) = delete;
    UseHold &operator=(const UseHold &) = delete;
    ~UseHold() {
        for (int i = 0; i < n_; ++i) taken_[i]->drop();
    }
    // A use of `u` (nullptr: nothing to take); false once a free of its object has begun.
    [[nodiscard]] bool take(UseCount *u) noexcept {
        if (u == nullptr) return true;
        if (!u->take()) return false;
        taken_[n_++] = u;
        return true;
    }
    void keep() noexcept { n_ = 0; }

  private:
    UseCount *taken_[6]{};  // an EP's most: PZ, three EVDs, SRQ
    int n_ = 0;
};

}  // namespace opendat::util

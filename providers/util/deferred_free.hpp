// Deferred freeing: objects the consumer has freed but a thread of the transport may still
// hold (a progress thread between its epoll_wait and its dispatch, a completion queue that
// still names a freed endpoint's slots).
//
// Such objects are parked here and handed on by drain(), which the transport calls when no
// thread of its can hold a parked object any more (the tcp engine at the top of each
// progress iteration): they are deleted once no consumer call that may have checked them
// is in flight either (util/grace.hpp). drain_now() deletes at once, for a transport's
// teardown, which follows grace::synchronize() (the verbs transport, the tcp engine).
// Parking never frees early: when there is no memory to park, the object is leaked (and
// traced), never freed while someone may still look at it.
#pragma once

#include <mutex>
#include <vector>

namespace opendat::util {

// One object to free later: its address and how to free it.
struct Deferred {
    void *obj = nullptr;
    void (*free)(void *) = nullptr;

    void operator()() const noexcept {
        if (obj != nullptr) free(obj);
    }
    // Frees with `delete` as a T (T's destructor must be virtual if `p` is a base).
    template <class T>
    static Deferred of(T *p) noexcept {
        return {p, [](void *q) { delete static_cast<T *>(q); }};
    }
};

class DeferredFree {
  public:
    DeferredFree() = default;
    ~DeferredFree() { drain_now(); }
    DeferredFree(const DeferredFree &) = delete;
    DeferredFree &operator=(const DeferredFree &) = delete;

    void park(Deferred d) noexcept;
    template <class T>
    void park(T *p) noexcept {
        park(Deferred::of(p));
    }
    // Hands everything parked so far to grace::retire, oldest first (an object parked
    // after the one it refers to outlives it). Objects parked while this runs wait for
    // the next drain.
    void drain() noexcept {
        drain([] {});
    }
    // The same, calling before() first when there is anything to free (under the caller's
    // locks): to forget a cached pointer that may name one of the objects about to go.
    template <class F>
    void drain(F before) noexcept {
        std::vector<Deferred> batch = take();
        if (batch.empty()) return;
        before();
        retire_after_grace(std::move(batch));
    }
    // Frees everything parked so far at once, oldest first.
    void drain_now() noexcept {
        for (const Deferred &d : take()) d();
    }

  private:
    std::vector<Deferred> take() noexcept;  // everything parked so far, oldest first
    static void retire_after_grace(std::vector<Deferred> batch) noexcept;  // grace::retire

    std::mutex mu_;
    std::vector<Deferred> parked_;
};

}  // namespace opendat::util

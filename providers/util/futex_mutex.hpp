// FutexMutex: a mutex of one word whose uncontended lock and unlock are inline atomics.
//
// Every post and every polled dequeue takes an endpoint's lock (Ep::mu, util::EpMutex),
// and every poll round of the tcp engine its dispatch lock. std::mutex costs a call into
// pthread_mutex_lock and one into pthread_mutex_unlock, which check the mutex's kind
// before the atomic: a pair took 13 ns where the same atomics inline take 9 (a loop of
// lock/unlock pairs in a threaded process, this machine; docs/benchmarks.md), and a
// polled ping-pong takes about five pairs per message and side. The revocation lock went
// the same way for the same reason (util/revocation_lock.hpp).
//
// The protocol is the classic three-state futex lock: 0 free, 1 held, 2 held and a
// thread may sleep on it. lock() is one compare-exchange when free; a thread that finds it
// held marks it 2 and sleeps in FUTEX_WAIT until an unlock that finds 2 wakes one
// sleeper. Like the std::mutex it replaces: not recursive, not robust, no priority
// inheritance, not fair (a running thread may take it before the one woken). No call
// here is a cancellation point (util/sys_io.hpp says why that matters), and errno is left
// as it was. Process-private (FUTEX_*_PRIVATE): never in memory shared between processes.
// ThreadSanitizer builds tell it about the lock (its mutex annotations, which compile to
// nothing elsewhere): without them it saw only the atomics, so races were still found,
// but its lock-order (potential deadlock) reports and the "mutex held" notes in race
// reports left these locks out.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#define OPENDAT_TSAN_LOCKS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OPENDAT_TSAN_LOCKS 1
#endif
#endif
#ifdef OPENDAT_TSAN_LOCKS
#include <sanitizer/tsan_interface.h>
#endif

namespace opendat::util {

class FutexMutex {
  public:
    FutexMutex() = default;
    FutexMutex(const FutexMutex &) = delete;
    FutexMutex &operator=(const FutexMutex &) = delete;
#ifdef OPENDAT_TSAN_LOCKS
    ~FutexMutex() {
        __tsan_mutex_destroy(this, 0);
    }
#endif

    void lock() noexcept {
        lock_noting_wait([] {}, [] {});
    }
    // lock(), calling before_wait() when the lock is held and this thread is about to
    // wait for it, and after_wait() once it has the lock after waiting (EpMutex counts its
    // waiters so). To ThreadSanitizer this is one blocking lock, whose order it checks;
    // a try_lock() first, then lock(), would be taken for a try-lock when it succeeds,
    // and a try-lock is left out of the lock-order checks.
    template <class Before, class After>
    void lock_noting_wait(Before before_wait, After after_wait) noexcept {
        tsan_pre_lock(0);
        if (!acquire()) {
            tsan_divert([&] { before_wait(); });
            if (!acquire()) lock_slow();
            tsan_divert([&] { after_wait(); });
        }
        tsan_post_lock(0);
    }
    bool try_lock() noexcept {
        tsan_pre_lock(kTsanTry);
        const bool ok = acquire();
        tsan_post_lock(ok ? kTsanTry : kTsanTryFailed);
        return ok;
    }
    void unlock() noexcept {
        tsan_pre_unlock();
        if (word_.exchange(kFree, std::memory_order_release) == kSleepers) wake_one();
        tsan_post_unlock();
    }

  private:
    // The uncontended lock. A held lock is seen without a read-modify-write: pollers that
    // miss it often (the engine's dispatch lock) do not pull its line away from the holder.
    bool acquire() noexcept {
        std::uint32_t free = kFree;
        return word_.load(std::memory_order_relaxed) == kFree &&
               word_.compare_exchange_strong(free, kHeld, std::memory_order_acquire,
                                             std::memory_order_relaxed);
    }

#ifdef OPENDAT_TSAN_LOCKS
    static constexpr unsigned kTsanTry = __tsan_mutex_try_lock;
    static constexpr unsigned kTsanTryFailed = __tsan_mutex_try_lock | __tsan_mutex_try_lock_failed;
    void tsan_pre_lock(unsigned flags) noexcept {
        __tsan_mutex_pre_lock(this, flags);
    }
    void tsan_post_lock(unsigned flags) noexcept {
        __tsan_mutex_post_lock(this, flags, 0);
    }
    void tsan_pre_unlock() noexcept {
        __tsan_mutex_pre_unlock(this, 0);
    }
    void tsan_post_unlock() noexcept {
        __tsan_mutex_post_unlock(this, 0);
    }
    // Code of the caller's run inside a lock's annotated window (the API's "divert").
    template <class F>
    void tsan_divert(F f) noexcept {
        __tsan_mutex_pre_divert(this, 0);
        f();
        __tsan_mutex_post_divert(this, 0);
    }
#else
    static constexpr unsigned kTsanTry = 0;
    static constexpr unsigned kTsanTryFailed = 0;
    static void tsan_pre_lock(unsigned) noexcept {}
    static void tsan_post_lock(unsigned) noexcept {}
    static void tsan_pre_unlock() noexcept {}
    static void tsan_post_unlock() noexcept {}
    template <class F>
    static void tsan_divert(F f) noexcept {
        f();
    }
#endif

    static constexpr std::uint32_t kFree = 0;
    static constexpr std::uint32_t kHeld = 1;
    static constexpr std::uint32_t kSleepers = 2;  // held, and a thread may sleep on it

    [[gnu::cold]] void lock_slow() noexcept;
    [[gnu::cold]] void wake_one() noexcept;

    std::atomic<std::uint32_t> word_{kFree};
};

}  // namespace opendat::util

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
// ThreadSanitizer sees the ordering through the atomics (acquire on lock, release on
// unlock), so races are still found; what it no longer sees is a lock: its lock-order
// (deadlock) reports and the "mutex held" notes in race reports leave these locks out.
#pragma once

#include <atomic>
#include <cstdint>

namespace opendat::util {

class FutexMutex {
  public:
    FutexMutex() = default;
    FutexMutex(const FutexMutex &) = delete;
    FutexMutex &operator=(const FutexMutex &) = delete;

    void lock() noexcept {
        if (!try_lock()) lock_slow();
    }
    bool try_lock() noexcept {
        // A held lock is seen without a read-modify-write: pollers that miss it often
        // (the engine's dispatch lock) do not pull its line away from the holder.
        std::uint32_t free = kFree;
        return word_.load(std::memory_order_relaxed) == kFree &&
               word_.compare_exchange_strong(free, kHeld, std::memory_order_acquire,
                                             std::memory_order_relaxed);
    }
    void unlock() noexcept {
        if (word_.exchange(kFree, std::memory_order_release) == kSleepers) wake_one();
    }

  private:
    static constexpr std::uint32_t kFree = 0;
    static constexpr std::uint32_t kHeld = 1;
    static constexpr std::uint32_t kSleepers = 2;  // held, and a thread may sleep on it

    [[gnu::cold]] void lock_slow() noexcept;
    [[gnu::cold]] void wake_one() noexcept;

    std::atomic<std::uint32_t> word_{kFree};
};

}  // namespace opendat::util

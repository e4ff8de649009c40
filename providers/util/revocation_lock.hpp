// RevocationLock: the lock behind the revocation barrier (util/access_guard.hpp).
//
// Readers are the data path: every post checks its local keys and every chunk of a payload
// moves under a shared hold, so a ping-pong takes four shared holds per message and side.
// Writers are dat_lmr_create/free and RMR binds, rare and allowed to be slow. So a shared
// hold is one atomic add and one atomic subtract on one word, inline, where
// std::shared_mutex costs two calls into pthread_rwlock (measured on the polled ping-pong:
// about 25 ns a hold, on a path of about 700 ns).
//
// The same policy as glibc's default rwlock, which it replaces: readers are preferred. A
// writer gets in only when no reader holds the lock and keeps new readers out while inside,
// so a thread may take a shared hold while it already holds one (a writer cannot be
// waiting in between). Writers wait by yielding; a hold lasts one bounded copy or
// non-blocking system call.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

namespace opendat::util {

class RevocationLock {
  public:
    void lock_shared() noexcept {
        for (;;) {
            if (!(state_.fetch_add(kReader, std::memory_order_acquire) & kWriter)) return;
            // A writer is inside: step back until it leaves.
            state_.fetch_sub(kReader, std::memory_order_relaxed);
            while (state_.load(std::memory_order_relaxed) & kWriter) std::this_thread::yield();
        }
    }
    void unlock_shared() noexcept { state_.fetch_sub(kReader, std::memory_order_release); }

    void lock() noexcept {
        writers_.lock();
        for (std::uint32_t idle = 0; !state_.compare_exchange_weak(
                 idle, kWriter, std::memory_order_acquire, std::memory_order_relaxed);
             idle = 0)
            std::this_thread::yield();
    }
    void unlock() noexcept {
        // Not a store of 0: readers stepping back may have their count in the word.
        state_.fetch_sub(kWriter, std::memory_order_release);
        writers_.unlock();
    }

  private:
    static constexpr std::uint32_t kWriter = 1;
    static constexpr std::uint32_t kReader = 2;
    // kWriter while a writer is inside; kReader times the readers inside (or stepping back).
    std::atomic<std::uint32_t> state_{0};
    std::mutex writers_;  // one writer at a time
};

}  // namespace opendat::util

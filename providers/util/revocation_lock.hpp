// RevocationLock: the lock behind the revocation barrier (util/access_guard.hpp).
//
// Readers are the data path: every post checks its local keys and every chunk of a payload
// moves under a shared hold, so a ping-pong takes four shared holds per message and side.
// Writers are dat_lmr_create/free and RMR binds, rare and allowed to be slow. So a shared
// hold is one atomic add and one atomic subtract on one word, inline, where
// std::shared_mutex costs two calls into pthread_rwlock (measured on the polled ping-pong:
// about 25 ns a hold, on a path of about 700 ns).
//
// Writers are preferred: a writer announces itself at once, new readers step back until it
// is done, and it goes in when the readers already inside have left. A busy data path
// (holds around every payload system call, on several threads) therefore cannot keep
// dat_lmr_free waiting: a writer that had to find the count at zero by chance could wait
// without bound. The price: shared holds must not nest (a second hold on a thread that
// already holds one would wait for a writer that waits for the first). None do: every
// hold is one leaf scope around a check and a copy or a non-blocking system call.
// Writers wait by yielding; a hold lasts one bounded copy or system call.
//
// Debug builds (OPENDAT_DEBUG_CHECKS; the asan, ubsan and tsan presets run every test that
// way) enforce the rule: a thread that takes any RevocationLock, shared or exclusive, while
// it has a shared hold on one aborts at once with a message. Otherwise a nested hold passes
// every test and deadlocks only when a writer happens to come in between. (Counted per
// thread over all locks: stricter than needed, and no code holds two IAs' tables at once.)
// The same count enforces the barrier's other rule (util/access_guard.hpp): no hold across
// posting an event, whose CNO agent or waiter may free the memory (assert_not_held).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#ifdef OPENDAT_DEBUG_CHECKS
#include <cstdio>
#include <cstdlib>
#endif

namespace opendat::util {

class RevocationLock {
  public:
    void lock_shared() noexcept {
        not_nested("a shared hold taken");
        count_shared(+1);
        for (;;) {
            if (!(state_.fetch_add(kReader, std::memory_order_acquire) & kWriter)) return;
            // A writer is waiting or inside: step back until it leaves.
            state_.fetch_sub(kReader, std::memory_order_relaxed);
            while (state_.load(std::memory_order_relaxed) & kWriter) std::this_thread::yield();
        }
    }
    void unlock_shared() noexcept {
        state_.fetch_sub(kReader, std::memory_order_release);
        count_shared(-1);
    }

    // Debug builds: aborts when this thread has a shared hold, naming `what` it was about
    // to do that must not happen under one.
    static void assert_not_held(const char *what) noexcept {
        fail_if_held(what,
                     "no hold across a call that may reach the application "
                     "(util/access_guard.hpp)");
    }

    void lock() noexcept {
        not_nested("the exclusive lock taken");
        writers_.lock();
        // From here on readers step back; wait for those inside (and those stepping back)
        // to leave. Every change to the word is a read-modify-write, so this acquire load
        // sees each departing reader's release.
        state_.fetch_or(kWriter, std::memory_order_acquire);
        while (state_.load(std::memory_order_acquire) != kWriter) std::this_thread::yield();
    }
    void unlock() noexcept {
        // Not a store of 0: readers stepping back may have their count in the word.
        state_.fetch_sub(kWriter, std::memory_order_release);
        writers_.unlock();
    }

  private:
#ifdef OPENDAT_DEBUG_CHECKS
    // This thread's shared holds, any lock. Initial-exec: in the static TLS block even in a
    // dlopen'ed provider (a few bytes of glibc's reserve), because LeakSanitizer's exit
    // scan crashes on a dynamic TLS block left by a provider that was unloaded.
    __attribute__((tls_model("initial-exec"))) static inline thread_local int shared_held_ = 0;
    static void count_shared(int delta) noexcept {
        shared_held_ += delta;
    }
    static void fail_if_held(const char *what, const char *rule) noexcept {
        if (shared_held_ == 0) return;
        std::fprintf(stderr,
                     "opendat: RevocationLock: %s while this thread has a shared hold: %s\n", what,
                     rule);
        std::abort();
    }
#else
    static void count_shared(int) noexcept {}
    static void fail_if_held(const char *, const char *) noexcept {}
#endif
    static void not_nested(const char *what) noexcept {
        fail_if_held(what, "holds must not nest (util/revocation_lock.hpp)");
    }
    static constexpr std::uint32_t kWriter = 1;
    static constexpr std::uint32_t kReader = 2;
    // kWriter while a writer waits or is inside; kReader times the readers inside (or
    // stepping back).
    std::atomic<std::uint32_t> state_{0};
    std::mutex writers_;  // one writer at a time
};

}  // namespace opendat::util

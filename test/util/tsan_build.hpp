// Whether this test is compiled for ThreadSanitizer, found out here on its own: the lock
// annotation tests must exist in every TSan build even if the library's own detection
// (util/futex_mutex.hpp, OPENDAT_TSAN_LOCKS) broke, so that they fail rather than vanish.
// And what those tests do with a lock.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define OPENDAT_TEST_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OPENDAT_TEST_TSAN_BUILD 1
#endif
#endif

#ifdef OPENDAT_TEST_TSAN_BUILD
#include <cstdlib>
#include <mutex>

// Takes two locks of type Lock in one order, then in the other, never contended, and
// exits: a potential deadlock that TSan reports if it sees Lock's lock() as a lock.
template <class Lock>
void take_two_locks_in_both_orders() {
    Lock first;
    Lock second;
    {
        std::lock_guard a(first);
        std::lock_guard b(second);
    }
    {
        std::lock_guard b(second);
        std::lock_guard a(first);
    }
    std::exit(0);  // TSan's exit code is not 0 once it reported
}
#endif

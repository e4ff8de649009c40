// Checks that a pending or arriving thread cancellation does not act inside DAT calls
// (providers/util/no_cancel.hpp says why it must not): a body runs its calls on a new
// thread with a cancel pending or sent, and must get through them and be cancelled after.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__)
#define OPENDAT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OPENDAT_TEST_ASAN 1
#endif
#endif

namespace opendat_test {

// Runs body(arg) on a new thread that a cancel reaches while it is inside DAT calls (the
// body cancels itself, or the caller does after `then`), and checks that the thread got
// through its calls (`returned`) and was cancelled after them, at stop_here().
// A cancel that acts inside the library ends in std::terminate or leaves the thread stuck
// in it: the process then ends at once rather than at the test's timeout.
template <class Then>
void expect_cancelled_after_the_calls(void *(*body)(void *), void *arg,
                                      const std::atomic<bool> &returned, Then then,
                                      const char *what) {
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, nullptr, body, arg), 0);
    then(t);
    timespec until{};
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    void *result = nullptr;
    if (pthread_timedjoin_np(t, &result, &until) != 0) {
        std::fprintf(stderr, "the thread did not end within 20 s: stuck inside %s\n", what);
        std::_Exit(1);
    }
    EXPECT_EQ(result, PTHREAD_CANCELED);
    EXPECT_TRUE(returned) << "the cancel acted inside " << what;
}

inline void nothing(pthread_t) {}

// Where the pending cancel acts: outside DAT, after the calls. AddressSanitizer's runtime
// (GCC 12's) faults while it tears down a thread that a cancel ended (its sigaltstack
// interceptor, from AsanThread::Destroy, after the unwind left the stack's shadow
// poisoned), so ASan builds take the cancel off instead and the body returns as if it had
// acted (no unwinding): the calls getting through is what the cases check there.
inline void *stop_here() {
#ifdef OPENDAT_TEST_ASAN
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, nullptr);
#else
    pthread_testcancel();
#endif
    return PTHREAD_CANCELED;
}

}  // namespace opendat_test

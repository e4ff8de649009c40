// util::FutexMutex: mutual exclusion, try_lock, and a sleeping thread woken by the unlock.
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tsan_build.hpp"
#include "util/futex_mutex.hpp"

using opendat::util::FutexMutex;
using namespace std::chrono_literals;

TEST(FutexMutex, TryLockFailsWhileHeldAndSucceedsOnceFree) {
    FutexMutex m;
    ASSERT_TRUE(m.try_lock());
    EXPECT_FALSE(m.try_lock());
    bool other = true;
    std::thread([&] { other = m.try_lock(); }).join();
    EXPECT_FALSE(other);
    m.unlock();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

// A thread that finds the lock held sleeps in the kernel: it used well under the 200 ms
// the lock was held of its CPU (a waiter that spun, or waited on the wrong value and went
// round again at once, would use nearly all of it). The unlock wakes it.
TEST(FutexMutex, AThreadThatWaitsSleepsAndIsWokenByTheUnlock) {
    FutexMutex m;
    m.lock();
    std::atomic<bool> got{false};
    std::thread waiter([&] {
        std::lock_guard lk(m);
        got = true;
    });
    clockid_t cpu;
    ASSERT_EQ(pthread_getcpuclockid(waiter.native_handle(), &cpu), 0);
    std::this_thread::sleep_for(200ms);
    timespec used{};
    ASSERT_EQ(clock_gettime(cpu, &used), 0);
    EXPECT_FALSE(got.load());
    EXPECT_LT(used.tv_sec * 1000 + used.tv_nsec / 1000000, 50) << "the waiter spun";
    m.unlock();
    waiter.join();
    EXPECT_TRUE(got.load());
    EXPECT_TRUE(m.try_lock());  // left free by the waiter's unlock
    m.unlock();
}

// Threads that take it back to back, some sleeping in it: every increment of an
// unprotected counter is kept (ThreadSanitizer also checks the ordering here), and nobody
// is left asleep (the joins return).
TEST(FutexMutex, ExcludesUnderContentionAndLosesNoWakeUp) {
    FutexMutex m;
    constexpr int kThreads = 4;
    constexpr int kRounds = 20000;
    long counter = 0;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRounds; ++i) {
                if (t == 0 && i % 64 == 0) {
                    // Hold it for a while now and then, so that the others go to sleep.
                    std::lock_guard lk(m);
                    ++counter;
                    std::this_thread::sleep_for(10us);
                    continue;
                }
                std::lock_guard lk(m);
                ++counter;
            }
        });
    for (std::thread &t : threads) t.join();
    EXPECT_EQ(counter, static_cast<long>(kThreads) * kRounds);
}

// A sleeper interrupted by a signal (FUTEX_WAIT fails with EINTR) goes back to sleep
// without the lock, and taking the lock leaves errno as it was.
TEST(FutexMutex, ASignalDoesNotGiveTheLockAndErrnoIsLeftAsItWas) {
    struct sigaction quiet {
    }, old{};
    quiet.sa_handler = [](int) {};
    sigemptyset(&quiet.sa_mask);
    quiet.sa_flags = 0;  // no SA_RESTART: the futex wait returns EINTR
    ASSERT_EQ(sigaction(SIGUSR1, &quiet, &old), 0);
    FutexMutex m;
    m.lock();
    std::atomic<bool> got{false};
    std::atomic<int> seen{-1};
    std::thread waiter([&] {
        errno = 12345;
        m.lock();
        seen = errno;
        got = true;
        m.unlock();
    });
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(pthread_kill(waiter.native_handle(), SIGUSR1), 0);
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(got.load()) << "the signal gave the waiter a held lock";
    errno = 54321;
    m.unlock();  // wakes the waiter: a futex call on this side too
    EXPECT_EQ(errno, 54321);
    waiter.join();
    EXPECT_TRUE(got.load());
    EXPECT_EQ(seen.load(), 12345);
    sigaction(SIGUSR1, &old, nullptr);
}

// ThreadSanitizer builds annotate the lock (futex_mutex.hpp): TSan then checks its lock
// order as it does a std::mutex's. Two locks taken in both orders are a potential
// deadlock, which it reports; without the annotations it saw only atomics, and said
// nothing. Only in ThreadSanitizer builds (the tsan preset): elsewhere the annotations
// are empty and there is nothing to check.
#ifdef OPENDAT_TEST_TSAN_BUILD
TEST(FutexMutexDeathTest, ThreadSanitizerReportsTwoLocksTakenInBothOrders) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(take_two_locks_in_both_orders<FutexMutex>(), "lock-order-inversion");
}
#endif

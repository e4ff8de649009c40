// util::FutexMutex: mutual exclusion, try_lock, and a sleeping thread woken by the unlock.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

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

// A thread that finds the lock held sleeps in the kernel (it does not spin: the holder
// sleeps far longer than a spin would last), and the unlock wakes it.
TEST(FutexMutex, AThreadThatWaitsIsWokenByTheUnlock) {
    FutexMutex m;
    m.lock();
    std::atomic<bool> got{false};
    std::thread waiter([&] {
        std::lock_guard lk(m);
        got = true;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(got.load());
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

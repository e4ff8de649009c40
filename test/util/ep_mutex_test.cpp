// util::EpMutex and util::EpTurns: a thread waiting for an endpoint's lock is seen, and
// the transport's rounds leave the endpoint to it for one turn, no longer.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "tsan_build.hpp"
#include "util/ep_mutex.hpp"

using opendat::util::EpMutex;
using opendat::util::EpTurns;
using namespace std::chrono_literals;

namespace {

// Holds `m` on the calling thread until release(), while `waiter` blocks in lock().
struct HeldWithWaiter {
    EpMutex &m;
    std::atomic<bool> got{false};
    std::thread waiter;
    explicit HeldWithWaiter(EpMutex &mu) : m(mu) {
        m.lock();  // uncontended: this thread holds it
        waiter = std::thread([this] {
            std::lock_guard lk(m);
            got = true;
        });
        while (!m.waited_for()) std::this_thread::yield();
    }
    void release() {
        m.unlock();
        waiter.join();
    }
};

}  // namespace

TEST(EpMutex, AWaitingThreadIsSeenAndCountedOnceItHasTheLock) {
    EpMutex m;
    EXPECT_FALSE(m.waited_for());
    const unsigned before = m.handovers();
    {
        std::lock_guard lk(m);  // uncontended: no wait, no handover
    }
    EXPECT_EQ(m.handovers(), before);
    HeldWithWaiter h(m);
    EXPECT_TRUE(m.waited_for());
    EXPECT_FALSE(h.got.load());
    h.release();
    EXPECT_TRUE(h.got.load());
    EXPECT_FALSE(m.waited_for());
    EXPECT_EQ(m.handovers(), before + 1);
}

TEST(EpTurns, NoWaiterNoTurn) {
    EpMutex m;
    EpTurns t;
    EXPECT_FALSE(t.yield(m));
    EXPECT_FALSE(t.yield(m));
}

// With a real lock and a real waiter (the timing of a turn: the decide() cases below).
TEST(EpTurns, AWaiterGetsATurnThenTheRoundsGoOn) {
    EpMutex m;
    EpTurns t;
    HeldWithWaiter h(m);
    EXPECT_TRUE(t.yield(m));  // a turn begins, whatever the time
    h.release();              // the waiter had the lock, and nobody waits now
    EXPECT_FALSE(t.yield(m));
    EXPECT_FALSE(t.yield(m));
}

// yield() hands decide() what the lock says when it finds a waiter: the count of
// hand-overs and the time, here given by the case.
TEST(EpTurns, OneTurnPerWaiterNotAsLongAsAnyoneWaits) {
    EpTurns t;
    const EpTurns::Clock::time_point t0{};
    EXPECT_TRUE(t.decide(7, t0));         // a waiter: its turn begins
    EXPECT_TRUE(t.decide(7, t0 + 50us));  // not had the lock yet
    // One waiter had the lock; another waits already: the round that sees the handover
    // takes its own turn first, the next one starts the other waiter's.
    EXPECT_FALSE(t.decide(8, t0 + 60us));
    EXPECT_TRUE(t.decide(8, t0 + 70us));
    EXPECT_TRUE(t.decide(8, t0 + 70us + EpTurns::kMax - 1us));
    // A waiter that is not scheduled within kMax: the rounds go on (it waits a turn).
    EXPECT_FALSE(t.decide(8, t0 + 70us + EpTurns::kMax));
    EXPECT_TRUE(t.decide(8, t0 + 70us + EpTurns::kMax + 1us));  // the next turn
}

// When a round begins a turn, the progress thread owes the waiter its CPU
// (TcpEp::leave_to_waiter, Engine::owe_yield): turn_began() says so once per turn, not for
// every round of it.
TEST(EpTurns, ATurnSaysOnceThatItBegan) {
    EpTurns t;
    const EpTurns::Clock::time_point t0{};
    EXPECT_FALSE(t.turn_began());
    EXPECT_TRUE(t.decide(1, t0));
    EXPECT_TRUE(t.turn_began());
    EXPECT_FALSE(t.turn_began());
    EXPECT_TRUE(t.decide(1, t0 + 10us));  // the same turn
    EXPECT_FALSE(t.turn_began());
    EXPECT_FALSE(t.decide(2, t0 + 20us));  // the waiter had the lock: ours
    EXPECT_FALSE(t.turn_began());
    EXPECT_TRUE(t.decide(2, t0 + 30us));  // the next waiter's turn
    EXPECT_TRUE(t.turn_began());
}

// An endpoint's lock is a blocking lock to ThreadSanitizer when lock() finds it free, too
// (FutexMutex::lock_noting_wait): taken in both orders with another lock, uncontended, it
// is a potential deadlock that TSan reports. Before, lock() began with a try_lock, which
// TSan leaves out of its lock-order checks, so only a contended lock() counted.
#ifdef OPENDAT_TEST_TSAN_BUILD
TEST(EpMutexDeathTest, ThreadSanitizerReportsEndpointLocksTakenInBothOrders) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(take_two_locks_in_both_orders<EpMutex>(), "lock-order-inversion");
}
#endif

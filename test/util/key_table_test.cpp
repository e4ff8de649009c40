// The memory-key table's parts: KeyMap (flat open addressing, erase by backward shift)
// against std::unordered_map as the model, and RevocationLock's promises (a writer waits
// for every shared hold; a waiting writer goes before new readers, so it is not starved).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "util/key_map.hpp"
#include "util/revocation_lock.hpp"

using namespace opendat::util;
using namespace std::chrono_literals;

namespace {

MemRange range_for(std::uint32_t key) {
    MemRange r;
    r.addr = std::uint64_t{key} << 12;
    r.len = key % 4096 + 1;
    return r;
}

// Every key of the model is found with its range; `absent` keys are not.
void expect_matches(const KeyMap &m, const std::unordered_map<std::uint32_t, MemRange> &model,
                    const std::vector<std::uint32_t> &absent) {
    ASSERT_EQ(m.size(), model.size());
    for (const auto &[k, r] : model) {
        const MemRange *got = m.find(k);
        ASSERT_NE(got, nullptr) << "key " << k << " lost";
        EXPECT_EQ(got->addr, r.addr);
        EXPECT_EQ(got->len, r.len);
    }
    for (std::uint32_t k : absent) EXPECT_EQ(m.find(k), nullptr) << "key " << k;
}

}  // namespace

TEST(UtilKeyMap, EmptyAndZero) {
    KeyMap m;
    EXPECT_EQ(m.find(0), nullptr);
    EXPECT_EQ(m.find(12345), nullptr);
    m.erase(12345);  // nothing to erase: no effect
    ASSERT_TRUE(m.insert(7, range_for(7)));
    EXPECT_EQ(m.find(0), nullptr) << "0 marks a free slot and is never a key";
    EXPECT_TRUE(m.contains(7));
    m.erase(7);
    EXPECT_FALSE(m.contains(7));
    EXPECT_EQ(m.size(), 0u);
}

// Keys that share a home slot form one probe run; erasing any of them must leave the others
// reachable (the backward shift), including runs that wrap around the table's end.
TEST(UtilKeyMap, EraseInsideCollidingRuns) {
    // Find keys by their home in a 64-slot table (the first capacity): the hash is the top
    // 6 bits of key * 0x9E3779B97F4A7C15.
    auto home = [](std::uint32_t k) { return (k * 0x9E3779B97F4A7C15ull) >> 58; };
    std::vector<std::uint32_t> at63, at0;
    for (std::uint32_t k = 1; at63.size() < 4 || at0.size() < 3; ++k) {
        if (home(k) == 63 && at63.size() < 4) at63.push_back(k);
        if (home(k) == 0 && at0.size() < 3) at0.push_back(k);
    }
    for (std::size_t victim = 0; victim < at63.size() + at0.size(); ++victim) {
        KeyMap m;
        std::unordered_map<std::uint32_t, MemRange> model;
        // Slot 63 holds at63[0]; the rest of its run wraps to slots 0, 1, 2; then the keys
        // whose home is 0 queue behind them.
        for (auto k : at63) ASSERT_TRUE(m.insert(k, model[k] = range_for(k)));
        for (auto k : at0) ASSERT_TRUE(m.insert(k, model[k] = range_for(k)));
        std::uint32_t gone = victim < at63.size() ? at63[victim] : at0[victim - at63.size()];
        m.erase(gone);
        model.erase(gone);
        expect_matches(m, model, {gone});
    }
}

// Random inserts and erases through several growths, checked against the model.
TEST(UtilKeyMap, MatchesAModelUnderChurn) {
    std::mt19937 rng(20261125);
    KeyMap m;
    std::unordered_map<std::uint32_t, MemRange> model;
    std::vector<std::uint32_t> keys, erased;
    for (int op = 0; op < 200000; ++op) {
        const bool add = keys.empty() || rng() % 100 < (keys.size() < 5000 ? 60 : 40);
        if (add) {
            std::uint32_t k = rng();
            if (k == 0 || model.count(k) != 0) continue;
            ASSERT_TRUE(m.insert(k, range_for(k)));
            model[k] = range_for(k);
            keys.push_back(k);
        } else {
            std::size_t i = rng() % keys.size();
            std::uint32_t k = keys[i];
            keys[i] = keys.back();
            keys.pop_back();
            m.erase(k);
            model.erase(k);
            if (erased.size() < 1000) erased.push_back(k);
        }
        if (op % 20000 == 0) expect_matches(m, model, {});
    }
    std::vector<std::uint32_t> absent;
    for (std::uint32_t k : erased)
        if (model.count(k) == 0) absent.push_back(k);
    expect_matches(m, model, absent);
    for (std::uint32_t k : keys) m.erase(k);
    EXPECT_EQ(m.size(), 0u);
    for (std::uint32_t k : keys) EXPECT_EQ(m.find(k), nullptr);
}

TEST(UtilRevocationLock, WriterWaitsForEverySharedHold) {
    RevocationLock lk;
    lk.lock_shared();
    // A second reader, on its own thread (holds must not nest on one thread).
    std::atomic<bool> second_in{false}, second_leave{false};
    std::thread second([&] {
        lk.lock_shared();
        second_in = true;
        while (!second_leave.load()) std::this_thread::sleep_for(1ms);
        lk.unlock_shared();
    });
    while (!second_in.load()) std::this_thread::sleep_for(1ms);
    std::atomic<bool> in{false};
    std::thread writer([&] {
        std::unique_lock w(lk);
        in = true;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(in.load()) << "the writer got in past two shared holds";
    lk.unlock_shared();
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(in.load()) << "the writer got in past one shared hold";
    second_leave = true;
    second.join();
    writer.join();
    EXPECT_TRUE(in.load());
}

#ifdef OPENDAT_DEBUG_CHECKS
// The rule the writer preference costs (util/revocation_lock.hpp): a second hold on a
// thread that has a shared one would deadlock as soon as a writer waits between the two.
// Debug builds (OPENDAT_DEBUG_CHECKS) stop it at once, with the reason, whether or not a
// writer is around; and an event posted under a hold (its CNO agent may free the memory).
TEST(UtilRevocationLockDeathTest, BrokenHoldRulesAbortInDebugBuilds) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            RevocationLock lk;
            lk.lock_shared();
            lk.lock_shared();
        },
        "a shared hold taken while this thread has a shared hold: holds must not nest");
    EXPECT_DEATH(
        {
            RevocationLock lk;
            lk.lock_shared();
            RevocationLock::assert_not_held("an event posted");
        },
        "an event posted while this thread has a shared hold: no hold across a call that may "
        "reach the application");
    EXPECT_DEATH(
        {
            RevocationLock a;
            RevocationLock b;  // another IA's table counts too
            a.lock_shared();
            b.lock();
        },
        "the exclusive lock taken while this thread has a shared hold");
    // After the hold ends, both are fine again.
    RevocationLock lk;
    lk.lock_shared();
    lk.unlock_shared();
    lk.lock_shared();
    lk.unlock_shared();
    lk.lock();
    lk.unlock();
    RevocationLock::assert_not_held("an event posted");
}
#endif

// Writers are preferred: once a writer waits, a new shared hold waits for it to finish,
// so readers that keep overlapping cannot starve it.
TEST(UtilRevocationLock, AWaitingWriterGoesBeforeNewReaders) {
    RevocationLock lk;
    lk.lock_shared();
    std::atomic<int> order{0}, writer_at{0}, reader_at{0};
    std::thread writer([&] {
        std::unique_lock w(lk);
        writer_at = ++order;
    });
    // Until the writer has announced itself (it cannot get in past our hold).
    std::this_thread::sleep_for(50ms);
    std::thread reader([&] {
        std::shared_lock r(lk);
        reader_at = ++order;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(order.load(), 0) << "someone got in past the first shared hold";
    lk.unlock_shared();
    writer.join();
    reader.join();
    EXPECT_EQ(writer_at.load(), 1) << "the waiting writer went first";
    EXPECT_EQ(reader_at.load(), 2);
}

// Two threads whose shared holds overlap all the time (the count is almost never zero):
// a writer still gets in, every time, promptly.
TEST(UtilRevocationLock, OverlappingReadersDoNotStarveAWriter) {
    RevocationLock lk;
    std::atomic<bool> stop{false};
    auto busy_reader = [&] {
        while (!stop.load(std::memory_order_relaxed)) {
            std::shared_lock r(lk);
            std::atomic<int> spin{0};  // a little work inside each hold
            while (spin.fetch_add(1, std::memory_order_relaxed) < 200) {
            }
        }
    };
    std::thread r1(busy_reader), r2(busy_reader);
    std::this_thread::sleep_for(10ms);
    auto slowest = std::chrono::steady_clock::duration::zero();
    for (int i = 0; i < 200; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        { std::unique_lock w(lk); }
        slowest = std::max(slowest, std::chrono::steady_clock::now() - t0);
    }
    stop = true;
    r1.join();
    r2.join();
    // Generous: a loaded 2-CPU machine (or TSan) may deschedule us for a while.
    EXPECT_LT(slowest, 2s) << "a writer waited " << std::chrono::duration<double>(slowest).count()
                           << " s";
}

// Readers never see a writer's update half done, and every update lands (a broken lock
// shows as a torn pair here, and as a data race under TSan).
TEST(UtilRevocationLock, ExclusiveAgainstReaders) {
    RevocationLock lk;
    std::uint64_t a = 0, b = 0;  // guarded by lk: a == b outside a writer
    std::atomic<bool> stop{false};
    std::atomic<long> torn{0}, reads{0};
    auto reader = [&] {
        while (!stop.load(std::memory_order_relaxed)) {
            std::shared_lock r(lk);
            if (a != b) torn.fetch_add(1);
            reads.fetch_add(1, std::memory_order_relaxed);
        }
    };
    std::thread r1(reader), r2(reader);
    // At least kWrites updates, and on until the readers have looked often (on a loaded
    // machine they may not run at all during the first writes).
    constexpr std::uint64_t kWrites = 2000;
    std::uint64_t writes = 0;
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (writes < kWrites ||
           (reads.load() < 10000 && std::chrono::steady_clock::now() < give_up)) {
        {
            std::unique_lock w(lk);
            ++a;
            ++b;
        }
        ++writes;
        if (writes % 64 == 0) std::this_thread::yield();
    }
    stop = true;
    r1.join();
    r2.join();
    EXPECT_EQ(torn.load(), 0);
    EXPECT_GE(reads.load(), 10000);
    std::shared_lock r(lk);
    EXPECT_EQ(a, writes);
    EXPECT_EQ(b, writes);
}

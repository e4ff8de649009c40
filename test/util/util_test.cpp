// Unit tests of providers/util, linked directly (no libdat2, no sockets): the access
// check, the EVD ring and its wait/timeout semantics, the DAT_PROVIDER table builder.
#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "util/access_guard.hpp"
#include "util/evd.hpp"
#include "util/memory.hpp"
#include "util/objects.hpp"
#include "util/provider_table.hpp"

using namespace opendat::util;

namespace {
// What provider_init registered: the test stands in for the hosting registry.
const DAT_PROVIDER *g_registered = nullptr;
DAT_PROVIDER_INFO g_info{};
}  // namespace

extern "C" DAT_RETURN dat_registry_add_provider(const DAT_PROVIDER *p,
                                                const DAT_PROVIDER_INFO *info) {
    g_registered = p;
    g_info = *info;
    return DAT_SUCCESS;
}
extern "C" DAT_RETURN dat_registry_remove_provider(const DAT_PROVIDER *p,
                                                   const DAT_PROVIDER_INFO *) {
    if (p == g_registered) g_registered = nullptr;
    return DAT_SUCCESS;
}

TEST(UtilMemTable, BoundsPrivilegesAndPz) {
    MemTable t;
    Pz *pz = reinterpret_cast<Pz *>(0x1000), *other = reinterpret_cast<Pz *>(0x2000);
    std::uint32_t key = 0, rkey = 0;
    MemRange r{0x10000, 0x1000, DAT_MEM_PRIV_ALL_FLAG, pz};
    ASSERT_EQ(t.add(KeyKind::Lmr, r, &key), DAT_SUCCESS);
    MemRange ro{0x10000, 0x1000, DAT_MEM_PRIV_REMOTE_READ_FLAG, pz};
    ASSERT_EQ(t.add(KeyKind::Rmr, ro, &rkey), DAT_SUCCESS);
    EXPECT_NE(key, rkey);
    EXPECT_NE(key, 0u);
    auto ok = DAT_DTO_SUCCESS;
    EXPECT_EQ(t.check(KeyKind::Lmr, key, pz, 0x10000, 0x1000, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), ok);
    EXPECT_EQ(t.check(KeyKind::Lmr, key, pz, 0x10fff, 1, DAT_MEM_PRIV_NONE_FLAG), ok);
    EXPECT_EQ(t.check(KeyKind::Lmr, key, pz, 0x10fff, 2, DAT_MEM_PRIV_NONE_FLAG),
              DAT_DTO_ERR_LOCAL_PROTECTION);
    EXPECT_EQ(t.check(KeyKind::Lmr, key, pz, 0xffff, 1, DAT_MEM_PRIV_NONE_FLAG),
              DAT_DTO_ERR_LOCAL_PROTECTION);
    EXPECT_EQ(t.check(KeyKind::Lmr, key, pz, 0x10000, ~std::uint64_t{0}, DAT_MEM_PRIV_NONE_FLAG),
              DAT_DTO_ERR_LOCAL_PROTECTION);  // no wrap-around
    EXPECT_EQ(t.check(KeyKind::Lmr, key, other, 0x10000, 1, DAT_MEM_PRIV_NONE_FLAG),
              DAT_DTO_ERR_LOCAL_PROTECTION);
    EXPECT_EQ(t.check(KeyKind::Rmr, rkey, pz, 0x10000, 16, DAT_MEM_PRIV_REMOTE_READ_FLAG), ok);
    EXPECT_EQ(t.check(KeyKind::Rmr, rkey, pz, 0x10000, 16, DAT_MEM_PRIV_REMOTE_WRITE_FLAG),
              DAT_DTO_ERR_REMOTE_ACCESS);
    EXPECT_EQ(t.check(KeyKind::Rmr, key, pz, 0x10000, 16, DAT_MEM_PRIV_NONE_FLAG),
              DAT_DTO_ERR_REMOTE_ACCESS)
        << "an lmr_context is not an rmr_context";
    t.remove(KeyKind::Rmr, rkey);
    EXPECT_EQ(t.check(KeyKind::Rmr, rkey, pz, 0x10000, 16, DAT_MEM_PRIV_REMOTE_READ_FLAG),
              DAT_DTO_ERR_REMOTE_ACCESS);
}

// A check under the revocation hold through its cache of the last IOV it passed
// (LocalCheckCache) answers as the full check does: a freed LMR fails at once (its removal
// moves the table's generation), as does a key added and removed anywhere in between,
// another PZ, a privilege the LMR lacks (though the cache was filled by a check that
// needed none), and a segment outside the region. A multi-segment IOV goes to the full
// check.
TEST(UtilMemTable, TheCheckCacheAnswersAsTheTableDoes) {
    MemTable t;
    Pz *pz = reinterpret_cast<Pz *>(0x1000), *other = reinterpret_cast<Pz *>(0x2000);
    std::uint32_t key = 0;
    ASSERT_EQ(t.add(KeyKind::Lmr,
                    MemRange{0x10000, 0x1000,
                             static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_READ_FLAG), pz},
                    &key),
              DAT_SUCCESS);
    LocalCheckCache cache;
    const auto ok = DAT_DTO_SUCCESS, bad = DAT_DTO_ERR_LOCAL_PROTECTION;
    DAT_LMR_TRIPLET s{0x10000, 64, key};
    auto check_n = [&](const DAT_LMR_TRIPLET *segs, std::uint32_t n, const Pz *in,
                       DAT_MEM_PRIV_FLAGS need) {
        AccessHold hold(t);
        return hold.local(segs, n, in, need, &cache);
    };
    auto check = [&](const DAT_LMR_TRIPLET &seg, const Pz *in, DAT_MEM_PRIV_FLAGS need) {
        return check_n(&seg, 1, in, need);
    };
    EXPECT_EQ(check(s, pz, DAT_MEM_PRIV_NONE_FLAG), ok);  // fills the cache
    EXPECT_EQ(cache.key, key);
    EXPECT_EQ(check(s, pz, DAT_MEM_PRIV_NONE_FLAG), ok);  // answered by it
    EXPECT_EQ(check(s, other, DAT_MEM_PRIV_NONE_FLAG), bad);
    EXPECT_EQ(check(s, pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), bad) << "a read-only LMR";
    DAT_LMR_TRIPLET last{0x10fc0, 64, key}, past{0x10fc1, 64, key}, before{0xfff0, 64, key};
    EXPECT_EQ(check(last, pz, DAT_MEM_PRIV_NONE_FLAG), ok);
    EXPECT_EQ(check(past, pz, DAT_MEM_PRIV_NONE_FLAG), bad);
    EXPECT_EQ(check(before, pz, DAT_MEM_PRIV_NONE_FLAG), bad);
    DAT_LMR_TRIPLET huge{0xffffffffffff0000, 0x20000, key};
    EXPECT_EQ(check(huge, pz, DAT_MEM_PRIV_NONE_FLAG), bad) << "no wrap-around";
    // Another key comes and goes: the cache is filled again, and still right.
    std::uint32_t k2 = 0;
    ASSERT_EQ(t.add(KeyKind::Lmr, MemRange{0x20000, 0x100, DAT_MEM_PRIV_ALL_FLAG, pz}, &k2),
              DAT_SUCCESS);
    t.remove(KeyKind::Lmr, k2);
    EXPECT_EQ(check(s, pz, DAT_MEM_PRIV_NONE_FLAG), ok);
    DAT_LMR_TRIPLET gone{0x20000, 16, k2};
    EXPECT_EQ(check(gone, pz, DAT_MEM_PRIV_NONE_FLAG), bad);
    // Two segments, one of them outside: the full check, which refuses.
    DAT_LMR_TRIPLET two[2] = {s, past};
    EXPECT_EQ(check_n(two, 2, pz, DAT_MEM_PRIV_NONE_FLAG), bad);
    // The LMR is freed: the very IOV the cache passed a moment ago fails.
    EXPECT_EQ(check(s, pz, DAT_MEM_PRIV_NONE_FLAG), ok);
    t.remove(KeyKind::Lmr, key);
    EXPECT_EQ(check(s, pz, DAT_MEM_PRIV_NONE_FLAG), bad) << "a freed LMR passed from the cache";
}

TEST(UtilEvd, RingWaitTimeoutAndEmptyCodes) {
    static DAT_PROVIDER table{};
    Evd dto(&table, nullptr, 3, DAT_EVD_DTO_FLAG);
    Evd conn(&table, nullptr, 2, DAT_EVD_CONNECTION_FLAG);
    DAT_EVENT ev{};
    EXPECT_EQ(dto.dequeue(&ev), static_cast<DAT_RETURN>(0x000D0000));
    EXPECT_EQ(conn.dequeue(&ev), static_cast<DAT_RETURN>(0x800D0000));
    // Ring wrap-around keeps FIFO order; a full queue refuses the event.
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 3; ++i) {
            DAT_EVENT e{};
            e.event_number = DAT_DTO_COMPLETION_EVENT;
            e.event_data.dto_completion_event_data.user_cookie.as_64 =
                static_cast<DAT_UINT64>(round * 10 + i);
            ASSERT_TRUE(dto.post(e));
        }
        DAT_EVENT extra{};
        EXPECT_FALSE(dto.post(extra));
        for (int i = 0; i < 3; ++i) {
            ASSERT_EQ(dto.dequeue(&ev), DAT_SUCCESS);
            EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64,
                      static_cast<DAT_UINT64>(round * 10 + i));
            EXPECT_EQ(ev.evd_handle, &dto);
        }
    }
    // Timeout, threshold beyond the queue, unwaitable.
    DAT_COUNT nmore = -1;
    EXPECT_EQ(DAT_GET_TYPE(conn.wait(0, 1, &ev, &nmore)), DAT_TIMEOUT_EXPIRED);
    EXPECT_EQ(nmore, 0);
    EXPECT_EQ(DAT_GET_TYPE(conn.wait(1000, 3, &ev, &nmore)), DAT_INVALID_PARAMETER);
    std::thread poster([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        DAT_EVENT e{};
        e.event_number = DAT_CONNECTION_EVENT_ESTABLISHED;
        conn.post(e);
        conn.post(e);
    });
    ASSERT_EQ(conn.wait(DAT_TIMEOUT_INFINITE, 2, &ev, &nmore), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    EXPECT_EQ(nmore, 1);
    poster.join();
    std::thread unwait([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        conn.set_waitable(false);
    });
    EXPECT_EQ(DAT_GET_TYPE(conn.wait(DAT_TIMEOUT_INFINITE, 2, &ev, &nmore)), DAT_INTERRUPTED_CALL);
    unwait.join();
    EXPECT_EQ(DAT_GET_TYPE(conn.wait(0, 1, &ev, &nmore)), DAT_INVALID_STATE);
    conn.set_waitable(true);
    // Resize keeps queued events.
    ASSERT_EQ(conn.resize(8), DAT_SUCCESS);
    EXPECT_EQ(conn.qlen(), 8);
    ASSERT_EQ(conn.dequeue(&ev), DAT_SUCCESS);
    EXPECT_EQ(DAT_GET_TYPE(conn.dequeue(&ev)), DAT_QUEUE_EMPTY);
}

TEST(UtilEvd, CnoTriggersWhenNobodyWaitsOnTheEvd) {
    static DAT_PROVIDER table{};
    static std::atomic<int> agent_calls{0};
    DAT_OS_WAIT_PROXY_AGENT agent{nullptr, [](DAT_PVOID, DAT_EVD_HANDLE) { ++agent_calls; }};
    Cno cno(&table, nullptr, agent);
    Evd evd(&table, nullptr, 4, DAT_EVD_DTO_FLAG);
    ASSERT_EQ(evd.set_cno(&cno), DAT_SUCCESS);
    DAT_EVD_HANDLE which = nullptr;
    EXPECT_EQ(DAT_GET_TYPE(cno.wait(1000, &which)), DAT_TIMEOUT_EXPIRED);
    DAT_EVENT e{};
    ASSERT_TRUE(evd.post(e));
    ASSERT_EQ(cno.wait(1000, &which), DAT_SUCCESS);
    EXPECT_EQ(which, &evd);
    // The agent runs on the CNO's agent thread, never under the poster's locks.
    for (int i = 0; i < 5000 && agent_calls.load() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(agent_calls.load(), 1);
    EXPECT_EQ(cno.users.count(), 1);
    evd.set_cno(nullptr);
    EXPECT_EQ(cno.users.count(), 0);
}

// An EVD picks its CNO under its lock and triggers it after the unlock; dat_evd_modify_cno
// can detach the CNO in between and dat_cno_free then free it. The free waits for the
// triggers under way (Cno::wait_triggers, what cno_free calls). Without that wait a trigger
// is still under way at the free in some of the 2000 rounds (checked: the test then fails
// on `triggering`, and the trigger uses freed memory).
TEST(UtilEvd, CnoFreedRightAfterDetachWaitsForTriggersUnderWay) {
    static DAT_PROVIDER table{};
    Evd evd(&table, nullptr, 64, DAT_EVD_DTO_FLAG);
    std::atomic<bool> stop{false};
    std::atomic<long> posts{0};
    std::thread poster([&] {
        DAT_EVENT e{}, out{};
        while (!stop.load(std::memory_order_relaxed)) {
            evd.post(e);
            evd.dequeue(&out);
            posts.fetch_add(1, std::memory_order_relaxed);
        }
    });
    int triggered_rounds = 0;
    for (int round = 0; round < 2000; ++round) {
        auto *cno = new Cno(&table, nullptr, DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr});
        evd.set_cno(cno);
        // Until the poster has triggered it at least once (bounded: 1 s).
        DAT_EVD_HANDLE which = nullptr;
        if (cno->wait(1000000, &which) == DAT_SUCCESS) ++triggered_rounds;
        evd.set_cno(nullptr);  // dat_evd_modify_cno(evd, NULL)
        ASSERT_EQ(cno->users.count(), 0);
        cno->wait_triggers();  // dat_cno_free, then:
        EXPECT_EQ(cno->triggering.load(), 0);
        delete cno;
    }
    stop = true;
    poster.join();
    EXPECT_EQ(triggered_rounds, 2000) << "the poster did not reach the CNO every round";
    EXPECT_GT(posts.load(), 0);
}

// dat_cno_modify_agent racing dat_cno_free: once the free has begun (Cno::retire, which
// comes before it stops the agent), setting an agent is refused and starts no thread.
// Before, it started one after the free had stopped the old, for the deleting thread to
// join. A CNO whose free has begun refuses an EVD too (its use count).
TEST(UtilCno, NoAgentStartsAndNoEvdAttachesOnceTheFreeHasBegun) {
    static DAT_PROVIDER table{};
    static std::atomic<int> calls{0};
    calls = 0;
    auto *cno = new Cno(&table, nullptr, DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr});
    Evd evd(&table, nullptr, 4, DAT_EVD_DTO_FLAG);
    ASSERT_EQ(cno->users.begin_free(), UseCount::Free::Begun);  // dat_cno_free's order
    ASSERT_TRUE(cno->retire());
    const DAT_OS_WAIT_PROXY_AGENT agent{nullptr, [](DAT_PVOID, DAT_EVD_HANDLE) { ++calls; }};
    EXPECT_FALSE(cno->set_agent(agent));
    EXPECT_EQ(cno->agent().proxy_agent_func, nullptr);
    EXPECT_EQ(DAT_GET_TYPE(evd.set_cno(cno)), DAT_INVALID_HANDLE);
    EXPECT_EQ(evd.cno(), nullptr);
    cno->trigger(&evd);  // would queue an agent call, had one started
    cno->stop_agent();
    delete cno;
    EXPECT_EQ(calls.load(), 0);
}

// A transport's run of completions under one lock (Evd::Batch, tcp's reap): the events
// arrive in order across the ring's end, a full queue refuses what does not fit, a
// waiter is woken once the batch ends, and the CNO is triggered per event after the lock
// is released (the agent may dequeue from the same EVD).
TEST(UtilEvd, BatchPostsInOrderAndWakesAfterTheLock) {
    static DAT_PROVIDER table{};
    auto cookie_event = [](int c) {
        DAT_EVENT e{};
        e.event_number = DAT_DTO_COMPLETION_EVENT;
        e.event_data.dto_completion_event_data.user_cookie.as_64 = static_cast<DAT_UINT64>(c);
        return e;
    };
    Evd evd(&table, nullptr, 4, DAT_EVD_DTO_FLAG);
    DAT_EVENT ev{};
    // Move the ring's head so that the batch wraps around its end.
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(evd.post(cookie_event(-1)));
    for (int i = 0; i < 3; ++i) ASSERT_EQ(evd.dequeue(&ev), DAT_SUCCESS);
    {
        Evd::Batch batch(&evd);
        for (int i = 0; i < 4; ++i) EXPECT_TRUE(batch.add(cookie_event(i), false));
        EXPECT_FALSE(batch.add(cookie_event(99), false)) << "a full queue refuses the event";
        batch.finish();
        batch.finish();  // twice is harmless (the destructor calls it again)
    }
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(evd.dequeue(&ev), DAT_SUCCESS);
        EXPECT_EQ(ev.event_data.dto_completion_event_data.user_cookie.as_64,
                  static_cast<DAT_UINT64>(i));
        EXPECT_EQ(ev.evd_handle, &evd);
    }
    EXPECT_EQ(evd.dequeue(&ev), static_cast<DAT_RETURN>(0x000D0000));

    // A waiter for two events is released by one batch of two.
    std::atomic<bool> woke{false};
    std::thread waiter([&] {
        DAT_EVENT got{};
        DAT_COUNT nmore = -1;
        EXPECT_EQ(evd.wait(5000000, 2, &got, &nmore), DAT_SUCCESS);
        EXPECT_EQ(nmore, 1);
        woke = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
        Evd::Batch batch(&evd);
        batch.add(cookie_event(7), false);
        batch.add(cookie_event(8), false);
    }
    waiter.join();
    EXPECT_TRUE(woke.load());
    ASSERT_EQ(evd.dequeue(&ev), DAT_SUCCESS);

    // With a CNO and nobody waiting: one trigger per event, as post() does, and the
    // agent (which dequeues) runs after the batch released the EVD.
    static std::atomic<int> agent_calls{0};
    static Evd *agent_evd = nullptr;
    static std::atomic<int> agent_dequeued{0};
    DAT_OS_WAIT_PROXY_AGENT agent{nullptr, [](DAT_PVOID, DAT_EVD_HANDLE) {
                                      DAT_EVENT e{};
                                      while (agent_evd->dequeue(&e) == DAT_SUCCESS)
                                          ++agent_dequeued;
                                      ++agent_calls;
                                  }};
    Cno cno(&table, nullptr, agent);
    Evd with_cno(&table, nullptr, 8, DAT_EVD_DTO_FLAG);
    ASSERT_EQ(with_cno.set_cno(&cno), DAT_SUCCESS);
    agent_evd = &with_cno;
    {
        Evd::Batch batch(&with_cno);
        for (int i = 0; i < 3; ++i) ASSERT_TRUE(batch.add(cookie_event(i), false));
        EXPECT_EQ(cno.triggering.load(), 3) << "each trigger owed is counted";
    }
    EXPECT_EQ(cno.triggering.load(), 0) << "the batch paid what it owed (dat_cno_free waits)";
    DAT_EVD_HANDLE which = nullptr;
    ASSERT_EQ(cno.wait(1000000, &which), DAT_SUCCESS);
    EXPECT_EQ(which, &with_cno);
    for (int i = 0; i < 5000 && agent_dequeued.load() < 3; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(agent_dequeued.load(), 3);
    EXPECT_GE(agent_calls.load(), 1);
    with_cno.set_cno(nullptr);
}

// A transport's DTO EVD backend (verbs: a CQ) takes over dequeue/wait/resize; util's
// ring still carries the EVD's other events, and the backend hears of unwaitable and of
// CNO changes.
TEST(UtilEvd, BackendTakesOverTheDtoQueue) {
    struct Fake final : EvdBackend {
        Evd *evd = nullptr;
        int dequeues = 0, waits = 0, unwaits = 0;
        DAT_COUNT resized = 0;
        Cno *from = nullptr, *to = nullptr;
        int cno_calls = 0;
        DAT_RETURN dequeue(DAT_EVENT *out) noexcept override {
            ++dequeues;
            return evd->ring_dequeue(out);  // the mixed-stream path
        }
        DAT_RETURN wait(DAT_TIMEOUT, DAT_COUNT, DAT_EVENT *, DAT_COUNT *) noexcept override {
            ++waits;
            return err(DAT_TIMEOUT_EXPIRED);
        }
        DAT_RETURN resize(DAT_COUNT qlen) noexcept override {
            resized = qlen;
            return evd->ring_resize(qlen);
        }
        void unwaitable() noexcept override { ++unwaits; }
        void cno_changed(Cno *f, Cno *t) noexcept override {
            from = f;
            to = t;
            ++cno_calls;
        }
    };
    static DAT_PROVIDER table{};
    Cno cno(&table, nullptr, DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr});
    Evd evd(&table, nullptr, 4, DAT_EVD_DTO_FLAG);
    ASSERT_EQ(evd.set_cno(&cno), DAT_SUCCESS);
    // The handle is the object's address: the dispatch word must stay at offset 0.
    EXPECT_EQ(static_cast<void *>(&evd), static_cast<void *>(static_cast<Header *>(&evd)));
    auto owned = std::make_unique<Fake>();
    Fake *fake = owned.get();
    fake->evd = &evd;
    evd.set_backend(std::move(owned));
    EXPECT_EQ(fake->cno_calls, 1) << "told of the CNO the EVD was created with";
    EXPECT_EQ(fake->to, &cno);

    DAT_EVENT ev{};
    EXPECT_EQ(evd.dequeue(&ev), static_cast<DAT_RETURN>(0x000D0000));
    ASSERT_TRUE(evd.post(ev));
    EXPECT_EQ(evd.dequeue(&ev), DAT_SUCCESS);
    EXPECT_EQ(ev.evd_handle, &evd);
    EXPECT_EQ(fake->dequeues, 2);
    EXPECT_EQ(DAT_GET_TYPE(evd.wait(0, 1, &ev, nullptr)), DAT_TIMEOUT_EXPIRED);
    EXPECT_EQ(fake->waits, 1);
    ASSERT_EQ(evd.resize(8), DAT_SUCCESS);
    EXPECT_EQ(fake->resized, 8);
    EXPECT_EQ(evd.qlen(), 8);
    evd.set_waitable(false);
    EXPECT_EQ(fake->unwaits, 1);
    evd.set_waitable(true);
    EXPECT_EQ(fake->unwaits, 1);
    evd.set_cno(nullptr);
    EXPECT_EQ(fake->cno_calls, 2);
    EXPECT_EQ(fake->from, &cno);
    EXPECT_EQ(fake->to, nullptr);
    EXPECT_EQ(cno.users.count(), 0);
}

TEST(UtilProviderTable, EverySlotIsCallableAndEchoesTheKey) {
    DAT_PROVIDER_INFO info{};
    std::strcpy(info.ia_name, "util-test-ia");
    info.dapl_version_major = 2;
    info.dapl_version_minor = 0;
    info.is_thread_safe = DAT_TRUE;
    provider_init(&info, "127.0.0.1 0", nullptr);
    ASSERT_NE(g_registered, nullptr);
    EXPECT_STREQ(g_registered->device_name, "util-test-ia");
    EXPECT_STREQ(g_info.ia_name, "util-test-ia");
    EXPECT_EQ(g_info.is_thread_safe, DAT_TRUE);
    // The reference libdat2 calls slots without NULL checks: all 79 function slots are set.
    const void *const *slots = reinterpret_cast<const void *const *>(g_registered);
    for (std::size_t i = 2; i < sizeof(DAT_PROVIDER) / sizeof(void *); ++i)
        EXPECT_NE(slots[i], nullptr) << "slot " << i;
    // An unimplemented slot answers DAT_NOT_IMPLEMENTED; an implemented one checks its
    // handle (util's SRQ entry points: DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_SRQ).
    DAT_SRQ_HANDLE srq = nullptr;
    EXPECT_EQ(g_registered->srq_free_func(srq), static_cast<DAT_RETURN>(0x80050019));
    EXPECT_EQ(g_registered->cr_handoff_func(nullptr, 0), static_cast<DAT_RETURN>(0xBFFF0000));
    EXPECT_EQ(find_instance("util-test-ia"), g_registered->extension);
    provider_fini(&info);
    EXPECT_EQ(g_registered, nullptr);
    EXPECT_EQ(find_instance("util-test-ia"), nullptr);
}

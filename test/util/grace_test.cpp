// Grace periods (util/grace.hpp): an object freed while a call on another thread may still
// use it is deleted when that call returns, not before; with no such call, at once.
// First the mechanism on its own (with membarrier, and with the fenced entries used where
// the kernel refuses it), then through util's entry points with a transport that holds a
// thread inside a post or a dequeue while another thread frees what it checked.
#include <sys/wait.h>
#include <unistd.h>

#include <dat2/udat.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "util/grace.hpp"
#include "util/handle_arena.hpp"
#include "util/objects.hpp"
#include "gated_transport.hpp"
#include "util_test_support.hpp"

using namespace opendat::util;
using namespace std::chrono_literals;
using opendat::util::test::BareTransport;
using opendat::util::test::Gate;
using opendat::util::test::Instance;
using namespace opendat::util::test;  // the gated transport

namespace {

// An object whose deletion the test watches.
struct Watched {
    std::atomic<bool> *deleted;
    ~Watched() { deleted->store(true); }
};

// A thread inside an entry point (a Guard) until told to leave.
class InsideACall {
  public:
    InsideACall()
        : t_([this] {
              grace::Guard g;
              inside_.store(true);
              while (!leave_.load()) std::this_thread::sleep_for(1ms);
          }) {
        while (!inside_.load()) std::this_thread::sleep_for(1ms);
    }
    ~InsideACall() { leave(); }
    void leave() {
        leave_.store(true);
        if (t_.joinable()) t_.join();
    }

  private:
    std::atomic<bool> inside_{false}, leave_{false};
    std::thread t_;
};

// Every test of the mechanism runs twice: readers relying on membarrier (where the kernel
// offers it), and readers fencing themselves.
class Grace : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override {
        { grace::Guard first; }  // registers this thread: the process-wide set-up is done
        saved_ = grace::detail::g_asymmetric;
        if (GetParam() && !saved_) GTEST_SKIP() << "the kernel refuses membarrier(2) here";
        grace::detail::g_asymmetric = GetParam();
    }
    void TearDown() override { grace::detail::g_asymmetric = saved_; }

  private:
    bool saved_ = false;
};

TEST_P(Grace, WithNoOtherCallInFlightAnObjectIsDeletedAtOnce) {
    std::atomic<bool> deleted{false};
    grace::Guard g;  // the freeing thread's own call does not hold it back
    grace::retire(new Watched{&deleted});
    EXPECT_TRUE(deleted.load());
    EXPECT_EQ(grace::waiting(), 0u);
}

TEST_P(Grace, AnObjectOutlivesACallInFlightOnAnotherThreadAndGoesWhenItReturns) {
    std::atomic<bool> deleted{false};
    InsideACall other;
    grace::retire(new Watched{&deleted});
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(deleted.load()) << "deleted under a call that may have checked it";
    EXPECT_EQ(grace::waiting(), 1u);
    other.leave();  // its way out deletes it
    EXPECT_TRUE(deleted.load());
    EXPECT_EQ(grace::waiting(), 0u);
}

TEST_P(Grace, ACallThatBeganAfterTheFreeDoesNotHoldItBack) {
    std::atomic<bool> first{false}, second{false};
    auto a = std::make_unique<InsideACall>();
    grace::retire(new Watched{&first});
    InsideACall b;  // began after the first retire: only a holds that one
    a.reset();
    EXPECT_TRUE(first.load());
    grace::retire(new Watched{&second});  // b is inside now: this one waits for it
    EXPECT_FALSE(second.load());
    b.leave();
    EXPECT_TRUE(second.load());
}

TEST_P(Grace, AThreadPausedInABlockingWaitHoldsNothingBack) {
    std::atomic<bool> paused{false}, resume{false}, deleted{false};
    std::thread waiter([&] {
        grace::Guard g;
        grace::Pause sleeping;
        paused.store(true);
        while (!resume.load()) std::this_thread::sleep_for(1ms);
    });
    while (!paused.load()) std::this_thread::sleep_for(1ms);
    grace::retire(new Watched{&deleted});
    EXPECT_TRUE(deleted.load()) << "a thread asleep in dat_evd_wait held back a deletion";
    resume.store(true);
    waiter.join();
}

TEST_P(Grace, SynchronizeReturnsOnlyOnceTheCallsInFlightHaveReturned) {
    std::atomic<bool> deleted{false}, synced{false};
    auto other = std::make_unique<InsideACall>();
    grace::retire(new Watched{&deleted});
    std::thread closer([&] {
        grace::Guard g;  // as dat_ia_close: its own call is not waited for
        grace::synchronize();
        synced.store(true);
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(synced.load());
    other.reset();
    closer.join();
    EXPECT_TRUE(synced.load());
    EXPECT_TRUE(deleted.load()) << "synchronize returned before what was retired went";
}

// Two threads in grace::synchronize at once, each inside a call of its own (two IAs closed
// at once, or a close while a failed dat_ia_open tears down its transport): neither waits
// for the other. Before, each waited for the other's call to end: for ever.
TEST_P(Grace, TwoSynchronizesAtOnceDoNotWaitForEachOther) {
    std::atomic<int> inside{0}, done{0};
    auto closer = [&] {
        grace::Guard g;
        inside.fetch_add(1);
        while (inside.load() < 2) std::this_thread::yield();
        grace::synchronize();
        done.fetch_add(1);
    };
    std::thread a(closer), b(closer);
    for (int ms = 0; done.load() < 2 && ms < 5000; ++ms) std::this_thread::sleep_for(1ms);
    ASSERT_EQ(done.load(), 2) << "two synchronizes waited for each other";
    a.join();
    b.join();
}

// A thread paused deep in nested calls (dat_ia_close freeing a CNO, joining its agent)
// holds nothing back either, and is inside its calls again afterwards.
TEST_P(Grace, APauseInNestedCallsHoldsNothingBackAndRestoresThem) {
    std::atomic<bool> paused{false}, resume{false}, deleted{false}, after{false};
    std::thread t([&] {
        grace::Guard outer;
        grace::Guard inner;
        {
            grace::Pause joining;
            paused.store(true);
            while (!resume.load()) std::this_thread::sleep_for(1ms);
        }
        after.store(true);
        while (resume.load()) std::this_thread::sleep_for(1ms);  // until told again
    });
    while (!paused.load()) std::this_thread::sleep_for(1ms);
    grace::retire(new Watched{&deleted});
    EXPECT_TRUE(deleted.load()) << "a paused thread held back a deletion";
    resume.store(true);
    while (!after.load()) std::this_thread::sleep_for(1ms);
    std::atomic<bool> second{false};
    grace::retire(new Watched{&second});
    EXPECT_FALSE(second.load()) << "the thread did not count as inside after its pause";
    resume.store(false);
    t.join();
    EXPECT_TRUE(second.load());
}

TEST_P(Grace, NestedGuardsCountAsOneCall) {
    std::atomic<bool> deleted{false}, release{false}, inside{false};
    std::thread t([&] {
        grace::Guard outer;
        { grace::Guard inner; }  // an entry calling another (dat_ia_close freeing its EPs)
        inside.store(true);
        while (!release.load()) std::this_thread::sleep_for(1ms);
    });
    while (!inside.load()) std::this_thread::sleep_for(1ms);
    grace::retire(new Watched{&deleted});
    EXPECT_FALSE(deleted.load()) << "the inner guard's exit ended the outer call";
    release.store(true);
    t.join();
    EXPECT_TRUE(deleted.load());
}

// A free may depend on an earlier one: a verbs protection domain can be deallocated only
// after the queue pairs made in it are destroyed (else EBUSY, and it is leaked). So a
// deletion never overtakes one retired before it, not even when no call is in flight
// any more: here the first deletion is still running on the thread that left its call,
// and the second, retired meanwhile with nothing to wait for, runs after it. Before, it
// ran at once, beside the first.
TEST_P(Grace, ADeletionNeverOvertakesOneRetiredBeforeIt) {
    struct Log {
        std::mutex mu;
        std::vector<std::string> lines;
        std::atomic<bool> first_running{false}, release{false};
        void add(const char *line) {
            std::lock_guard lk(mu);
            lines.emplace_back(line);
        }
    } log;
    std::atomic<bool> inside{false}, go{false};
    std::thread caller([&] {
        grace::enter();
        inside.store(true);
        while (!go.load()) std::this_thread::sleep_for(1ms);
        grace::leave();  // its way out runs the first deletion (which blocks)
    });
    while (!inside.load()) std::this_thread::sleep_for(1ms);
    grace::retire(Deferred{&log, [](void *p) {
                               auto *l = static_cast<Log *>(p);
                               l->first_running.store(true);
                               while (!l->release.load()) std::this_thread::sleep_for(1ms);
                               l->add("first");
                           }});
    EXPECT_EQ(grace::waiting(), 1u);
    go.store(true);
    while (!log.first_running.load()) std::this_thread::sleep_for(1ms);
    // No call in flight anywhere now, but the first deletion has not finished.
    grace::retire(Deferred{&log, [](void *p) { static_cast<Log *>(p)->add("second"); }});
    {
        std::lock_guard lk(log.mu);
        EXPECT_TRUE(log.lines.empty()) << "the second deletion overtook the first";
    }
    log.release.store(true);
    caller.join();  // the running thread runs the second before it stops
    std::lock_guard lk(log.mu);
    EXPECT_EQ(log.lines, (std::vector<std::string>{"first", "second"}));
    EXPECT_EQ(grace::waiting(), 0u);
}

// synchronize() returns only once what was retired before it has been deleted, also a
// batch another thread is running at the time.
TEST_P(Grace, SynchronizeWaitsForADeletionRunningOnAnotherThread) {
    std::atomic<bool> running{false}, release{false}, done{false};
    struct Ctx {
        std::atomic<bool> *running, *release, *done;
    } ctx{&running, &release, &done};
    std::atomic<bool> inside{false}, go{false};
    std::thread caller([&] {
        grace::enter();
        inside.store(true);
        while (!go.load()) std::this_thread::sleep_for(1ms);
        grace::leave();
    });
    while (!inside.load()) std::this_thread::sleep_for(1ms);
    grace::retire(Deferred{&ctx, [](void *p) {
                               auto *c = static_cast<Ctx *>(p);
                               c->running->store(true);
                               while (!c->release->load()) std::this_thread::sleep_for(1ms);
                               c->done->store(true);
                           }});
    go.store(true);
    while (!running.load()) std::this_thread::sleep_for(1ms);
    std::thread releaser([&] {
        std::this_thread::sleep_for(30ms);
        release.store(true);
    });
    grace::synchronize();
    EXPECT_TRUE(done.load()) << "synchronize returned while a deletion still ran";
    releaser.join();
    caller.join();
}

// A free racing a dat_ia_close: the close's synchronize() waits for the free's call, and
// the free retires on its way out something that waits for a call that began after the
// close looked. The close tears its transport down when synchronize() returns, so that
// object must be gone by then (before, synchronize() returned with it still waiting, and
// the verbs teardown deleted the EpImpl its queue pair's deletion then wrote to).
TEST_P(Grace, SynchronizeWaitsForWhatTheCallsItWaitedForRetired) {
    std::atomic<bool> deleted{false}, a_inside{false}, a_go{false}, synced{false};
    std::atomic<int> c_step{0};  // 1: has its slot; 2: go inside; 3: inside; 4: leave
    // c takes its slot first, so that a look at the calls in flight meets it before a's
    // (synchronize waits for each call as it meets it): it is outside when looked at.
    // Both reuse a slot (made here if need be), taken from the head of the list in order.
    { InsideACall one, two; }
    std::thread c([&] {
        { grace::Guard slot; }
        c_step.store(1);
        while (c_step.load() != 2) std::this_thread::sleep_for(1ms);
        grace::enter();
        c_step.store(3);
        while (c_step.load() != 4) std::this_thread::sleep_for(1ms);
        grace::leave();  // its way out deletes the object
    });
    while (c_step.load() != 1) std::this_thread::sleep_for(1ms);
    std::thread a([&] {
        grace::enter();
        a_inside.store(true);
        while (!a_go.load()) std::this_thread::sleep_for(1ms);
        grace::retire(new Watched{&deleted});  // waits for c's call
        grace::leave();
    });
    while (!a_inside.load()) std::this_thread::sleep_for(1ms);
    std::thread closer([&] {
        grace::synchronize();  // waits for a's call
        synced.store(true);
    });
    std::this_thread::sleep_for(30ms);  // the closer has looked at c (outside) and waits for a
    c_step.store(2);
    while (c_step.load() != 3) std::this_thread::sleep_for(1ms);
    a_go.store(true);
    a.join();
    std::this_thread::sleep_for(30ms);
    EXPECT_FALSE(deleted.load());
    EXPECT_FALSE(synced.load()) << "synchronize returned while an object retired by a call it "
                                   "waited for was still waiting";
    c_step.store(4);
    c.join();
    closer.join();
    EXPECT_TRUE(deleted.load());
}

// retire_after_call: for a caller holding a lock a deletion may need. Never run inside
// the call, even with no other call in flight; on its way out.
TEST_P(Grace, ARetireAfterTheCallRunsOnTheWayOutOfTheCall) {
    std::atomic<bool> deleted{false};
    {
        grace::Guard outer;
        {
            grace::Guard nested;
            grace::retire_after_call(Deferred::of(new Watched{&deleted}));
        }
        EXPECT_FALSE(deleted.load()) << "ran inside the call that retired it";
    }
    EXPECT_TRUE(deleted.load());
    EXPECT_EQ(grace::waiting(), 0u);
}

// Whoever runs the list: a retire on another thread (which runs what is due) does not run
// a deletion retired after the call while that call is still under way.
TEST_P(Grace, ARetireAfterTheCallWaitsForItsCallerWhoeverRunsTheList) {
    std::atomic<bool> deleted{false}, later{false};
    {
        grace::Guard call;
        grace::retire_after_call(Deferred::of(new Watched{&deleted}));
        std::thread([&] { grace::retire(new Watched{&later}); }).join();
        EXPECT_FALSE(deleted.load()) << "another thread's retire ran it inside the call";
        EXPECT_FALSE(later.load()) << "a later retire overtook it";
    }
    EXPECT_TRUE(deleted.load());
    EXPECT_TRUE(later.load());
    EXPECT_EQ(grace::waiting(), 0u);
}

// A thread leaves its call while another retires an object that waits for it and looks
// at once whether it is due: whichever way they meet, the object goes before both have
// returned (the leaving thread's look is not lost when the retiring one holds the lock).
TEST_P(Grace, AThreadLeavingWhileTheListIsLookedAtRunsWhatWaitedForIt) {
    int stuck = 0;
    for (int round = 0; round < 2000; ++round) {
        std::atomic<bool> inside{false}, go{false}, deleted{false};
        std::thread caller([&] {
            grace::Guard g;
            inside.store(true);
            while (!go.load()) {
            }
        });
        while (!inside.load()) {
        }
        auto *obj = new Watched{&deleted};
        go.store(true);
        grace::retire(obj);  // waits for `caller`, which is leaving now
        caller.join();
        if (!deleted.load()) {
            ++stuck;
            grace::Guard nudge;  // the next call anywhere runs it: clean up for the next round
        }
    }
    EXPECT_EQ(stuck, 0) << "rounds whose object waited for some later call to go";
    EXPECT_EQ(grace::waiting(), 0u);
}

// A thread that ends inside a call (pthread_exit from an agent, a cancellation) runs, on
// its way out, what waited for that call: nobody else may come by soon.
TEST_P(Grace, AThreadEndingInsideACallRunsWhatWaitedForIt) {
    struct Shared {
        std::atomic<bool> inside{false}, go{false};
    } shared;
    pthread_t t;
    ASSERT_EQ(pthread_create(
                  &t, nullptr,
                  [](void *p) -> void * {
                      auto *sh = static_cast<Shared *>(p);
                      grace::enter();  // and never leave()
                      sh->inside.store(true);
                      while (!sh->go.load()) std::this_thread::sleep_for(1ms);
                      pthread_exit(nullptr);
                  },
                  &shared),
              0);
    while (!shared.inside.load()) std::this_thread::sleep_for(1ms);
    std::atomic<bool> deleted{false};
    grace::retire(new Watched{&deleted});
    EXPECT_FALSE(deleted.load());
    shared.go.store(true);
    ASSERT_EQ(pthread_join(t, nullptr), 0);
    EXPECT_TRUE(deleted.load()) << "left for some later call to run";
    EXPECT_EQ(grace::waiting(), 0u);
}

TEST_P(Grace, ExitedThreadsGiveTheirSlotsToNewOnes) {
    auto run = [] { std::thread([] { grace::Guard g; }).join(); };
    run();
    const std::size_t slots = grace::slots();
    for (int i = 0; i < 50; ++i) run();
    EXPECT_EQ(grace::slots(), slots) << "each new thread took a new slot";
}

// A fork's child has only the forking thread: a call another thread had in flight in the
// parent holds nothing back in the child.
TEST_P(Grace, AForksChildIsNotHeldBackByTheParentsOtherThreads) {
    InsideACall other;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        std::atomic<bool> deleted{false};
        grace::retire(new Watched{&deleted});
        _exit(deleted.load() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the child kept an object for a thread it does not have";
}

INSTANTIATE_TEST_SUITE_P(Readers, Grace, ::testing::Bool(),
                         [](const auto &info) { return info.param ? "Membarrier" : "Fenced"; });

// --- through the entry points ----------------------------------------------------------

// dat_ep_post_send checked the EP and is inside the transport when another thread frees
// the EP. Before, the EP was deleted at once and the post read freed memory when it went
// on; now the EP is deleted when the post returns.
TEST(GraceEntries, AnEndpointFreedDuringAPostIsDeletedWhenThePostReturns) {
    GatedIa g("grace-post-free");
    ASSERT_NE(g.t, nullptr);
    g_post_gate.arm();
    g_post_read.store(-1);
    std::atomic<DAT_RETURN> rc{0};
    std::thread poster([&] {
        rc.store(g.t->ep_post_send_func(g.ep, 0, nullptr, {}, DAT_COMPLETION_DEFAULT_FLAG));
    });
    ASSERT_TRUE(g_post_gate.wait_inside());
    const std::size_t before = live_objects();
    ASSERT_EQ(g.t->ep_free_func(g.ep), DAT_SUCCESS);
    EXPECT_EQ(live_objects(), before) << "the EP was deleted under the post";
    EXPECT_EQ(grace::waiting(), 1u);
    g_post_gate.open.store(true);
    poster.join();
    EXPECT_EQ(rc.load(), DAT_SUCCESS);
    EXPECT_GT(g_post_read.load(), 0) << "the post read a deleted EP";
    EXPECT_EQ(live_objects(), before - 1) << "the EP outlived the post that held it";
    EXPECT_EQ(grace::waiting(), 0u);
    EXPECT_EQ(
        DAT_GET_TYPE(g.t->ep_post_send_func(g.ep, 0, nullptr, {}, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_INVALID_HANDLE);
    EXPECT_EQ(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// dat_evd_dequeue on an empty DTO EVD is inside the transport's inline progress when
// another thread frees the EVD. Before, the EVD (and its ring) went at once, and the
// dequeue looked at the ring again on its way out.
TEST(GraceEntries, AnEvdFreedDuringADequeueIsDeletedWhenTheDequeueReturns) {
    GatedIa g("grace-dequeue-free");
    ASSERT_NE(g.t, nullptr);
    DAT_EVD_HANDLE spare = DAT_HANDLE_NULL;  // an EVD no EP uses, free to free
    ASSERT_EQ(g.t->evd_create_func(g.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &spare),
              DAT_SUCCESS);
    g_progress_gate.arm();
    std::atomic<DAT_RETURN> rc{0};
    std::thread dequeuer([&] {
        DAT_EVENT ev{};
        rc.store(g.t->evd_dequeue_func(spare, &ev));
    });
    ASSERT_TRUE(g_progress_gate.wait_inside());
    const std::size_t before = live_objects();
    ASSERT_EQ(g.t->evd_free_func(spare), DAT_SUCCESS);
    EXPECT_EQ(live_objects(), before) << "the EVD was deleted under the dequeue";
    g_progress_gate.open.store(true);
    dequeuer.join();
    EXPECT_EQ(DAT_GET_TYPE(rc.load()), DAT_QUEUE_EMPTY);
    EXPECT_EQ(live_objects(), before - 1);
    EXPECT_EQ(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// An abrupt dat_ia_close while a post on one of its EPs is inside the transport: the
// transport goes only once the post has returned.
TEST(GraceEntries, AnAbruptCloseWaitsForAPostInFlightBeforeTheTransportGoes) {
    GatedIa g("grace-post-close");
    ASSERT_NE(g.t, nullptr);
    g_post_gate.arm();
    std::thread poster(
        [&] { g.t->ep_post_send_func(g.ep, 0, nullptr, {}, DAT_COMPLETION_DEFAULT_FLAG); });
    ASSERT_TRUE(g_post_gate.wait_inside());
    std::atomic<DAT_RETURN> closed{0};
    std::thread closer([&] { closed.store(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG)); });
    std::this_thread::sleep_for(200ms);
    EXPECT_FALSE(g_transport_gone.load()) << "the transport went under a post in flight";
    g_post_gate.open.store(true);
    poster.join();
    closer.join();
    EXPECT_EQ(closed.load(), DAT_SUCCESS);
    EXPECT_TRUE(g_transport_gone.load());
}

// An abrupt dat_ia_close while a dat_ep_create on the IA is inside the transport: the
// close waits for it, then frees the EP the create added after the close's first pass
// over the IA's objects. Before, the transport went under the create, and the new EP
// stayed live on a closed IA, naming a deleted transport.
TEST(GraceEntries, AnEndpointCreatedDuringAnAbruptCloseGoesWithTheIa) {
    GatedIa g("grace-create-close");
    ASSERT_NE(g.t, nullptr);
    const int eps = GatedTransport::eps.load();
    g_create_gate.arm();
    std::atomic<DAT_RETURN> created{0};
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    std::thread creator([&] {
        created.store(g.t->ep_create_func(g.ia, g.pz, g.evd, g.evd, g.conn, nullptr, &ep));
    });
    ASSERT_TRUE(g_create_gate.wait_inside());
    std::atomic<DAT_RETURN> closed{0};
    std::thread closer([&] { closed.store(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG)); });
    std::this_thread::sleep_for(200ms);
    EXPECT_FALSE(g_transport_gone.load()) << "the transport went under a create in flight";
    g_create_gate.open.store(true);
    creator.join();
    closer.join();
    EXPECT_EQ(created.load(), DAT_SUCCESS);
    EXPECT_EQ(closed.load(), DAT_SUCCESS);
    EXPECT_TRUE(g_transport_gone.load());
    EXPECT_EQ(GatedTransport::eps.load(), eps - 1)
        << "an EP of the closed IA was left to its transport";
    EXPECT_EQ(DAT_GET_TYPE(g.t->ep_free_func(ep)), DAT_INVALID_HANDLE)
        << "an EP of the closed IA is still live";
}

// An abrupt close of an IA whose own async EVD (made by dat_ia_open, no child) names a
// CNO: the CNO goes with the IA. Before, its free was refused on every pass (the EVD
// still counted it as a user) and it stayed live, naming the deleted IA.
TEST(GraceEntries, AnAbruptCloseFreesTheCnoItsOwnAsyncEvdNames) {
    GatedIa g("grace-close-async-cno");
    ASSERT_NE(g.t, nullptr);
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    ASSERT_EQ(g.t->ia_query_func(g.ia, &async, 0, nullptr, 0, nullptr), DAT_SUCCESS);
    ASSERT_NE(async, DAT_HANDLE_NULL);
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    ASSERT_EQ(g.t->cno_create_func(g.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
    ASSERT_EQ(g.t->evd_modify_cno_func(async, cno), DAT_SUCCESS);
    EXPECT_EQ(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    DAT_CNO_PARAM p{};
    EXPECT_EQ(DAT_GET_TYPE(g.t->cno_query_func(cno, DAT_CNO_FIELD_ALL, &p)), DAT_INVALID_HANDLE)
        << "the CNO outlived its IA";
}

}  // namespace

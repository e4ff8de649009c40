// A polling dequeue that runs the transport's progress gets the first event that progress
// posts to its EVD straight in its DAT_EVENT, without the ring (Evd::hand_off,
// util/evd.hpp). What must not change with it: events come out in the order they were
// posted, one already queued (or posted by another thread first) comes before, the events
// after the first wait in the ring, an event for another EVD stays there, and a CNO
// attached to the EVD is still triggered.
#include <dat2/udat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "util/evd.hpp"
#include "util/objects.hpp"
#include "util/provider_table.hpp"
#include "util_test_support.hpp"

using namespace opendat::util;
using opendat::util::test::BareTransport;
using opendat::util::test::Instance;

namespace {

// Its next inline progress runs what the test gives it, once, on the polling thread, as a
// transport that receives there does.
class ScriptedTransport final : public BareTransport {
  public:
    ScriptedTransport() : BareTransport("") {}
    void progress_inline() noexcept override {
        if (!next) return;
        std::function<void()> step = std::move(next);
        next = nullptr;
        step();
    }
    std::function<void()> next;
};

ScriptedTransport *g_scripted = nullptr;

DAT_RETURN make_scripted(ProviderInstance *, Ia *, std::unique_ptr<Transport> *out) {
    auto t = std::make_unique<ScriptedTransport>();
    g_scripted = t.get();
    *out = std::move(t);
    return DAT_SUCCESS;
}

DAT_EVENT received(std::uint64_t cookie) {
    DAT_EVENT e{};
    e.event_number = DAT_DTO_COMPLETION_EVENT;
    auto &d = e.event_data.dto_completion_event_data;
    d.user_cookie.as_64 = cookie;
    d.status = DAT_DTO_SUCCESS;
    d.operation = DAT_DTO_RECEIVE;
    d.transfered_length = 8;
    return e;
}

// An IA of the scripted transport and a DTO EVD on it (with `cno`, if given).
struct Polled {
    Instance inst;
    const DAT_PROVIDER *t = nullptr;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd_h = DAT_HANDLE_NULL;
    Evd *evd = nullptr;

    explicit Polled(const char *name) : inst(name, "", &make_scripted), t(inst.table) {
        ia = inst.open();
    }
    ~Polled() {
        if (g_scripted != nullptr) g_scripted->next = nullptr;
        t->ia_close_func(ia, DAT_CLOSE_ABRUPT_FLAG);
        g_scripted = nullptr;
    }
    ::testing::AssertionResult make_evd(DAT_CNO_HANDLE cno = DAT_HANDLE_NULL) {
        if (t->evd_create_func(ia, 8, cno, DAT_EVD_DTO_FLAG, &evd_h) != DAT_SUCCESS)
            return ::testing::AssertionFailure() << "no EVD";
        evd = static_cast<Evd *>(evd_h);
        return ::testing::AssertionSuccess();
    }
    // The cookies of the events the next dequeues return, up to the first that finds none.
    std::vector<std::uint64_t> drain() {
        std::vector<std::uint64_t> got;
        for (std::uint64_t c; (c = next_cookie()) != 0;) got.push_back(c);
        return got;
    }
    // The cookie of the event the next dequeue returns; 0 when there is none.
    std::uint64_t next_cookie() {
        DAT_EVENT out{};
        if (t->evd_dequeue_func(evd_h, &out) != DAT_SUCCESS) return 0;
        EXPECT_EQ(out.evd_handle, evd_h);
        EXPECT_EQ(out.event_number, DAT_DTO_COMPLETION_EVENT);
        return out.event_data.dto_completion_event_data.user_cookie.as_64;
    }
};

// Done by the next inline progress only.
void post_once(std::function<void()> f) {
    g_scripted->next = std::move(f);
}

TEST(UtilEvdHandOff, EventsThatOneProgressRoundPostsComeOutInOrder) {
    Polled p("util-handoff-order");
    ASSERT_TRUE(p.make_evd());
    post_once([&] {
        // The first goes to the dequeue, not the ring; the others queue behind it.
        for (std::uint64_t c = 1; c <= 3; ++c) {
            ASSERT_TRUE(p.evd->post(received(c)));
            EXPECT_EQ(p.evd->pending(), static_cast<DAT_COUNT>(c - 1)) << "after event " << c;
        }
    });
    EXPECT_EQ(p.drain(), (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST(UtilEvdHandOff, ABatchComesOutInOrder) {
    Polled p("util-handoff-batch");
    ASSERT_TRUE(p.make_evd());
    post_once([&] {
        Evd::Batch batch(p.evd);
        for (std::uint64_t c = 1; c <= 3; ++c) ASSERT_TRUE(batch.add(received(c), false));
        batch.finish();
        EXPECT_EQ(p.evd->pending(), 2) << "the first of the batch went through the ring";
    });
    EXPECT_EQ(p.drain(), (std::vector<std::uint64_t>{1, 2, 3}));
}

// Another thread's event, queued while the progress ran, came first and goes first.
TEST(UtilEvdHandOff, AnEventQueuedBeforeComesFirst) {
    Polled p("util-handoff-queued");
    ASSERT_TRUE(p.make_evd());
    post_once([&] {
        std::thread other([&] { EXPECT_TRUE(p.evd->post(received(1))); });
        other.join();
        EXPECT_TRUE(p.evd->post(received(2)));
    });
    EXPECT_EQ(p.drain(), (std::vector<std::uint64_t>{1, 2}));
}

// The progress a dequeue of one EVD runs may complete work of another: that event is the
// other EVD's.
TEST(UtilEvdHandOff, AnEventForAnotherEvdStaysThere) {
    Polled p("util-handoff-other");
    ASSERT_TRUE(p.make_evd());
    DAT_EVD_HANDLE other_h = DAT_HANDLE_NULL;
    ASSERT_EQ(p.t->evd_create_func(p.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &other_h),
              DAT_SUCCESS);
    auto *other = static_cast<Evd *>(other_h);
    post_once([&] { EXPECT_TRUE(other->post(received(5))); });
    EXPECT_EQ(p.next_cookie(), 0u);
    DAT_EVENT out{};
    ASSERT_EQ(p.t->evd_dequeue_func(other_h, &out), DAT_SUCCESS);
    EXPECT_EQ(out.evd_handle, other_h);
    EXPECT_EQ(out.event_data.dto_completion_event_data.user_cookie.as_64, 5u);
}

// An event on an EVD with a CNO owes the CNO its trigger, even when a polling dequeue takes
// it at once: such an event goes through the ring.
TEST(UtilEvdHandOff, ACnoAttachedIsStillTriggered) {
    Polled p("util-handoff-cno");
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    ASSERT_EQ(p.t->cno_create_func(p.ia, DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr}, &cno),
              DAT_SUCCESS);
    ASSERT_TRUE(p.make_evd(cno));
    post_once([&] {
        EXPECT_TRUE(p.evd->post(received(9)));
        EXPECT_EQ(p.evd->pending(), 1) << "handed over past the CNO";
    });
    EXPECT_EQ(p.next_cookie(), 9u);
    DAT_EVD_HANDLE which = DAT_HANDLE_NULL;
    EXPECT_EQ(p.t->cno_wait_func(cno, 1'000'000, &which), DAT_SUCCESS)
        << "the CNO was not triggered by an event a polling dequeue took";
    EXPECT_EQ(which, p.evd_h);
    // Attached later (dat_evd_modify_cno): the same.
    ASSERT_EQ(p.t->evd_modify_cno_func(p.evd_h, DAT_HANDLE_NULL), DAT_SUCCESS);
    post_once([&] { EXPECT_TRUE(p.evd->post(received(10))); });
    EXPECT_EQ(p.next_cookie(), 10u);
    ASSERT_EQ(p.t->evd_modify_cno_func(p.evd_h, cno), DAT_SUCCESS);
    post_once([&] { EXPECT_TRUE(p.evd->post(received(11))); });
    EXPECT_EQ(p.next_cookie(), 11u);
    EXPECT_EQ(p.t->cno_wait_func(cno, 1'000'000, &which), DAT_SUCCESS);
    ASSERT_EQ(p.t->evd_modify_cno_func(p.evd_h, DAT_HANDLE_NULL), DAT_SUCCESS);
    EXPECT_EQ(p.t->cno_free_func(cno), DAT_SUCCESS);
}

}  // namespace

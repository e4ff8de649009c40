// util::UseCount: a free of a PZ, EVD, SRQ or CNO and a create that uses it decide in one
// atomic word, so a create never works on an object its free has begun to tear down.
#include <dat2/udat.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gated_transport.hpp"
#include "util/evd.hpp"
#include "util/status.hpp"
#include "util/use_count.hpp"

using namespace opendat::util;
using namespace opendat::util::test;

namespace {

TEST(UseCount, AFreeIsRefusedWhileUsedAndAUseIsRefusedOnceTheFreeHasBegun) {
    UseCount u;
    ASSERT_TRUE(u.take());
    EXPECT_EQ(u.count(), 1);
    EXPECT_EQ(u.begin_free(), UseCount::Free::InUse);
    u.drop();
    EXPECT_EQ(u.begin_free(), UseCount::Free::Begun);
    EXPECT_FALSE(u.take());
    EXPECT_EQ(u.count(), 0);
    EXPECT_EQ(u.begin_free(), UseCount::Free::AlreadyFreeing) << "a second free of one object";
}

// The frees' answers: IN_USE while used, success once begun, the handle's error after.
TEST(UseCount, AFreesAnswerFollowsItsDecision) {
    constexpr DAT_RETURN kInUse = err(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);
    constexpr DAT_RETURN kGone = err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    UseCount u;
    ASSERT_TRUE(u.take());
    EXPECT_EQ(begin_free(u, kInUse, kGone), kInUse);
    u.drop();
    EXPECT_EQ(begin_free(u, kInUse, kGone), DAT_SUCCESS);
    EXPECT_EQ(begin_free(u, kInUse, kGone), kGone);
}

TEST(UseCount, AHoldGivesItsUsesBackUnlessKept) {
    UseCount a, b;
    {
        UseHold hold;
        ASSERT_TRUE(hold.take(&a));
        ASSERT_TRUE(hold.take(&b));
        ASSERT_TRUE(hold.take(nullptr));
        EXPECT_EQ(a.count() + b.count(), 2);
    }
    EXPECT_EQ(a.count() + b.count(), 0);
    {
        UseHold hold;
        ASSERT_TRUE(hold.take(&a));
        hold.keep();
    }
    EXPECT_EQ(a.count(), 1);
}

// A take and a free that start together, round after round: never both win, and one
// always does. (With the check of the count apart from the count, as before, both won.)
TEST(UseCount, ATakeAndAFreeAtOnceNeverBothWin) {
    constexpr int kRounds = 20'000;
    std::vector<UseCount> counts(kRounds);
    std::vector<char> took(kRounds), freed(kRounds);
    std::atomic<int> arrived{0};
    auto meet = [&](int round) {  // both threads start each round together
        arrived.fetch_add(1);
        while (arrived.load() < 2 * (round + 1)) std::this_thread::yield();
    };
    std::thread taker([&] {
        for (int i = 0; i < kRounds; ++i) {
            meet(i);
            took[i] = counts[i].take();
        }
    });
    for (int i = 0; i < kRounds; ++i) {
        meet(i);
        freed[i] = counts[i].begin_free() == UseCount::Free::Begun;
    }
    taker.join();
    int both = 0, neither = 0;
    for (int i = 0; i < kRounds; ++i) {
        both += took[i] && freed[i];
        neither += !took[i] && !freed[i];
    }
    EXPECT_EQ(both, 0);
    EXPECT_EQ(neither, 0);
}

// dat_ep_create on `g`'s IA with `pz` and `recv` (the IA's EVDs for requests and
// connections) on `thread`, held inside the transport until finish().
struct HeldCreate {
    std::atomic<DAT_RETURN> rc{0};
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    std::thread thread;
    bool start(GatedIa &g, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv) {
        g_create_gate.arm();
        thread = std::thread([&g, pz, recv, this] {
            rc.store(g.t->ep_create_func(g.ia, pz, recv, g.evd, g.conn, nullptr, &ep));
        });
        return g_create_gate.wait_inside();
    }
    void finish() {
        g_create_gate.open.store(true);
        if (thread.joinable()) thread.join();
    }
    ~HeldCreate() { finish(); }
};

// dat_ep_create is inside the transport with a PZ no other object uses when another
// thread frees that PZ. Before, the create counted its use only after the transport call,
// so the free saw none and deleted the PZ under the create; the EP then named a freed PZ.
TEST(UseCountEntries, APzFreedDuringAnEndpointCreateIsRefusedAsInUse) {
    GatedIa g("uses-pz-create");
    ASSERT_NE(g.t, nullptr);
    const DAT_PZ_HANDLE pz = g.new_pz();
    ASSERT_NE(pz, DAT_HANDLE_NULL);
    HeldCreate create;
    ASSERT_TRUE(create.start(g, pz, g.evd));
    const DAT_RETURN freed = g.t->pz_free_func(pz);
    create.finish();
    EXPECT_EQ(freed, err(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE))
        << "the PZ was freed under the create that uses it";
    ASSERT_EQ(create.rc.load(), DAT_SUCCESS);
    const DAT_EP_HANDLE ep = create.ep;
    DAT_EP_PARAM p{};
    ASSERT_EQ(g.t->ep_query_func(ep, DAT_EP_FIELD_PZ_HANDLE, &p), DAT_SUCCESS);
    EXPECT_EQ(p.pz_handle, pz);
    EXPECT_EQ(g.t->pz_free_func(pz), err(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE));
    ASSERT_EQ(g.t->ep_free_func(ep), DAT_SUCCESS);
    EXPECT_EQ(g.t->pz_free_func(pz), DAT_SUCCESS) << "the EP's use of the PZ was not given back";
    EXPECT_EQ(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// The same for the EVDs: a dat_evd_free during the create of an EP that names the EVD.
TEST(UseCountEntries, AnEvdFreedDuringAnEndpointCreateIsRefusedAsInUse) {
    GatedIa g("uses-evd-create");
    ASSERT_NE(g.t, nullptr);
    const DAT_EVD_HANDLE recv = g.new_evd(DAT_EVD_DTO_FLAG);
    ASSERT_NE(recv, DAT_HANDLE_NULL);
    HeldCreate create;
    ASSERT_TRUE(create.start(g, g.pz, recv));
    const DAT_RETURN freed = g.t->evd_free_func(recv);
    create.finish();
    EXPECT_EQ(freed, err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE))
        << "the EVD was freed under the create that names it";
    ASSERT_EQ(create.rc.load(), DAT_SUCCESS);
    ASSERT_EQ(g.t->ep_free_func(create.ep), DAT_SUCCESS);
    EXPECT_EQ(g.t->evd_free_func(recv), DAT_SUCCESS);
    EXPECT_EQ(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// A create that fails in the transport gives back the uses it took first.
TEST(UseCountEntries, ACreateTheTransportRefusesGivesItsUsesBack) {
    GatedIa g("uses-create-refused");
    ASSERT_NE(g.t, nullptr);
    const DAT_PZ_HANDLE pz = g.new_pz();
    const DAT_EVD_HANDLE recv = g.new_evd(DAT_EVD_DTO_FLAG);
    ASSERT_NE(pz, DAT_HANDLE_NULL);
    ASSERT_NE(recv, DAT_HANDLE_NULL);
    GatedTransport::refuse_create.store(true);
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    EXPECT_EQ(DAT_GET_TYPE(g.t->ep_create_func(g.ia, pz, recv, recv, g.conn, nullptr, &ep)),
              DAT_INSUFFICIENT_RESOURCES);
    GatedTransport::refuse_create.store(false);
    EXPECT_EQ(g.t->evd_free_func(recv), DAT_SUCCESS);
    EXPECT_EQ(g.t->pz_free_func(pz), DAT_SUCCESS);
    EXPECT_EQ(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// dat_ep_modify moves the EP's receive EVD from A to B while a dat_ep_free of the EP runs
// on another thread: the free waits for the EP's lock and gives back the uses the modify
// left (B's), so both EVDs can be freed. (A modify that checked the EP before the free's
// claim but locks it after the free read its fields now finds it dead: that window has no
// hook to hold a thread in, so this test shows the ordering, not the window.)
TEST(UseCountEntries, AnEndpointFreedDuringAModifyGivesBackTheUsesTheModifyLeft) {
    GatedIa g("uses-modify-free");
    ASSERT_NE(g.t, nullptr);
    const DAT_EVD_HANDLE a = g.new_evd(DAT_EVD_DTO_FLAG), b = g.new_evd(DAT_EVD_DTO_FLAG);
    ASSERT_NE(a, DAT_HANDLE_NULL);
    ASSERT_NE(b, DAT_HANDLE_NULL);
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    ASSERT_EQ(g.t->ep_create_func(g.ia, g.pz, a, g.evd, g.conn, nullptr, &ep), DAT_SUCCESS);
    g_modify_gate.arm();
    std::atomic<DAT_RETURN> modified{0};
    std::thread modifier([&] {
        DAT_EP_PARAM p{};
        p.recv_evd_handle = b;
        modified.store(g.t->ep_modify_func(ep, DAT_EP_FIELD_RECV_EVD_HANDLE, &p));
    });
    ASSERT_TRUE(g_modify_gate.wait_inside());
    std::atomic<DAT_RETURN> freed{0};
    std::thread freer([&] { freed.store(g.t->ep_free_func(ep)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the free is under way
    g_modify_gate.open.store(true);
    modifier.join();
    freer.join();
    EXPECT_EQ(modified.load(), DAT_SUCCESS);
    EXPECT_EQ(freed.load(), DAT_SUCCESS);
    EXPECT_EQ(g.t->evd_free_func(a), DAT_SUCCESS) << "EVD A still counts a use";
    EXPECT_EQ(g.t->evd_free_func(b), DAT_SUCCESS) << "EVD B still counts the EP's use";
    EXPECT_EQ(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// dat_evd_modify_cno racing dat_evd_free: once the free has claimed the EVD (and detached
// its CNO), attaching one is refused. Before, it attached, and the CNO counted a user no
// one would give back: dat_cno_free said IN_USE for ever.
TEST(UseCount, AnEvdWhoseFreeHasBegunAttachesNoCno) {
    static DAT_PROVIDER table{};
    auto *cno = new Cno(&table, nullptr, DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr});
    auto *evd = new Evd(&table, nullptr, 4, DAT_EVD_DTO_FLAG);
    ASSERT_TRUE(evd->retire());                     // dat_evd_free's claim, then:
    ASSERT_EQ(evd->set_cno(nullptr), DAT_SUCCESS);  // its detach
    EXPECT_EQ(DAT_GET_TYPE(evd->set_cno(cno)), DAT_INVALID_HANDLE);
    EXPECT_EQ(cno->users.count(), 0);
    EXPECT_EQ(cno->users.begin_free(), UseCount::Free::Begun);
    delete evd;
    delete cno;
}

// An IA of the gated transport with an LMR over `buf` (remote read and write), and an RMR,
// both in the IA's PZ.
struct WindowSetup {
    GatedIa g;
    alignas(64) unsigned char buf[256]{};
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lmr_ctx = 0;
    DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL;

    explicit WindowSetup(const char *name) : g(name) {
        DAT_REGION_DESCRIPTION region{};
        region.for_va = buf;
        DAT_RMR_CONTEXT rctx = 0;
        DAT_VLEN len = 0;
        DAT_VADDR addr = 0;
        EXPECT_EQ(g.t->lmr_create_func(g.ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof buf, g.pz,
                                       DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lmr_ctx, &rctx,
                                       &len, &addr),
                  DAT_SUCCESS);
        EXPECT_EQ(g.t->rmr_create_func(g.pz, &rmr), DAT_SUCCESS);
    }
    // dat_rmr_bind of the whole LMR through the IA's EP (completion suppressed) on thread
    // `binder`, held inside the transport until the test opens g_bind_gate.
    std::atomic<DAT_RETURN> bound{0};
    DAT_RMR_CONTEXT ctx = 0;
    std::thread binder;
    bool start_held_bind() {
        g_bind_gate.arm();
        binder = std::thread([this] {
            DAT_LMR_TRIPLET t{reinterpret_cast<DAT_VADDR>(buf), sizeof buf, lmr_ctx};
            bound.store(g.t->rmr_bind_func(rmr, lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
                                           g.ep, DAT_RMR_COOKIE{}, DAT_COMPLETION_SUPPRESS_FLAG,
                                           &ctx));
        });
        return g_bind_gate.wait_inside();
    }
    ~WindowSetup() {
        g_bind_gate.open.store(true);
        if (binder.joinable()) binder.join();
    }
};

// dat_rmr_bind is inside the transport (it has checked the LMR and is about to make the
// window's key) when another thread frees the LMR. Before, the free saw no window yet,
// deregistered the LMR and returned, and the bind then made a live remote key into
// memory the application was free to unmap. Now the free is refused: the window is
// counted before the transport makes its key.
TEST(UseCountEntries, AnLmrFreedDuringABindOfAWindowToItIsRefused) {
    WindowSetup w("uses-bind-lmr-free");
    ASSERT_NE(w.g.t, nullptr);
    ASSERT_TRUE(w.start_held_bind());
    const DAT_RETURN freed = w.g.t->lmr_free_func(w.lmr);
    g_bind_gate.open.store(true);
    w.binder.join();
    EXPECT_EQ(DAT_GET_TYPE(freed), DAT_INVALID_STATE) << "the LMR was freed under the bind";
    ASSERT_EQ(w.bound.load(), DAT_SUCCESS);
    EXPECT_NE(w.ctx, 0u);
    EXPECT_EQ(DAT_GET_TYPE(w.g.t->lmr_free_func(w.lmr)), DAT_INVALID_STATE);
    ASSERT_EQ(w.g.t->rmr_free_func(w.rmr), DAT_SUCCESS);
    EXPECT_EQ(w.g.t->lmr_free_func(w.lmr), DAT_SUCCESS) << "the window's use was not given back";
    EXPECT_EQ(w.g.t->ia_close_func(w.g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// dat_rmr_free of the RMR a bind is working on. Before, the free found the window unbound,
// and the bind then bound the freed RMR: its key stayed live for remote access and the LMR
// counted a window no one could unbind (dat_lmr_free refused for ever). Now the free waits
// for the bind and unbinds it.
TEST(UseCountEntries, AnRmrFreedDuringItsBindIsUnboundAndItsLmrCanGo) {
    WindowSetup w("uses-bind-rmr-free");
    ASSERT_NE(w.g.t, nullptr);
    ASSERT_TRUE(w.start_held_bind());
    std::atomic<DAT_RETURN> freed{0};
    std::thread freer([&] { freed.store(w.g.t->rmr_free_func(w.rmr)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the free is under way
    g_bind_gate.open.store(true);
    w.binder.join();
    freer.join();
    EXPECT_EQ(w.bound.load(), DAT_SUCCESS);
    EXPECT_EQ(freed.load(), DAT_SUCCESS);
    EXPECT_EQ(w.g.t->lmr_free_func(w.lmr), DAT_SUCCESS)
        << "the freed RMR's window still counts on the LMR";
    EXPECT_EQ(w.g.t->ia_close_func(w.g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// dat_rsp_create is listening when another thread frees the EP it reserves. The EP is
// reserved before the listen (a request may be accepted the moment it listens), so the
// free finds the reservation and leaves the RSP without an EP, as a free right after the
// create would. Before, the EP was reserved only after the listen: a request accepted
// meanwhile found it UNCONNECTED, and here the freed EP was marked RESERVED and the RSP
// returned naming it.
TEST(UseCountEntries, AnRspReservesItsEndpointBeforeItListens) {
    GatedIa g("uses-rsp-ep-free");
    ASSERT_NE(g.t, nullptr);
    const DAT_EVD_HANDLE cr_evd = g.new_evd(DAT_EVD_CR_FLAG);
    ASSERT_NE(cr_evd, DAT_HANDLE_NULL);
    g_listen_gate.arm();
    std::atomic<DAT_RETURN> created{0};
    DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
    std::thread creator([&] { created.store(g.t->rsp_create_func(g.ia, 77, g.ep, cr_evd, &rsp)); });
    ASSERT_TRUE(g_listen_gate.wait_inside());
    DAT_EP_PARAM ep_param{};
    EXPECT_EQ(g.t->ep_query_func(g.ep, DAT_EP_FIELD_EP_STATE, &ep_param), DAT_SUCCESS);
    EXPECT_EQ(ep_param.ep_state, DAT_EP_STATE_RESERVED) << "listening for an unreserved EP";
    ASSERT_EQ(g.t->ep_free_func(g.ep), DAT_SUCCESS);
    g_listen_gate.open.store(true);
    creator.join();
    ASSERT_EQ(created.load(), DAT_SUCCESS);
    DAT_RSP_PARAM p{};
    ASSERT_EQ(g.t->rsp_query_func(rsp, DAT_RSP_FIELD_ALL, &p), DAT_SUCCESS);
    EXPECT_EQ(p.ep_handle, DAT_HANDLE_NULL) << "the RSP names the freed EP";
    EXPECT_EQ(g.t->rsp_free_func(rsp), DAT_SUCCESS);
    EXPECT_EQ(g.t->evd_free_func(cr_evd), DAT_SUCCESS) << "the RSP still uses its EVD";
    EXPECT_EQ(g.t->ia_close_func(g.ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

}  // namespace

// util's side of the Transport contract, through the DAT_PROVIDER table util builds (no
// libdat2, no sockets): a transport that implements only limits() and address() gets
// DAT_NOT_IMPLEMENTED from util's entry points, util owns and frees every object it hands
// out (an EP only once the transport lets go of it), and each IA reports its own
// attributes. Run under the asan preset, a leak or a double free fails the test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "trace/trace.hpp"
#include "util/deferred_free.hpp"
#include "util/evd.hpp"
#include "util/objects.hpp"
#include "util/provider_table.hpp"
#include "util_test_support.hpp"

using namespace opendat::util;
using opendat::util::test::BareTransport;
using opendat::util::test::Gate;
using opendat::util::test::Instance;

namespace {

Gate g_ep_destroy_gate, g_cr_reject_gate;

// Listens (in name only) and offers connection requests on demand; holds freed EPs until
// told to let go, as a transport with a progress thread does.
class HoldingTransport final : public BareTransport {
  public:
    HoldingTransport() : BareTransport("") {}
    void ep_destroy(Ep *) noexcept override { g_ep_destroy_gate.pass(); }
    void pz_destroy(Pz *) noexcept override { ++g_pz_destroyed; }
    DAT_RETURN sp_listen(Sp *sp) noexcept override {
        if (sp->qual == 0) sp->qual = 4242;
        listening = sp;
        return DAT_SUCCESS;
    }
    void sp_close(Sp *sp) noexcept override {
        if (listening == sp) listening = nullptr;
        ++sp_closed;
    }
    void ep_release(Deferred free_ep) noexcept override { held.park(free_ep); }
    DAT_RETURN cr_reject(Cr *, DAT_COUNT pdata_len, const void *pdata) noexcept override {
        g_cr_reject_gate.pass();
        ++rejected;
        rejected_with.assign(static_cast<const char *>(pdata), static_cast<std::size_t>(pdata_len));
        return DAT_SUCCESS;
    }
    void cr_destroy(Cr *) noexcept override { ++g_destroyed; }
    DAT_RETURN cr_accept(Cr *, Ep *, DAT_COUNT, const void *) noexcept override {
        ++accepted;
        return DAT_SUCCESS;
    }

    // What a transport does when a request arrives: util's CR, offered on the SP's EVD.
    bool offer(const char *pdata) noexcept {
        Cr *cr = cr_new(listening);
        if (cr == nullptr) return false;
        cr->pdata_len = static_cast<DAT_COUNT>(std::strlen(pdata));
        std::memcpy(cr->pdata, pdata, static_cast<std::size_t>(cr->pdata_len));
        return post_cr_arrival(cr);
    }

    Sp *listening = nullptr;
    DeferredFree held;
    int sp_closed = 0, rejected = 0, accepted = 0;
    std::string rejected_with;
    static inline int g_destroyed = 0;  // counted past the transport's end (dat_ia_close)
    static inline std::atomic<int> g_pz_destroyed{0};  // the same
};

HoldingTransport *g_holding = nullptr;

// A request offered on the listening PSP and taken from its EVD `crs`, or DAT_HANDLE_NULL.
DAT_CR_HANDLE offered(const DAT_PROVIDER *t, HoldingTransport *tr, DAT_EVD_HANDLE crs) {
    DAT_EVENT ev{};
    if (!tr->offer("x") || t->evd_dequeue_func(crs, &ev) != DAT_SUCCESS ||
        ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
        return DAT_HANDLE_NULL;
    return ev.event_data.cr_arrival_event_data.cr_handle;
}

// A CR EVD and a PSP on it (any qualifier) with `flags`, on `ia`.
::testing::AssertionResult listening(const DAT_PROVIDER *t, DAT_IA_HANDLE ia, DAT_PSP_FLAGS flags,
                                     DAT_EVD_HANDLE *crs, DAT_PSP_HANDLE *psp) {
    DAT_CONN_QUAL qual = 0;
    if (t->evd_create_func(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, crs) != DAT_SUCCESS ||
        t->psp_create_any_func(ia, &qual, *crs, flags, psp) != DAT_SUCCESS)
        return ::testing::AssertionFailure() << "no PSP";
    return ::testing::AssertionSuccess();
}

DAT_RETURN make_bare(ProviderInstance *inst, Ia *, std::unique_ptr<Transport> *out) {
    *out = std::make_unique<BareTransport>(inst->params);
    return DAT_SUCCESS;
}

DAT_RETURN make_holding(ProviderInstance *, Ia *, std::unique_ptr<Transport> *out) {
    auto t = std::make_unique<HoldingTransport>();
    g_holding = t.get();
    *out = std::move(t);
    return DAT_SUCCESS;
}

std::string mtu_of(const DAT_PROVIDER *t, DAT_IA_HANDLE ia) {
    DAT_PROVIDER_ATTR pa{};
    EXPECT_EQ(t->ia_query_func(ia, nullptr, 0, nullptr, DAT_PROVIDER_FIELD_ALL, &pa), DAT_SUCCESS);
    for (DAT_COUNT i = 0; i < pa.num_provider_specific_attr; ++i)
        if (std::strcmp(pa.provider_specific_attr[i].name, "DAT_IB_TRANSPORT_MTU") == 0)
            return pa.provider_specific_attr[i].value;
    return "";
}

DAT_COUNT max_iov_of(const DAT_PROVIDER *t, DAT_IA_HANDLE ia) {
    DAT_IA_ATTR a{};
    EXPECT_EQ(t->ia_query_func(ia, nullptr, DAT_IA_FIELD_ALL, &a, 0, nullptr), DAT_SUCCESS);
    return a.max_iov_segments_per_dto;
}

constexpr DAT_RETURN kNotImpl = DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED;

}  // namespace

TEST(UtilAttrs, EachIaReportsItsOwnLimitsAndMtu) {
    Instance small("util-attrs-small", "1024 4", &make_bare);
    Instance big("util-attrs-big", "4096 8", &make_bare);
    ASSERT_NE(small.table, nullptr);
    ASSERT_NE(big.table, nullptr);
    DAT_IA_HANDLE a = small.open(), b = big.open();
    // Queried in both orders: whichever IA is asked first must not fix the other's answer.
    EXPECT_EQ(mtu_of(small.table, a), "1024");
    EXPECT_EQ(mtu_of(big.table, b), "4096");
    EXPECT_EQ(mtu_of(small.table, a), "1024");
    EXPECT_EQ(max_iov_of(big.table, b), 8);
    EXPECT_EQ(max_iov_of(small.table, a), 4);
    EXPECT_EQ(small.table->ia_close_func(a, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    EXPECT_EQ(big.table->ia_close_func(b, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

TEST(UtilTransport, WhatTheTransportLeavesOutIsNotImplemented) {
    Instance bare("util-bare", "65536 16", &make_bare);
    ASSERT_NE(bare.table, nullptr);
    const DAT_PROVIDER *t = bare.table;
    DAT_IA_HANDLE ia = bare.open();
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    ASSERT_EQ(t->pz_create_func(ia, &pz), DAT_SUCCESS);
    DAT_EVD_HANDLE dto = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL, cr = DAT_HANDLE_NULL;
    ASSERT_EQ(t->evd_create_func(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
    ASSERT_EQ(t->evd_create_func(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn),
              DAT_SUCCESS);
    ASSERT_EQ(t->evd_create_func(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr), DAT_SUCCESS);
    // No per-EP state by default: the EP exists, its wire calls are not implemented.
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    ASSERT_EQ(t->ep_create_func(ia, pz, dto, dto, conn, nullptr, &ep), DAT_SUCCESS);
    sockaddr_in peer{};
    peer.sin_family = AF_INET;
    peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(t->ep_connect_func(ep, reinterpret_cast<sockaddr *>(&peer), 1, DAT_TIMEOUT_INFINITE,
                                 0, nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              kNotImpl);
    DAT_EP_STATE state{};
    DAT_BOOLEAN recv_idle = DAT_FALSE, req_idle = DAT_FALSE;
    ASSERT_EQ(t->ep_get_status_func(ep, &state, &recv_idle, &req_idle), DAT_SUCCESS);
    EXPECT_EQ(state, DAT_EP_STATE_UNCONNECTED) << "a refused connect leaves the EP as it was";
    EXPECT_EQ(recv_idle, DAT_TRUE);
    EXPECT_EQ(req_idle, DAT_TRUE);
    EXPECT_EQ(t->ep_post_send_func(ep, 0, nullptr, DAT_DTO_COOKIE{}, DAT_COMPLETION_DEFAULT_FLAG),
              kNotImpl);
    EXPECT_EQ(t->ep_post_recv_func(ep, 0, nullptr, DAT_DTO_COOKIE{}, DAT_COMPLETION_DEFAULT_FLAG),
              kNotImpl);
    DAT_RMR_TRIPLET remote{};
    EXPECT_EQ(t->ep_post_rdma_write_func(ep, 0, nullptr, DAT_DTO_COOKIE{}, &remote,
                                         DAT_COMPLETION_DEFAULT_FLAG),
              kNotImpl);
    EXPECT_EQ(t->ep_post_rdma_read_func(ep, 0, nullptr, DAT_DTO_COOKIE{}, &remote,
                                        DAT_COMPLETION_DEFAULT_FLAG),
              kNotImpl);
    EXPECT_EQ(t->ep_disconnect_func(ep, DAT_CLOSE_ABRUPT_FLAG), kNotImpl);
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    EXPECT_EQ(t->psp_create_func(ia, 7, cr, DAT_PSP_CONSUMER_FLAG, &psp), kNotImpl);
    DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
    EXPECT_EQ(t->rsp_create_func(ia, 8, ep, cr, &rsp), kNotImpl);
    // Nothing half-made is left behind: the IA closes gracefully once the consumer's own
    // objects are freed.
    EXPECT_EQ(t->ep_free_func(ep), DAT_SUCCESS);
    for (DAT_EVD_HANDLE e : {dto, conn, cr}) EXPECT_EQ(t->evd_free_func(e), DAT_SUCCESS);
    EXPECT_EQ(t->pz_free_func(pz), DAT_SUCCESS);
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

TEST(UtilOwnership, UtilFreesWhatItAllocatesWhenTheTransportLetsGo) {
    Instance holding("util-holding", "", &make_holding);
    ASSERT_NE(holding.table, nullptr);
    const DAT_PROVIDER *t = holding.table;
    DAT_IA_HANDLE ia = holding.open();
    ASSERT_NE(g_holding, nullptr);
    HoldingTransport *tr = g_holding;

    // An EP stays allocated (its handle dead) while the transport holds it.
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    ASSERT_EQ(t->ep_create_func(ia, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                                DAT_HANDLE_NULL, nullptr, &ep),
              DAT_SUCCESS);
    ASSERT_EQ(t->ep_free_func(ep), DAT_SUCCESS);
    DAT_HANDLE_TYPE type{};
    EXPECT_EQ(DAT_GET_TYPE(t->get_handle_type_func(ep, &type)), DAT_INVALID_HANDLE)
        << "held by the transport, but no longer the consumer's";
    tr->held.drain();  // the transport lets go: util's deleter frees the EP

    // A PSP is freed by util after sp_close; CRs after the transport's answer hook.
    DAT_EVD_HANDLE crs = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    ASSERT_TRUE(listening(t, ia, DAT_PSP_CONSUMER_FLAG, &crs, &psp));
    EXPECT_EQ(static_cast<Psp *>(psp)->qual, 4242u) << "the qualifier the transport chose";
    ASSERT_TRUE(tr->offer("first"));
    DAT_EVENT ev{};
    ASSERT_EQ(t->evd_dequeue_func(crs, &ev), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    EXPECT_EQ(ev.event_data.cr_arrival_event_data.conn_qual, 4242u);
    EXPECT_EQ(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle, psp);
    DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    DAT_CR_PARAM param{};
    ASSERT_EQ(t->cr_query_func(cr, DAT_CR_FIELD_ALL, &param), DAT_SUCCESS);
    ASSERT_EQ(param.private_data_size, 5);
    // The consumer may pass the CR's own private data back: the hook still reads it.
    EXPECT_EQ(t->cr_reject_func(cr, param.private_data_size, param.private_data), DAT_SUCCESS);
    EXPECT_EQ(tr->rejected, 1);
    EXPECT_EQ(tr->rejected_with, "first");

    // A full CR EVD: util frees the CR it could not post and reports the overflow.
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(tr->offer("queued"));
    EXPECT_FALSE(tr->offer("one too many"));

    // An abrupt close: the unanswered CRs go to cr_destroy, the PSP to sp_close, the EP
    // still held to the transport's graveyard; util frees each once its hook returned.
    ASSERT_EQ(t->ep_create_func(ia, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                                DAT_HANDLE_NULL, nullptr, &ep),
              DAT_SUCCESS);
    EXPECT_EQ(
        t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG),
        static_cast<DAT_RETURN>(DAT_CLASS_ERROR | DAT_INVALID_STATE | DAT_INVALID_STATE_IA_IN_USE));
    HoldingTransport::g_destroyed = 0;
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    EXPECT_EQ(HoldingTransport::g_destroyed, 4) << "every unanswered CR handed to cr_destroy";
    g_holding = nullptr;
}

namespace {
// What DeferredFree frees: each records its id in `freed` when deleted.
std::vector<int> freed;
struct FreeProbe {
    int id;
    ~FreeProbe() { freed.push_back(id); }
};
}  // namespace

TEST(UtilDeferredFree, FreesInTheOrderObjectsWereParked) {
    freed.clear();
    {
        DeferredFree d;
        d.park(new FreeProbe{1});
        d.park(new FreeProbe{2});
        EXPECT_TRUE(freed.empty()) << "nothing is freed before drain";
        d.drain();
        EXPECT_EQ(freed, (std::vector<int>{1, 2}));
        d.park(new FreeProbe{3});
    }  // the destructor drains what is left
    EXPECT_EQ(freed, (std::vector<int>{1, 2, 3}));
}

// drain(before): before() runs once, ahead of the first free, and only when something is
// freed (the tcp engine forgets its cached hot connection there: a dispatch of events
// fetched before a connection was retired could have cached it again).
TEST(UtilDeferredFree, DrainRunsItsHookBeforeFreeingAndOnlyThen) {
    freed.clear();
    DeferredFree d;
    int hooks = 0;
    d.drain([&] { ++hooks; });
    EXPECT_EQ(hooks, 0) << "nothing parked, nothing to forget";
    d.park(new FreeProbe{1});
    d.park(new FreeProbe{2});
    d.drain([&] {
        ++hooks;
        EXPECT_TRUE(freed.empty()) << "the hook runs before anything is freed";
    });
    EXPECT_EQ(hooks, 1);
    EXPECT_EQ(freed, (std::vector<int>{1, 2}));
}

namespace {
// Takes every dat_ep_modify of what it built an EP from, and counts them.
class ReshapingTransport final : public BareTransport {
  public:
    ReshapingTransport() : BareTransport("") {}
    DAT_RETURN ep_modify(Ep *, const EpConfig &next) noexcept override {
        ++calls;
        last = next;
        return DAT_SUCCESS;
    }
    int calls = 0;
    EpConfig last;
};
ReshapingTransport *g_reshaping = nullptr;

DAT_RETURN make_reshaping(ProviderInstance *, Ia *, std::unique_ptr<Transport> *out) {
    auto t = std::make_unique<ReshapingTransport>();
    g_reshaping = t.get();
    *out = std::move(t);
    return DAT_SUCCESS;
}

struct EpObjects {
    const DAT_PROVIDER *t;
    DAT_IA_HANDLE ia;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE a = DAT_HANDLE_NULL, b = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    EpObjects(const DAT_PROVIDER *table, DAT_IA_HANDLE h) : t(table), ia(h) {
        EXPECT_EQ(t->pz_create_func(ia, &pz), DAT_SUCCESS);
        EXPECT_EQ(t->evd_create_func(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &a), DAT_SUCCESS);
        EXPECT_EQ(t->evd_create_func(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &b), DAT_SUCCESS);
        EXPECT_EQ(t->evd_create_func(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn),
                  DAT_SUCCESS);
        EXPECT_EQ(t->ep_create_func(ia, pz, a, a, conn, nullptr, &ep), DAT_SUCCESS);
    }
    DAT_EP_PARAM param() const {
        DAT_EP_PARAM p{};
        EXPECT_EQ(t->ep_query_func(ep, DAT_EP_FIELD_ALL, &p), DAT_SUCCESS);
        return p;
    }
};
}  // namespace

// dat_ep_modify of an EVD goes to the transport; the default refuses it and nothing
// changes; a transport that takes it gets the new EVDs, and the use counts move.
TEST(UtilEpModify, EvdChangesGoThroughTheTransport) {
    Instance bare("util-modify-bare", "65536 16", &make_bare);
    Instance shaping("util-modify-shaping", "", &make_reshaping);
    for (const Instance *inst : {&bare, &shaping}) {
        const DAT_PROVIDER *t = inst->table;
        DAT_IA_HANDLE ia = inst->open();
        EpObjects o(t, ia);
        DAT_EP_PARAM p = o.param();
        p.recv_evd_handle = o.b;
        p.request_evd_handle = o.b;
        DAT_RETURN rc = t->ep_modify_func(
            o.ep, DAT_EP_FIELD_RECV_EVD_HANDLE | DAT_EP_FIELD_REQUEST_EVD_HANDLE, &p);
        DAT_EP_PARAM q = o.param();
        if (inst == &bare) {
            EXPECT_EQ(rc, DAT_CLASS_ERROR | DAT_MODEL_NOT_SUPPORTED);
            EXPECT_EQ(q.recv_evd_handle, o.a);
            // `b` is free of users, `a` is not.
            EXPECT_EQ(DAT_GET_TYPE(t->evd_free_func(o.a)), DAT_INVALID_STATE);
            EXPECT_EQ(t->evd_free_func(o.b), DAT_SUCCESS);
            o.b = DAT_HANDLE_NULL;
        } else {
            ASSERT_EQ(rc, DAT_SUCCESS);
            EXPECT_EQ(g_reshaping->calls, 1);
            EXPECT_EQ(static_cast<DAT_EVD_HANDLE>(g_reshaping->last.recv_evd), o.b);
            EXPECT_EQ(q.recv_evd_handle, o.b);
            EXPECT_EQ(q.request_evd_handle, o.b);
            EXPECT_EQ(DAT_GET_TYPE(t->evd_free_func(o.b)), DAT_INVALID_STATE);
            EXPECT_EQ(t->evd_free_func(o.a), DAT_SUCCESS);
            o.a = DAT_HANDLE_NULL;
            // Only the DAT layer uses the message size: the transport is not asked.
            p.ep_attr.max_message_size = 512;
            ASSERT_EQ(t->ep_modify_func(o.ep, DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, &p),
                      DAT_SUCCESS);
            EXPECT_EQ(g_reshaping->calls, 1);
            EXPECT_EQ(o.param().ep_attr.max_message_size, 512u);
            // A queue size is the transport's.
            p.ep_attr.max_recv_dtos = 3;
            ASSERT_EQ(t->ep_modify_func(o.ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p), DAT_SUCCESS);
            EXPECT_EQ(g_reshaping->calls, 2);
            EXPECT_EQ(g_reshaping->last.attr.max_recv_dtos, 3);
        }
        EXPECT_EQ(t->ep_free_func(o.ep), DAT_SUCCESS);
        for (DAT_EVD_HANDLE e : {o.a, o.b, o.conn}) {
            if (e != DAT_HANDLE_NULL) {
                EXPECT_EQ(t->evd_free_func(e), DAT_SUCCESS);
            }
        }
        EXPECT_EQ(t->pz_free_func(o.pz), DAT_SUCCESS);
        EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    }
}

// dat_cno_free through the provider table right after dat_evd_modify_cno detached the CNO,
// while another thread posts events on the EVD (each triggers the CNO after the EVD's lock
// is released): cno_free waits for a trigger still under way. Without that wait TSan
// reports a data race between the trigger and the CNO's destructor here (ASan cannot: a
// handle's memory stays in the never-reused handle arena).
TEST(UtilCno, FreeRightAfterDetachWhileEventsArrive) {
    Instance bare("util-cno-bare", "65536 16", &make_bare);
    const DAT_PROVIDER *t = bare.table;
    DAT_IA_HANDLE ia = bare.open();
    DAT_EVD_HANDLE evd_h = DAT_HANDLE_NULL;
    ASSERT_EQ(t->evd_create_func(ia, 64, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd_h),
              DAT_SUCCESS);
    auto *evd = static_cast<Evd *>(evd_h);
    std::atomic<bool> stop{false};
    std::thread poster([&] {
        DAT_EVENT e{}, out{};
        e.event_number = DAT_SOFTWARE_EVENT;
        while (!stop.load(std::memory_order_relaxed)) {
            evd->post(e);
            t->evd_dequeue_func(evd_h, &out);
        }
    });
    struct Join {  // an ASSERT below must not leave the thread running
        std::atomic<bool> &stop;
        std::thread &th;
        ~Join() {
            stop = true;
            if (th.joinable()) th.join();
        }
    } join{stop, poster};
    for (int round = 0; round < 1000; ++round) {
        DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
        ASSERT_EQ(t->cno_create_func(ia, DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr}, &cno),
                  DAT_SUCCESS);
        ASSERT_EQ(t->evd_modify_cno_func(evd_h, cno), DAT_SUCCESS);
        DAT_EVD_HANDLE which = DAT_HANDLE_NULL;
        ASSERT_EQ(t->cno_wait_func(cno, 1000000, &which), DAT_SUCCESS) << "round " << round;
        EXPECT_EQ(which, evd_h);
        ASSERT_EQ(t->evd_modify_cno_func(evd_h, DAT_HANDLE_NULL), DAT_SUCCESS);
        ASSERT_EQ(t->cno_free_func(cno), DAT_SUCCESS) << "round " << round;
    }
    stop = true;
    poster.join();
    EXPECT_EQ(t->evd_free_func(evd_h), DAT_SUCCESS);
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

// More EVDs owed an agent call at once than AgentCalls has places for at the start (the
// agent is busy meanwhile): each one still gets its call, none is overwritten. A consumer
// that relies on the agent to learn of an EVD's events would wait for ever on a lost one.
struct AgentLog {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;  // the first call waits until the test opens the gate
    std::vector<DAT_EVD_HANDLE> called;
};
void logging_agent(DAT_PVOID ctx, DAT_EVD_HANDLE evd) {
    auto *log = static_cast<AgentLog *>(ctx);
    std::unique_lock lk(log->mu);
    log->called.push_back(evd);
    log->cv.notify_all();
    log->cv.wait(lk, [&] { return log->open; });
}

TEST(UtilCno, EveryEvdOwedAnAgentCallGetsIt) {
    AgentLog log;
    auto calls = AgentCalls::start(DAT_OS_WAIT_PROXY_AGENT{&log, &logging_agent});
    ASSERT_NE(calls, nullptr);
    std::vector<int> evds(41);  // stand-ins: the agent only compares the handles
    calls->request(&evds[0]);
    {
        std::unique_lock lk(log.mu);  // the agent is busy with the first
        ASSERT_TRUE(
            log.cv.wait_for(lk, std::chrono::seconds(5), [&] { return !log.called.empty(); }));
    }
    for (std::size_t i = 1; i < evds.size(); ++i) {
        calls->request(&evds[i]);
        calls->request(&evds[i]);  // owed twice before its call: one call (coalesced)
    }
    {
        std::unique_lock lk(log.mu);
        log.open = true;
        log.cv.notify_all();
        log.cv.wait_for(lk, std::chrono::seconds(5),
                        [&] { return log.called.size() >= evds.size(); });
    }
    calls->stop();
    ASSERT_EQ(log.called.size(), evds.size());
    for (std::size_t i = 0; i < evds.size(); ++i)
        EXPECT_EQ(log.called[i], &evds[i]) << "call " << i;  // in the order they became owed
}

// The sync calls succeed on util's coherent memory; completion_flags_supported is what the
// transport's Limits say (the default: none beyond DAT_COMPLETION_DEFAULT_FLAG).
TEST(UtilMem, LmrSyncAndCompletionFlags) {
    Instance bare("util-sync", "65536 16", &make_bare);
    const DAT_PROVIDER *t = bare.table;
    DAT_IA_HANDLE ia = bare.open();
    DAT_LMR_TRIPLET seg{};
    EXPECT_EQ(t->lmr_sync_rdma_read_func(ia, &seg, 1), DAT_SUCCESS);
    EXPECT_EQ(t->lmr_sync_rdma_write_func(ia, &seg, 1), DAT_SUCCESS);
    EXPECT_EQ(t->lmr_sync_rdma_write_func(ia, nullptr, 2),
              DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2);
    DAT_PROVIDER_ATTR pa{};
    ASSERT_EQ(t->ia_query_func(ia, nullptr, 0, nullptr, DAT_PROVIDER_FIELD_ALL, &pa), DAT_SUCCESS);
    EXPECT_EQ(pa.completion_flags_supported, DAT_COMPLETION_DEFAULT_FLAG);
    EXPECT_EQ(pa.lmr_sync_req, DAT_FALSE);
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

namespace {
// Runs `fn` on a thread and reports whether it returned within `limit`; the thread is
// detached if it did not (a waiter stranded on a freed object: the test has failed).
struct Waiter {
    std::atomic<bool> done{false};
    std::atomic<DAT_RETURN> rc{DAT_SUCCESS};
    std::thread th;
    template <class F>
    explicit Waiter(F fn)
        : th([this, fn] {
              rc = fn();
              done = true;
          }) {}
    bool finished_within(std::chrono::milliseconds limit) {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (!done && std::chrono::steady_clock::now() < end)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (done) {
            th.join();
            return true;
        }
        th.detach();
        return false;
    }
};

// A software EVD of `qlen` on `ia` through the provider table; DAT_HANDLE_NULL on failure.
DAT_EVD_HANDLE software_evd(const DAT_PROVIDER *t, DAT_IA_HANDLE ia, DAT_COUNT qlen) {
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    return t->evd_create_func(ia, qlen, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd) == DAT_SUCCESS
               ? evd
               : DAT_HANDLE_NULL;
}

// A thread in dat_evd_wait(evd, timeout, threshold) through the provider table.
std::unique_ptr<Waiter> evd_waiter(const DAT_PROVIDER *t, DAT_EVD_HANDLE evd,
                                   DAT_TIMEOUT timeout = DAT_TIMEOUT_INFINITE,
                                   DAT_COUNT threshold = 1) {
    return std::make_unique<Waiter>([=] {
        DAT_EVENT ev{};
        return t->evd_wait_func(evd, timeout, threshold, &ev, nullptr);
    });
}
}  // namespace

// dat_evd_free while another thread blocks in dat_evd_wait on the EVD: the EVD (its mutex
// and condition variable) must not be destroyed under the waiter. Either the free is
// refused (the EVD is in use) or the waiter is released; never a waiter left sleeping on
// freed memory, never a crash. TSan reports the destroyed mutex/condition variable.
TEST(UtilEvd, FreeWhileAThreadWaitsOnIt) {
    Instance bare("util-evd-free-wait", "65536 16", &make_bare);
    const DAT_PROVIDER *t = bare.table;
    DAT_IA_HANDLE ia = bare.open();
    DAT_EVD_HANDLE evd = software_evd(t, ia, 4);
    ASSERT_NE(evd, DAT_HANDLE_NULL);
    auto w = evd_waiter(t, evd);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the waiter sleeps
    const DAT_RETURN rc = t->evd_free_func(evd);
    EXPECT_EQ(rc, DAT_SUCCESS) << "nothing else names the EVD";
    ASSERT_TRUE(w->finished_within(std::chrono::seconds(5)))
        << "dat_evd_free returned 0x" << std::hex << rc << " and the waiter never came back";
    EXPECT_EQ(DAT_GET_TYPE(w->rc.load()), DAT_INTERRUPTED_CALL) << std::hex << w->rc.load();
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

// The same for dat_cno_free and a thread in dat_cno_wait.
TEST(UtilCno, FreeWhileAThreadWaitsOnIt) {
    Instance bare("util-cno-free-wait", "65536 16", &make_bare);
    const DAT_PROVIDER *t = bare.table;
    DAT_IA_HANDLE ia = bare.open();
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    ASSERT_EQ(t->cno_create_func(ia, DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr}, &cno), DAT_SUCCESS);
    Waiter w([t, cno] {
        DAT_EVD_HANDLE which = DAT_HANDLE_NULL;
        return t->cno_wait_func(cno, DAT_TIMEOUT_INFINITE, &which);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    DAT_RETURN rc = t->cno_free_func(cno);
    EXPECT_EQ(rc, DAT_SUCCESS) << "nothing else names the CNO";
    ASSERT_TRUE(w.finished_within(std::chrono::seconds(5)))
        << "dat_cno_free returned 0x" << std::hex << rc << " and the waiter never came back";
    EXPECT_EQ(DAT_GET_TYPE(w.rc.load()), DAT_INTERRUPTED_CALL) << std::hex << w.rc.load();
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

// An abrupt dat_ia_close while a thread waits on one of its EVDs: the close frees the EVD
// (DAT: an abrupt close destroys every child), so the waiter must be released first.
TEST(UtilEvd, AbruptIaCloseWhileAThreadWaits) {
    Instance bare("util-evd-close-wait", "65536 16", &make_bare);
    const DAT_PROVIDER *t = bare.table;
    DAT_IA_HANDLE ia = bare.open();
    DAT_EVD_HANDLE evd = software_evd(t, ia, 4);
    ASSERT_NE(evd, DAT_HANDLE_NULL);
    auto w = evd_waiter(t, evd);
    // ... and one on the async EVD the IA made for itself (deleted by any dat_ia_close).
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    ASSERT_EQ(t->ia_query_func(ia, &async, 0, nullptr, 0, nullptr), DAT_SUCCESS);
    auto wa = evd_waiter(t, async);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    ASSERT_TRUE(w->finished_within(std::chrono::seconds(5))) << "the waiter never came back";
    EXPECT_EQ(DAT_GET_TYPE(w->rc.load()), DAT_INTERRUPTED_CALL) << std::hex << w->rc.load();
    ASSERT_TRUE(wa->finished_within(std::chrono::seconds(5)))
        << "the async EVD's waiter never came back";
    EXPECT_EQ(DAT_GET_TYPE(wa->rc.load()), DAT_INTERRUPTED_CALL) << std::hex << wa->rc.load();
}

// A consumer's async EVD (dat_ia_open with an EVD of another IA): the IA opened with it
// uses it until it closes. Freeing it meanwhile left that IA's async_evd naming a deleted
// EVD, which its next asynchronous error is posted to (a write into the freed ring). And
// only an EVD made with DAT_EVD_ASYNC_FLAG can be one.
TEST(UtilEvd, ConsumerAsyncEvdStaysInUseWhileTheIaIsOpen) {
    Instance bare("util-async-evd", "65536 16", &make_bare);
    const DAT_PROVIDER *t = bare.table;
    DAT_IA_HANDLE a = bare.open();
    DAT_EVD_HANDLE dto = DAT_HANDLE_NULL, async = DAT_HANDLE_NULL;
    ASSERT_EQ(t->evd_create_func(a, 4, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
    ASSERT_EQ(t->evd_create_func(a, 4, DAT_HANDLE_NULL, DAT_EVD_ASYNC_FLAG, &async), DAT_SUCCESS);
    DAT_IA_HANDLE b = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE given = dto;
    EXPECT_EQ(DAT_GET_TYPE(t->ia_open_func(const_cast<char *>(bare.info.ia_name), 4, &given, &b)),
              DAT_INVALID_HANDLE)
        << "a DTO EVD is no async EVD";
    if (b != DAT_HANDLE_NULL) {
        EXPECT_EQ(t->ia_close_func(b, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        b = DAT_HANDLE_NULL;
    }
    given = async;
    ASSERT_EQ(t->ia_open_func(const_cast<char *>(bare.info.ia_name), 4, &given, &b), DAT_SUCCESS);
    EXPECT_EQ(DAT_GET_TYPE(t->evd_free_func(async)), DAT_INVALID_STATE)
        << "IA b still posts its asynchronous errors there";
    // What b does on an asynchronous error: post to its async EVD (a freed one, before).
    post_async(static_cast<Ia *>(b), DAT_ASYNC_ERROR_IA_CATASTROPHIC, b);
    DAT_EVENT ev{};
    EXPECT_EQ(t->evd_dequeue_func(async, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_IA_CATASTROPHIC);
    EXPECT_EQ(t->ia_close_func(b, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    EXPECT_EQ(t->evd_free_func(async), DAT_SUCCESS) << "b closed: free again";
    EXPECT_EQ(t->evd_free_func(dto), DAT_SUCCESS);
    EXPECT_EQ(t->ia_close_func(a, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

// IA b was opened with an EVD of IA a as its async EVD: even an abrupt close of a is
// refused while b is open (b would post into a freed EVD, which would name a freed IA and
// transport), with an error line; once b has closed, a's abrupt close frees that EVD too.
TEST(UtilEvd, AbruptCloseOfTheIaOfAnotherIasAsyncEvdIsRefused) {
    Instance bare("util-async-lent", "65536 16", &make_bare);
    const DAT_PROVIDER *t = bare.table;
    DAT_IA_HANDLE a = bare.open();
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    const auto flags = static_cast<DAT_EVD_FLAGS>(DAT_EVD_ASYNC_FLAG | DAT_EVD_DTO_FLAG);
    ASSERT_EQ(t->evd_create_func(a, 4, DAT_HANDLE_NULL, flags, &async), DAT_SUCCESS);
    DAT_IA_HANDLE b = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE given = async;
    ASSERT_EQ(t->ia_open_func(const_cast<char *>(bare.info.ia_name), 4, &given, &b), DAT_SUCCESS);
    testing::internal::CaptureStderr();
    const DAT_RETURN rc = t->ia_close_func(a, DAT_CLOSE_ABRUPT_FLAG);
    const std::string said = testing::internal::GetCapturedStderr();
    EXPECT_EQ(DAT_GET_TYPE(rc), DAT_INVALID_STATE) << std::hex << rc;
    EXPECT_EQ(DAT_GET_SUBTYPE(rc), DAT_INVALID_STATE_IA_IN_USE) << std::hex << rc;
    EXPECT_NE(said.find("another open IA's async EVD"), std::string::npos) << said;
    // a and its EVD still work: b's asynchronous error arrives there.
    post_async(static_cast<Ia *>(b), DAT_ASYNC_ERROR_IA_CATASTROPHIC, b);
    DAT_EVENT ev{};
    EXPECT_EQ(t->evd_dequeue_func(async, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_ASYNC_ERROR_IA_CATASTROPHIC);
    EXPECT_EQ(t->ia_close_func(b, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    EXPECT_EQ(t->ia_close_func(a, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS) << "b closed: a may go";

    // The same with the async EVD dat_ia_open made for a (no child of a's, and not counted
    // in its objects): even a graceful close of a is refused while c uses it.
    DAT_EVD_HANDLE made = DAT_HANDLE_NULL;
    DAT_IA_HANDLE a2 = DAT_HANDLE_NULL, c = DAT_HANDLE_NULL;
    ASSERT_EQ(t->ia_open_func(const_cast<char *>(bare.info.ia_name), 4, &made, &a2), DAT_SUCCESS);
    ASSERT_NE(made, DAT_HANDLE_NULL);
    ASSERT_EQ(t->ia_open_func(const_cast<char *>(bare.info.ia_name), 4, &made, &c), DAT_SUCCESS);
    const DAT_RETURN rc2 = t->ia_close_func(a2, DAT_CLOSE_GRACEFUL_FLAG);
    EXPECT_EQ(DAT_GET_SUBTYPE(rc2), DAT_INVALID_STATE_IA_IN_USE) << std::hex << rc2;
    EXPECT_EQ(t->ia_close_func(c, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    EXPECT_EQ(t->ia_close_func(a2, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS) << "c closed: a2 may go";
}

// dat_evd_resize below the threshold a thread already waits for: the wait can never be met
// (and an infinite one never ends). A resize while a thread waits is refused
// (DAT_INVALID_STATE), as the reference's is; afterwards it goes through.
TEST(UtilEvd, ResizeUnderAWaiterIsRefused) {
    Instance bare("util-evd-resize-wait", "65536 16", &make_bare);
    const DAT_PROVIDER *t = bare.table;
    DAT_IA_HANDLE ia = bare.open();
    DAT_EVD_HANDLE evd = software_evd(t, ia, 8);
    ASSERT_NE(evd, DAT_HANDLE_NULL);
    auto w = evd_waiter(t, evd, 3'000'000, 4);  // four events, within 3 s
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const DAT_RETURN rc = t->evd_resize_func(evd, 2);
    EXPECT_EQ(DAT_GET_TYPE(rc), DAT_INVALID_STATE) << "resized under a waiter for 4 events";
    // The EVD's own resize refuses it too: a waiter that came in after the entry point's
    // look (has_waiter) is seen there, under the EVD's lock.
    EXPECT_EQ(DAT_GET_TYPE(static_cast<Evd *>(evd)->resize(2)), DAT_INVALID_STATE)
        << "the ring shrank under a waiter for 4 events";
    // Growing cannot strand it (util grows the IA's async EVD this way for SRQ endpoints).
    EXPECT_EQ(static_cast<Evd *>(evd)->resize(16), DAT_SUCCESS);
    DAT_EVENT se{};
    se.event_number = DAT_SOFTWARE_EVENT;
    for (int i = 0; i < 4; ++i) t->evd_post_se_func(evd, &se);
    ASSERT_TRUE(w->finished_within(std::chrono::seconds(5)));
    EXPECT_EQ(w->rc.load(), DAT_SUCCESS) << std::hex << w->rc.load();
    DAT_EVENT ev{};
    while (t->evd_dequeue_func(evd, &ev) == DAT_SUCCESS) {
    }
    EXPECT_EQ(t->evd_resize_func(evd, 2), DAT_SUCCESS);
    EXPECT_EQ(t->evd_free_func(evd), DAT_SUCCESS);
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

// A full EVD: dat_evd_post_se tells its caller (DAT_QUEUE_FULL), who may retry at will, so
// it writes no error line (a busy producer used to print one per try); an event the
// provider loses (a DTO completion) is an error line.
TEST(UtilEvd, FullEvdRefusesASoftwareEventWithoutAnErrorLine) {
    char path[] = "/tmp/opendat-evd-full-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    setenv("DAPL_TRACE_DEST", path, 1);
    setenv("DAPL_TRACE_LEVEL", "1", 1);  // the default: errors only
    opendat::trace::dapl_domain().configure_from_environment();
    {
        Instance bare("util-evd-full", "65536 16", &make_bare);
        const DAT_PROVIDER *t = bare.table;
        DAT_IA_HANDLE ia = bare.open();
        DAT_EVD_HANDLE evd = software_evd(t, ia, 2);
        ASSERT_NE(evd, DAT_HANDLE_NULL);
        DAT_EVD_PARAM p{};
        ASSERT_EQ(t->evd_query_func(evd, DAT_EVD_FIELD_EVD_QLEN, &p), DAT_SUCCESS);
        DAT_EVENT se{};
        se.event_number = DAT_SOFTWARE_EVENT;
        for (DAT_COUNT i = 0; i < p.evd_qlen; ++i)
            ASSERT_EQ(t->evd_post_se_func(evd, &se), DAT_SUCCESS);
        for (int i = 0; i < 100; ++i)
            EXPECT_EQ(DAT_GET_TYPE(t->evd_post_se_func(evd, &se)), DAT_QUEUE_FULL);
        DAT_EVENT dto{};
        dto.event_number = DAT_DTO_COMPLETION_EVENT;
        EXPECT_FALSE(static_cast<Evd *>(evd)->post(dto)) << "the EVD is full";
        DAT_EVENT ev{};
        while (t->evd_dequeue_func(evd, &ev) == DAT_SUCCESS) {
        }
        EXPECT_EQ(t->evd_free_func(evd), DAT_SUCCESS);
        EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    }
    unsetenv("DAPL_TRACE_DEST");
    unsetenv("DAPL_TRACE_LEVEL");
    opendat::trace::dapl_domain().configure_from_environment();
    std::string text;
    if (FILE *f = std::fopen(path, "r")) {
        char buf[4096];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
        std::fclose(f);
    }
    std::remove(path);
    // Nothing about the refused software events (event 0x10001) at the default level.
    EXPECT_EQ(text.find("0x10001"), std::string::npos) << text.substr(0, 400);
    EXPECT_EQ(text.find("software event"), std::string::npos) << text.substr(0, 400);
    std::size_t lines = 0;
    for (std::size_t at = text.find("overflow, event 0x1 dropped"); at != std::string::npos;
         at = text.find("overflow, event 0x1 dropped", at + 1))
        ++lines;
    EXPECT_EQ(lines, 1u) << "the lost DTO completion: one error line\n" << text;
}

namespace {
// Runs `first` and `second` on two threads released at the same instant; both results.
template <class F, class G>
std::pair<DAT_RETURN, DAT_RETURN> at_once(F first, G second) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    DAT_RETURN a = 0, b = 0;
    auto run = [&](auto call, DAT_RETURN *rc) {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        *rc = call();
    };
    std::thread t1(run, first, &a), t2(run, second, &b);
    while (ready.load() != 2) {
    }
    go.store(true, std::memory_order_release);
    t1.join();
    t2.join();
    return {a, b};
}

// `free_one` on two threads at once (a consumer's misuse: one handle freed twice at once).
template <class F>
std::pair<DAT_RETURN, DAT_RETURN> free_twice_at_once(F free_one) {
    return at_once(free_one, free_one);
}

// One of the two frees freed it; the other was told the handle is no longer valid.
::testing::AssertionResult freed_once(const char *what, std::pair<DAT_RETURN, DAT_RETURN> r) {
    const bool one_ok = (r.first == DAT_SUCCESS) != (r.second == DAT_SUCCESS);
    const DAT_RETURN other = r.first == DAT_SUCCESS ? r.second : r.first;
    if (one_ok && DAT_GET_TYPE(other) == DAT_INVALID_HANDLE) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << what << ": 0x" << std::hex << r.first << " and 0x" << r.second;
}
}  // namespace

// The same handle freed on two threads at once, for every kind of object util frees (and
// a connection request answered twice): exactly one call frees it, the other answers
// DAT_INVALID_HANDLE (util::claim). Before, both could pass the handle check and destroy
// the object twice: the transport's teardown twice, the IA's object count off by one.
TEST(UtilHandles, TwoFreesOfOneHandleAtOnceFreeItOnce) {
    Instance holding("util-free-twice", "", &make_holding);
    ASSERT_NE(holding.table, nullptr);
    const DAT_PROVIDER *t = holding.table;
    DAT_IA_HANDLE ia = holding.open();
    HoldingTransport *tr = g_holding;
    ASSERT_NE(tr, nullptr);
    DAT_EVD_HANDLE crs = DAT_HANDLE_NULL;
    ASSERT_EQ(t->evd_create_func(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &crs), DAT_SUCCESS);
    const int sp_closed = tr->sp_closed;
    constexpr int kRounds = 100;
    for (int i = 0; i < kRounds; ++i) {
        DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
        ASSERT_EQ(t->pz_create_func(ia, &pz), DAT_SUCCESS);
        ASSERT_TRUE(freed_once("PZ", free_twice_at_once([&] { return t->pz_free_func(pz); })));
        DAT_EVD_HANDLE evd = software_evd(t, ia, 4);
        ASSERT_NE(evd, DAT_HANDLE_NULL);
        ASSERT_TRUE(freed_once("EVD", free_twice_at_once([&] { return t->evd_free_func(evd); })));
        DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
        ASSERT_EQ(t->cno_create_func(ia, DAT_OS_WAIT_PROXY_AGENT{nullptr, nullptr}, &cno),
                  DAT_SUCCESS);
        ASSERT_TRUE(freed_once("CNO", free_twice_at_once([&] { return t->cno_free_func(cno); })));
        DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
        ASSERT_EQ(t->ep_create_func(ia, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                                    DAT_HANDLE_NULL, nullptr, &ep),
                  DAT_SUCCESS);
        ASSERT_TRUE(freed_once("EP", free_twice_at_once([&] { return t->ep_free_func(ep); })));
        DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
        DAT_CONN_QUAL qual = 0;
        ASSERT_EQ(t->psp_create_any_func(ia, &qual, crs, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
        DAT_CR_HANDLE cr = offered(t, tr, crs);
        ASSERT_NE(cr, DAT_HANDLE_NULL);
        ASSERT_TRUE(freed_once(
            "CR", free_twice_at_once([&] { return t->cr_reject_func(cr, 0, nullptr); })));
        ASSERT_TRUE(freed_once("PSP", free_twice_at_once([&] { return t->psp_free_func(psp); })));
    }
    EXPECT_EQ(tr->rejected, kRounds) << "each request answered once";
    EXPECT_EQ(tr->sp_closed - sp_closed, kRounds) << "each PSP closed once";
    tr->held.drain();
    EXPECT_EQ(t->evd_free_func(crs), DAT_SUCCESS);
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS)
        << "every object counted out once";
    g_holding = nullptr;
}

// dat_cr_accept racing dat_cr_reject on a request that came with an EP the provider made
// (DAT_PSP_PROVIDER_FLAG): one answer wins. When the accept wins, the provider's EP is
// the consumer's from then on: the losing reject must not free it (its success path
// does). When the reject wins, the EP the accept named is left as it was.
TEST(UtilHandles, AcceptRacingRejectLeavesTheLosersEndpointsAlone) {
    Instance holding("util-accept-reject", "", &make_holding);
    ASSERT_NE(holding.table, nullptr);
    const DAT_PROVIDER *t = holding.table;
    DAT_IA_HANDLE ia = holding.open();
    HoldingTransport *tr = g_holding;
    ASSERT_NE(tr, nullptr);
    DAT_EVD_HANDLE crs = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL, dto = DAT_HANDLE_NULL;
    ASSERT_EQ(t->evd_create_func(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &crs), DAT_SUCCESS);
    ASSERT_EQ(t->evd_create_func(ia, 64, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn),
              DAT_SUCCESS);
    ASSERT_EQ(t->evd_create_func(ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    ASSERT_EQ(t->pz_create_func(ia, &pz), DAT_SUCCESS);
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(t->psp_create_any_func(ia, &qual, crs, DAT_PSP_PROVIDER_FLAG, &psp), DAT_SUCCESS);
    int accept_won = 0, reject_won = 0;
    for (int i = 0; i < 100; ++i) {
        DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
        ASSERT_EQ(t->ep_create_func(ia, pz, dto, dto, conn, nullptr, &ep), DAT_SUCCESS);
        DAT_CR_HANDLE cr = offered(t, tr, crs);
        ASSERT_NE(cr, DAT_HANDLE_NULL);
        DAT_CR_PARAM param{};
        ASSERT_EQ(t->cr_query_func(cr, DAT_CR_FIELD_ALL, &param), DAT_SUCCESS);
        DAT_EP_HANDLE mine = param.local_ep_handle;  // the provider's EP
        ASSERT_NE(mine, DAT_HANDLE_NULL);
        // The accept checks more before it claims: the reject starts 0-9 us later, so
        // that either may win.
        const auto delay = std::chrono::microseconds(i % 10);
        const auto [acc, rej] = at_once([&] { return t->cr_accept_func(cr, ep, 0, nullptr); },
                                        [&] {
                                            const auto until =
                                                std::chrono::steady_clock::now() + delay;
                                            while (std::chrono::steady_clock::now() < until) {
                                            }
                                            return t->cr_reject_func(cr, 0, nullptr);
                                        });
        DAT_HANDLE_TYPE type{};
        DAT_EP_STATE state{};
        if (acc == DAT_SUCCESS) {
            ++accept_won;
            ASSERT_EQ(DAT_GET_TYPE(rej), DAT_INVALID_HANDLE) << std::hex << rej;
            ASSERT_EQ(t->get_handle_type_func(mine, &type), DAT_SUCCESS)
                << "the losing reject freed the provider's EP, now the consumer's";
            ASSERT_EQ(t->ep_free_func(mine), DAT_SUCCESS);
        } else {
            ++reject_won;
            ASSERT_EQ(rej, DAT_SUCCESS) << std::hex << rej;
            ASSERT_EQ(DAT_GET_TYPE(acc), DAT_INVALID_HANDLE) << std::hex << acc;
            ASSERT_EQ(t->ep_get_status_func(ep, &state, nullptr, nullptr), DAT_SUCCESS);
            ASSERT_EQ(state, DAT_EP_STATE_UNCONNECTED) << "the losing accept changed its EP";
            ASSERT_NE(t->get_handle_type_func(mine, &type), DAT_SUCCESS)
                << "the winning reject frees the provider's EP";
        }
        ASSERT_EQ(t->ep_free_func(ep), DAT_SUCCESS);
    }
    std::printf("[ accept vs reject ] accept won %d, reject won %d of 100\n", accept_won,
                reject_won);
    EXPECT_EQ(tr->accepted, accept_won);
    EXPECT_EQ(tr->rejected, reject_won);
    tr->held.drain();
    EXPECT_EQ(t->psp_free_func(psp), DAT_SUCCESS);
    for (DAT_EVD_HANDLE e : {crs, conn, dto}) EXPECT_EQ(t->evd_free_func(e), DAT_SUCCESS);
    EXPECT_EQ(t->pz_free_func(pz), DAT_SUCCESS);
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS)
        << "every object counted out once";
    g_holding = nullptr;
}

namespace {
// Runs `call` on a thread of its own; finished() says whether it has returned.
class Bg {
  public:
    template <class F>
    explicit Bg(F call)
        : t_([this, call] {
              rc_.store(call());
              done_.store(true);
          }) {}
    ~Bg() {
        if (t_.joinable()) t_.join();
    }
    bool finished() const noexcept { return done_.load(); }
    DAT_RETURN join() {
        t_.join();
        return rc_.load();
    }

  private:
    std::atomic<DAT_RETURN> rc_{0};
    std::atomic<bool> done_{false};
    std::thread t_;
};

// With `app` held at `gate` inside the transport: an abrupt close of `ia` begun now has not
// returned 300 ms later; once the gate opens, both end with DAT_SUCCESS.
void expect_close_waits(const DAT_PROVIDER *t, DAT_IA_HANDLE ia, Gate *gate, Bg *app,
                        const char *what) {
    Bg close([&] { return t->ia_close_func(ia, DAT_CLOSE_ABRUPT_FLAG); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(close.finished()) << "the IA closed while " << what << " was still under way";
    gate->open.store(true);
    EXPECT_EQ(app->join(), DAT_SUCCESS);
    EXPECT_EQ(close.join(), DAT_SUCCESS);
}
}  // namespace

// An abrupt dat_ia_close while another thread is inside dat_ep_free of one of its EPs (a
// consumer's misuse, but a close must not make it worse): the close's own free of that EP
// loses the claim. Before, the close went on at once: the PZ the EP still counted as a
// user was refused (DAT_INVALID_STATE) and leaked, and the transport was deleted under the
// free still inside it. Now the close waits for that free, then frees the PZ.
TEST(UtilHandles, AnAbruptCloseWaitsForAFreeUnderWayOnAnotherThread) {
    Instance holding("util-close-racing-free", "", &make_holding);
    ASSERT_NE(holding.table, nullptr);
    const DAT_PROVIDER *t = holding.table;
    DAT_IA_HANDLE ia = holding.open();
    DAT_EVD_HANDLE conn = DAT_HANDLE_NULL, dto = DAT_HANDLE_NULL;
    ASSERT_EQ(t->evd_create_func(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn),
              DAT_SUCCESS);
    ASSERT_EQ(t->evd_create_func(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    ASSERT_EQ(t->pz_create_func(ia, &pz), DAT_SUCCESS);
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    ASSERT_EQ(t->ep_create_func(ia, pz, dto, dto, conn, nullptr, &ep), DAT_SUCCESS);
    const int pz_destroyed = HoldingTransport::g_pz_destroyed.load();

    g_ep_destroy_gate.arm();
    Bg app([&] { return t->ep_free_func(ep); });
    ASSERT_TRUE(g_ep_destroy_gate.wait_inside()) << "the free never reached the transport";
    expect_close_waits(t, ia, &g_ep_destroy_gate, &app, "its EP's free");
    EXPECT_EQ(HoldingTransport::g_pz_destroyed.load() - pz_destroyed, 1)
        << "the PZ the EP used was left behind";
    g_holding = nullptr;
}

// The same for a connection request: an abrupt close while the consumer's dat_cr_reject is
// inside the transport. Before, the close skipped the request (its claim lost) and deleted
// the transport under the answer. Now it waits; the request is answered once, by the
// consumer, and not also handed back to the transport.
TEST(UtilHandles, AnAbruptCloseWaitsForAnAnswerUnderWayOnAnotherThread) {
    Instance holding("util-close-racing-answer", "", &make_holding);
    ASSERT_NE(holding.table, nullptr);
    const DAT_PROVIDER *t = holding.table;
    DAT_IA_HANDLE ia = holding.open();
    HoldingTransport *tr = g_holding;
    ASSERT_NE(tr, nullptr);
    DAT_EVD_HANDLE crs = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    ASSERT_TRUE(listening(t, ia, DAT_PSP_CONSUMER_FLAG, &crs, &psp));
    DAT_CR_HANDLE cr = offered(t, tr, crs);
    ASSERT_NE(cr, DAT_HANDLE_NULL);
    const int destroyed = HoldingTransport::g_destroyed;

    g_cr_reject_gate.arm();
    Bg app([&] { return t->cr_reject_func(cr, 0, nullptr); });
    ASSERT_TRUE(g_cr_reject_gate.wait_inside()) << "the answer never reached the transport";
    expect_close_waits(t, ia, &g_cr_reject_gate, &app, "a request's answer");
    EXPECT_EQ(HoldingTransport::g_destroyed, destroyed) << "the answered request handed back too";
    g_holding = nullptr;
}

// Two dat_ia_close calls of one IA at once (a consumer's misuse): one closes it, the other
// is told the handle is gone. Before, both passed the handle check and tore it down twice.
TEST(UtilHandles, TwoClosesOfOneIaAtOnceCloseItOnce) {
    Instance bare("util-close-twice", "65536 16", &make_bare);
    const DAT_PROVIDER *t = bare.table;
    for (int i = 0; i < 50; ++i) {
        DAT_IA_HANDLE ia = bare.open();
        DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
        ASSERT_EQ(t->pz_create_func(ia, &pz), DAT_SUCCESS);
        ASSERT_NE(software_evd(t, ia, 4), DAT_HANDLE_NULL);
        ASSERT_TRUE(freed_once(
            "IA", free_twice_at_once([&] { return t->ia_close_func(ia, DAT_CLOSE_ABRUPT_FLAG); })));
    }
}

// Two first looks at once at a request that wants an EP made for it (DAT_PSP_PROVIDER_FLAG):
// dat_cr_query on two threads. One EP is made and both see it. Before, each could make
// one: the request named the second, and the first stayed the IA's, unknown to the
// consumer, until the IA closed (a graceful close was refused).
TEST(UtilHandles, TwoFirstLooksAtARequestMakeOneEndpoint) {
    Instance holding("util-cr-two-looks", "", &make_holding);
    ASSERT_NE(holding.table, nullptr);
    const DAT_PROVIDER *t = holding.table;
    DAT_IA_HANDLE ia = holding.open();
    HoldingTransport *tr = g_holding;
    ASSERT_NE(tr, nullptr);
    DAT_EVD_HANDLE crs = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    ASSERT_TRUE(listening(t, ia, DAT_PSP_PROVIDER_FLAG, &crs, &psp));
    for (int i = 0; i < 100; ++i) {
        DAT_CR_HANDLE cr = offered(t, tr, crs);
        ASSERT_NE(cr, DAT_HANDLE_NULL);
        DAT_CR_PARAM a{}, b{};
        const auto [ra, rb] = at_once([&] { return t->cr_query_func(cr, DAT_CR_FIELD_ALL, &a); },
                                      [&] { return t->cr_query_func(cr, DAT_CR_FIELD_ALL, &b); });
        ASSERT_EQ(ra, DAT_SUCCESS);
        ASSERT_EQ(rb, DAT_SUCCESS);
        ASSERT_NE(a.local_ep_handle, DAT_HANDLE_NULL);
        ASSERT_EQ(a.local_ep_handle, b.local_ep_handle) << "round " << i << ": two EPs made";
        ASSERT_EQ(t->cr_reject_func(cr, 0, nullptr), DAT_SUCCESS);  // frees the one EP
    }
    tr->held.drain();
    EXPECT_EQ(t->psp_free_func(psp), DAT_SUCCESS);
    EXPECT_EQ(t->evd_free_func(crs), DAT_SUCCESS);
    EXPECT_EQ(t->ia_close_func(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS) << "an EP was left";
    g_holding = nullptr;
}

// A transport that holds a thread inside a post, an inline progress or an EP create until
// the test opens its gate (util_test_support.hpp's Gate), and an IA of it: for tests of
// what a call on another thread does meanwhile (grace_test.cpp, use_count_test.cpp).
#pragma once

#include <dat2/udat.h>

#include <atomic>
#include <memory>

#include <gtest/gtest.h>

#include "util/handle_arena.hpp"
#include "util/objects.hpp"
#include "util_test_support.hpp"

namespace opendat::util::test {

// Gates that hold a thread inside a transport call until opened (util_test_support.hpp).
inline Gate g_post_gate, g_progress_gate, g_create_gate, g_modify_gate, g_bind_gate, g_listen_gate;
inline std::atomic<bool> g_transport_gone{false};
// What the held post read of its EP once let go: the EP's attribute, alive.
inline std::atomic<DAT_COUNT> g_post_read{-1};

class GatedTransport final : public BareTransport {
  public:
    GatedTransport() : BareTransport("") {}
    ~GatedTransport() override { g_transport_gone.store(true); }
    DAT_RETURN ep_post_send(Ep *ep, DAT_COUNT, const DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
                            DAT_COMPLETION_FLAGS) noexcept override {
        g_post_gate.pass();
        g_post_read.store(ep->attr.max_request_dtos);
        return DAT_SUCCESS;
    }
    void progress_inline() noexcept override { g_progress_gate.pass(); }
    DAT_RETURN ep_create(Ep *) noexcept override {
        g_create_gate.pass();
        if (refuse_create.load()) return DAT_INSUFFICIENT_RESOURCES;
        ++eps;
        return DAT_SUCCESS;
    }
    void ep_destroy(Ep *) noexcept override { --eps; }
    // util's software windows, once the gate lets the bind go on.
    DAT_RETURN rmr_bind(Rmr *rmr, Lmr *lmr, const DAT_LMR_TRIPLET *t, DAT_MEM_PRIV_FLAGS priv,
                        DAT_VA_TYPE va_type, Ep *ep, DAT_RMR_COOKIE cookie,
                        DAT_COMPLETION_FLAGS flags) noexcept override {
        g_bind_gate.pass();
        return Transport::rmr_bind(rmr, lmr, t, priv, va_type, ep, cookie, flags);
    }
    // A listen that takes nothing (no requests come).
    DAT_RETURN sp_listen(Sp *) noexcept override {
        g_listen_gate.pass();
        return DAT_SUCCESS;
    }
    // Any change dat_ep_modify asks for is taken (BareTransport's default refuses).
    DAT_RETURN ep_modify(Ep *, const EpConfig &) noexcept override {
        g_modify_gate.pass();
        return DAT_SUCCESS;
    }
    static inline std::atomic<int> eps{0};  // made and not destroyed (read past the end)
    static inline std::atomic<bool> refuse_create{false};  // ep_create fails
};

inline DAT_RETURN make_gated(ProviderInstance *, Ia *, std::unique_ptr<Transport> *out) {
    *out = std::make_unique<GatedTransport>();
    return DAT_SUCCESS;
}

// An IA of the gated transport with a DTO EVD, a PZ and an EP on them.
struct GatedIa {
    Instance inst;
    const DAT_PROVIDER *t;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;

    explicit GatedIa(const char *name) : inst(name, "", &make_gated), t(inst.table) {
        g_transport_gone.store(false);
        ia = inst.open();
        evd = new_evd(DAT_EVD_DTO_FLAG);
        conn = new_evd(DAT_EVD_CONNECTION_FLAG);
        pz = new_pz();
        EXPECT_EQ(t->ep_create_func(ia, pz, evd, evd, conn, nullptr, &ep), DAT_SUCCESS);
    }
    // A PZ or an EVD (of `flags`, 8 events) of the IA; null if it could not be made.
    DAT_PZ_HANDLE new_pz() const {
        DAT_PZ_HANDLE p = DAT_HANDLE_NULL;
        EXPECT_EQ(t->pz_create_func(ia, &p), DAT_SUCCESS);
        return p;
    }
    DAT_EVD_HANDLE new_evd(DAT_EVD_FLAGS flags) const {
        DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
        EXPECT_EQ(t->evd_create_func(ia, 8, DAT_HANDLE_NULL, flags, &e), DAT_SUCCESS);
        return e;
    }
};

inline std::size_t live_objects() {
    return arena::stats().live_objects;
}

}  // namespace opendat::util::test

// Every DAT entry point that takes a handle, called with handles that must be refused:
// garbage nobody issued (dapltest's 0x1 among them), stale (the object was freed), the
// wrong type, another IA's object and another provider's object. Each call returns an
// error of type DAT_INVALID_HANDLE; none crashes (the suite also runs under ASan/TSan).
#include "world.hpp"

#include <netinet/in.h>

#include <functional>

namespace handles_test {
namespace {

using Call = std::function<DAT_RETURN(DAT_HANDLE)>;

struct Entry {
    const char *name;
    DAT_HANDLE_TYPE type;  // the type the handle must have
    Call call;
};

// DAT_INVALID_HANDLE; or DAT_NOT_IMPLEMENTED from a provider that leaves the function empty
// (the tcp provider's watermark and receive-query slots, the example provider's EP slots
// reached through its PZ handle).
void expect_refused(const char *name, const Bad &bad, DAT_RETURN r) {
    EXPECT_TRUE(DAT_GET_TYPE(r) == DAT_INVALID_HANDLE || DAT_GET_TYPE(r) == DAT_NOT_IMPLEMENTED)
        << name << " with " << bad.what << " returned 0x" << std::hex << r;
    EXPECT_TRUE(r & DAT_CLASS_ERROR) << name << " with " << bad.what;
}

DAT_HANDLE other_ia_of(World &w, DAT_HANDLE_TYPE t) {
    switch (t) {
        case DAT_HANDLE_TYPE_EP:
            return w.b.ep;
        case DAT_HANDLE_TYPE_EVD:
            return w.b.dto_evd;
        case DAT_HANDLE_TYPE_CNO:
            return w.b.cno;
        case DAT_HANDLE_TYPE_PZ:
            return w.b.pz;
        case DAT_HANDLE_TYPE_LMR:
            return w.b.lmr;
        default:
            return DAT_HANDLE_NULL;
    }
}

DAT_HANDLE stale_of(World &w, DAT_HANDLE_TYPE t) {
    switch (t) {
        case DAT_HANDLE_TYPE_EP:
            return w.stale.ep;
        case DAT_HANDLE_TYPE_EVD:
            return w.stale.evd;
        case DAT_HANDLE_TYPE_CNO:
            return w.stale.cno;
        case DAT_HANDLE_TYPE_PZ:
            return w.stale.pz;
        case DAT_HANDLE_TYPE_LMR:
            return w.stale.lmr;
        case DAT_HANDLE_TYPE_RMR:
            return w.stale.rmr;
        case DAT_HANDLE_TYPE_PSP:
            return w.stale.psp;
        case DAT_HANDLE_TYPE_RSP:
            return w.stale.rsp;
        default:
            return w.stale.ep;  // CR, SRQ: any freed object is not one
    }
}

// Bad handles for a slot of type `t` that is the call's first (dispatching) argument.
std::vector<Bad> bad_first(World &w, DAT_HANDLE_TYPE t) {
    std::vector<Bad> v = garbage(w);
    v.push_back({"stale", stale_of(w, t)});
    v.push_back({"wrong type", t == DAT_HANDLE_TYPE_EP ? w.a.pz : w.a.ep});
    if (t != DAT_HANDLE_TYPE_PZ) v.push_back({"other provider's PZ", w.other_pz});
    return v;
}

// Bad handles for a slot of type `t` that is a second handle of the call (the provider
// meets it after dispatch on the first).
std::vector<Bad> bad_second(World &w, DAT_HANDLE_TYPE t) {
    std::vector<Bad> v = bad_first(w, t);
    if (DAT_HANDLE o = other_ia_of(w, t); o != DAT_HANDLE_NULL) v.push_back({"other IA", o});
    if (t == DAT_HANDLE_TYPE_PZ) v.push_back({"other provider's PZ", w.other_pz});
    return v;
}

DAT_EVENT g_event;
DAT_COUNT g_count;
DAT_LMR_TRIPLET g_iov[1];
DAT_RMR_TRIPLET g_remote{};

std::vector<Entry> first_handle_entries() {
    using T = DAT_HANDLE;
    auto ep = DAT_HANDLE_TYPE_EP, evd = DAT_HANDLE_TYPE_EVD, cno = DAT_HANDLE_TYPE_CNO,
         pz = DAT_HANDLE_TYPE_PZ, lmr = DAT_HANDLE_TYPE_LMR, rmr = DAT_HANDLE_TYPE_RMR,
         psp = DAT_HANDLE_TYPE_PSP, rsp = DAT_HANDLE_TYPE_RSP, cr = DAT_HANDLE_TYPE_CR,
         srq = DAT_HANDLE_TYPE_SRQ;
    static DAT_EP_PARAM ep_param;
    static DAT_EVD_PARAM evd_param;
    static DAT_CNO_PARAM cno_param;
    static DAT_PZ_PARAM pz_param;
    static DAT_LMR_PARAM lmr_param;
    static DAT_RMR_PARAM rmr_param;
    static DAT_PSP_PARAM psp_param;
    static DAT_RSP_PARAM rsp_param;
    static DAT_CR_PARAM cr_param;
    static DAT_SRQ_PARAM srq_param;
    static sockaddr_in addr{AF_INET, 0, {0x0100007f}, {}};
    static DAT_DTO_COOKIE cookie{};
    static DAT_RMR_COOKIE rcookie{};
    return {
        {"dat_ep_query", ep, [](T h) { return dat_ep_query(h, DAT_EP_FIELD_ALL, &ep_param); }},
        {"dat_ep_modify", ep,
         [](T h) {
             return dat_ep_modify(h, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, &ep_param);
         }},
        {"dat_ep_connect", ep,
         [](T h) {
             return dat_ep_connect(h, reinterpret_cast<sockaddr *>(&addr), 1, 0, 0, nullptr,
                                   DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
         }},
        {"dat_ep_dup_connect", ep,
         [](T h) {
             return dat_ep_dup_connect(h, World::get().a.ep, 0, 0, nullptr, DAT_QOS_BEST_EFFORT);
         }},
        {"dat_ep_disconnect", ep, [](T h) { return dat_ep_disconnect(h, DAT_CLOSE_ABRUPT_FLAG); }},
        {"dat_ep_post_send", ep,
         [](T h) { return dat_ep_post_send(h, 0, g_iov, cookie, DAT_COMPLETION_DEFAULT_FLAG); }},
        {"dat_ep_post_recv", ep,
         [](T h) { return dat_ep_post_recv(h, 0, g_iov, cookie, DAT_COMPLETION_DEFAULT_FLAG); }},
        {"dat_ep_post_rdma_read", ep,
         [](T h) {
             return dat_ep_post_rdma_read(h, 0, g_iov, cookie, &g_remote,
                                          DAT_COMPLETION_DEFAULT_FLAG);
         }},
        {"dat_ep_post_rdma_write", ep,
         [](T h) {
             return dat_ep_post_rdma_write(h, 0, g_iov, cookie, &g_remote,
                                           DAT_COMPLETION_DEFAULT_FLAG);
         }},
        {"dat_ep_get_status", ep,
         [](T h) { return dat_ep_get_status(h, nullptr, nullptr, nullptr); }},
        {"dat_ep_free", ep, [](T h) { return dat_ep_free(h); }},
        {"dat_ep_reset", ep, [](T h) { return dat_ep_reset(h); }},
        {"dat_ep_recv_query", ep, [](T h) { return dat_ep_recv_query(h, &g_count, &g_count); }},
        {"dat_ep_set_watermark", ep, [](T h) { return dat_ep_set_watermark(h, 1, 1); }},
        {"dat_evd_query", evd, [](T h) { return dat_evd_query(h, DAT_EVD_FIELD_ALL, &evd_param); }},
        {"dat_evd_modify_cno", evd, [](T h) { return dat_evd_modify_cno(h, DAT_HANDLE_NULL); }},
        {"dat_evd_enable", evd, [](T h) { return dat_evd_enable(h); }},
        {"dat_evd_disable", evd, [](T h) { return dat_evd_disable(h); }},
        {"dat_evd_wait", evd, [](T h) { return dat_evd_wait(h, 0, 1, &g_event, &g_count); }},
        {"dat_evd_resize", evd, [](T h) { return dat_evd_resize(h, 32); }},
        {"dat_evd_post_se", evd, [](T h) { return dat_evd_post_se(h, &g_event); }},
        {"dat_evd_dequeue", evd, [](T h) { return dat_evd_dequeue(h, &g_event); }},
        {"dat_evd_free", evd, [](T h) { return dat_evd_free(h); }},
        {"dat_evd_set_unwaitable", evd, [](T h) { return dat_evd_set_unwaitable(h); }},
        {"dat_evd_clear_unwaitable", evd, [](T h) { return dat_evd_clear_unwaitable(h); }},
        {"dat_cno_modify_agent", cno,
         [](T h) { return dat_cno_modify_agent(h, DAT_OS_WAIT_PROXY_AGENT_NULL); }},
        {"dat_cno_query", cno, [](T h) { return dat_cno_query(h, DAT_CNO_FIELD_ALL, &cno_param); }},
        {"dat_cno_free", cno, [](T h) { return dat_cno_free(h); }},
        {"dat_cno_wait", cno,
         [](T h) {
             DAT_EVD_HANDLE e;
             return dat_cno_wait(h, 0, &e);
         }},
        {"dat_pz_query", pz, [](T h) { return dat_pz_query(h, DAT_PZ_FIELD_ALL, &pz_param); }},
        {"dat_pz_free", pz, [](T h) { return dat_pz_free(h); }},
        {"dat_rmr_create", pz,
         [](T h) {
             DAT_RMR_HANDLE r;
             return dat_rmr_create(h, &r);
         }},
        {"dat_lmr_query", lmr, [](T h) { return dat_lmr_query(h, DAT_LMR_FIELD_ALL, &lmr_param); }},
        {"dat_lmr_free", lmr, [](T h) { return dat_lmr_free(h); }},
        {"dat_rmr_query", rmr, [](T h) { return dat_rmr_query(h, DAT_RMR_FIELD_ALL, &rmr_param); }},
        {"dat_rmr_bind", rmr,
         [](T h) {
             DAT_RMR_CONTEXT c;
             return dat_rmr_bind(h, DAT_HANDLE_NULL, g_iov, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
                                 World::get().a.ep, rcookie, DAT_COMPLETION_DEFAULT_FLAG, &c);
         }},
        {"dat_rmr_free", rmr, [](T h) { return dat_rmr_free(h); }},
        {"dat_psp_query", psp, [](T h) { return dat_psp_query(h, DAT_PSP_FIELD_ALL, &psp_param); }},
        {"dat_psp_free", psp, [](T h) { return dat_psp_free(h); }},
        {"dat_rsp_query", rsp, [](T h) { return dat_rsp_query(h, DAT_RSP_FIELD_ALL, &rsp_param); }},
        {"dat_rsp_free", rsp, [](T h) { return dat_rsp_free(h); }},
        {"dat_cr_query", cr, [](T h) { return dat_cr_query(h, DAT_CR_FIELD_ALL, &cr_param); }},
        {"dat_cr_accept", cr, [](T h) { return dat_cr_accept(h, DAT_HANDLE_NULL, 0, nullptr); }},
        {"dat_cr_reject", cr, [](T h) { return dat_cr_reject(h, 0, nullptr); }},
        {"dat_cr_handoff", cr, [](T h) { return dat_cr_handoff(h, 1); }},
        {"dat_srq_query", srq, [](T h) { return dat_srq_query(h, DAT_SRQ_FIELD_ALL, &srq_param); }},
        {"dat_srq_post_recv", srq, [](T h) { return dat_srq_post_recv(h, 0, g_iov, cookie); }},
        {"dat_srq_free", srq, [](T h) { return dat_srq_free(h); }},
        {"dat_srq_resize", srq, [](T h) { return dat_srq_resize(h, 8); }},
        {"dat_srq_set_lw", srq, [](T h) { return dat_srq_set_lw(h, 1); }},
    };
}

TEST(EntryPoints, FirstHandleRefused) {
    World &w = World::get();
    int calls = 0;
    for (const Entry &e : first_handle_entries()) {
        for (const Bad &bad : bad_first(w, e.type)) {
            expect_refused(e.name, bad, e.call(bad.handle));
            ++calls;
        }
    }
    std::printf("%d refused calls over %zu entry points\n", calls, first_handle_entries().size());
    // The live objects survived all of it.
    DAT_EP_STATE state;
    EXPECT_EQ(dat_ep_get_status(w.a.ep, &state, nullptr, nullptr), DAT_SUCCESS);
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(w.a.dto_evd, &ev)), DAT_QUEUE_EMPTY);
}

// Generic handles take any type: garbage and stale are what must be refused.
TEST(EntryPoints, GenericHandleRefused) {
    World &w = World::get();
    std::vector<Bad> v;
    // Values below the IA table's size are IA handles there (0x1 is the first open IA).
    for (const Bad &b : garbage(w))
        if (reinterpret_cast<std::uintptr_t>(b.handle) >= 4096) v.push_back(b);
    for (DAT_HANDLE_TYPE t : {DAT_HANDLE_TYPE_EP, DAT_HANDLE_TYPE_EVD, DAT_HANDLE_TYPE_LMR,
                              DAT_HANDLE_TYPE_PSP, DAT_HANDLE_TYPE_RSP})
        v.push_back({"stale", stale_of(w, t)});
    for (const Bad &bad : v) {
        DAT_CONTEXT ctx{};
        DAT_HANDLE_TYPE type;
        expect_refused("dat_set_consumer_context", bad, dat_set_consumer_context(bad.handle, ctx));
        expect_refused("dat_get_consumer_context", bad, dat_get_consumer_context(bad.handle, &ctx));
        expect_refused("dat_get_handle_type", bad, dat_get_handle_type(bad.handle, &type));
        const DAT_RETURN r = dat_extension_op(bad.handle, 1, 0);
        EXPECT_NE(r, DAT_SUCCESS) << "dat_extension_op with " << bad.what;
    }
}

// The IA argument is a consumer handle (a small integer): a closed one, one never issued
// and an object pointer are refused by libdat2's table.
TEST(EntryPoints, IaHandleRefused) {
    World &w = World::get();
    DAT_IA_HANDLE closed;
    ASSERT_EQ(open_ia(kIa, &closed), DAT_SUCCESS);
    ASSERT_EQ(dat_ia_close(closed, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    const std::vector<Bad> bad = {{"closed IA", closed},
                                  {"never issued", reinterpret_cast<DAT_HANDLE>(0x12345)},
                                  {"an EP pointer", w.a.ep},
                                  {"0x1 past the table", reinterpret_cast<DAT_HANDLE>(4096 + 1)}};
    DAT_REGION_DESCRIPTION region{};
    region.for_va = w.a.buffer.data();
    for (const Bad &b : bad) {
        auto ia = static_cast<DAT_IA_HANDLE>(b.handle);
        DAT_HANDLE out;
        DAT_CONN_QUAL q;
        DAT_LMR_CONTEXT lc;
        DAT_RMR_CONTEXT rc;
        DAT_VLEN len;
        DAT_VADDR va;
        DAT_IA_ATTR attr;
        expect_refused("dat_ia_query", b,
                       dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &attr, 0, nullptr));
        expect_refused("dat_ia_close", b, dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
        expect_refused("dat_pz_create", b, dat_pz_create(ia, &out));
        expect_refused("dat_evd_create", b,
                       dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &out));
        expect_refused("dat_cno_create", b, dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &out));
        expect_refused(
            "dat_ep_create", b,
            dat_ep_create(ia, w.a.pz, w.a.dto_evd, w.a.dto_evd, w.a.conn_evd, nullptr, &out));
        expect_refused("dat_ep_create_with_srq", b,
                       dat_ep_create_with_srq(ia, w.a.pz, w.a.dto_evd, w.a.dto_evd, w.a.conn_evd,
                                              DAT_HANDLE_NULL, nullptr, &out));
        expect_refused(
            "dat_lmr_create", b,
            dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, 64, w.a.pz, DAT_MEM_PRIV_ALL_FLAG,
                           DAT_VA_TYPE_VA, &out, &lc, &rc, &len, &va));
        expect_refused("dat_lmr_sync_rdma_read", b, dat_lmr_sync_rdma_read(ia, g_iov, 0));
        expect_refused("dat_lmr_sync_rdma_write", b, dat_lmr_sync_rdma_write(ia, g_iov, 0));
        expect_refused("dat_psp_create", b,
                       dat_psp_create(ia, 77, w.a.cr_evd, DAT_PSP_CONSUMER_FLAG, &out));
        expect_refused("dat_psp_create_any", b,
                       dat_psp_create_any(ia, &q, w.a.cr_evd, DAT_PSP_CONSUMER_FLAG, &out));
        expect_refused("dat_rsp_create", b, dat_rsp_create(ia, 78, w.a.ep, w.a.cr_evd, &out));
        expect_refused("dat_srq_create", b, dat_srq_create(ia, w.a.pz, nullptr, &out));
    }
}

// Where two handles meet, the second one must be live, of the right type, of the same IA
// and of the same provider.
TEST(EntryPoints, SecondHandleRefused) {
    World &w = World::get();
    Objects &a = w.a;
    DAT_REGION_DESCRIPTION region{};
    region.for_va = a.buffer.data();
    int calls = 0;
    auto run = [&](const char *name, DAT_HANDLE_TYPE t,
                   const std::function<DAT_RETURN(DAT_HANDLE)> &f) {
        for (const Bad &bad : bad_second(w, t)) {
            expect_refused(name, bad, f(bad.handle));
            ++calls;
        }
    };
    DAT_HANDLE out;
    DAT_CONN_QUAL q;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN len;
    DAT_VADDR va;
    run("dat_ep_create(pz)", DAT_HANDLE_TYPE_PZ, [&](DAT_HANDLE h) {
        return dat_ep_create(a.ia, h, a.dto_evd, a.dto_evd, a.conn_evd, nullptr, &out);
    });
    run("dat_ep_create(recv_evd)", DAT_HANDLE_TYPE_EVD, [&](DAT_HANDLE h) {
        return dat_ep_create(a.ia, a.pz, h, a.dto_evd, a.conn_evd, nullptr, &out);
    });
    run("dat_ep_create(request_evd)", DAT_HANDLE_TYPE_EVD, [&](DAT_HANDLE h) {
        return dat_ep_create(a.ia, a.pz, a.dto_evd, h, a.conn_evd, nullptr, &out);
    });
    run("dat_ep_create(connect_evd)", DAT_HANDLE_TYPE_EVD, [&](DAT_HANDLE h) {
        return dat_ep_create(a.ia, a.pz, a.dto_evd, a.dto_evd, h, nullptr, &out);
    });
    run("dat_ep_dup_connect(dup)", DAT_HANDLE_TYPE_EP, [&](DAT_HANDLE h) {
        return dat_ep_dup_connect(a.ep, h, 0, 0, nullptr, DAT_QOS_BEST_EFFORT);
    });
    run("dat_evd_create(cno)", DAT_HANDLE_TYPE_CNO,
        [&](DAT_HANDLE h) { return dat_evd_create(a.ia, 8, h, DAT_EVD_DTO_FLAG, &out); });
    run("dat_evd_modify_cno(cno)", DAT_HANDLE_TYPE_CNO,
        [&](DAT_HANDLE h) { return dat_evd_modify_cno(a.dto_evd, h); });
    run("dat_lmr_create(pz)", DAT_HANDLE_TYPE_PZ, [&](DAT_HANDLE h) {
        return dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, region, 64, h, DAT_MEM_PRIV_ALL_FLAG,
                              DAT_VA_TYPE_VA, &out, &lc, &rc, &len, &va);
    });
    run("dat_lmr_create(for_lmr_handle)", DAT_HANDLE_TYPE_LMR, [&](DAT_HANDLE h) {
        DAT_REGION_DESCRIPTION r{};
        r.for_lmr_handle = h;
        return dat_lmr_create(a.ia, DAT_MEM_TYPE_LMR, r, 64, a.pz, DAT_MEM_PRIV_ALL_FLAG,
                              DAT_VA_TYPE_VA, &out, &lc, &rc, &len, &va);
    });
    run("dat_rmr_bind(lmr)", DAT_HANDLE_TYPE_LMR, [&](DAT_HANDLE h) {
        DAT_LMR_TRIPLET t{};
        t.lmr_context = a.lmr_context;
        t.virtual_address = reinterpret_cast<DAT_VADDR>(a.buffer.data());
        t.segment_length = 64;
        DAT_RMR_COOKIE c{};
        return dat_rmr_bind(a.rmr, h, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, a.ep, c,
                            DAT_COMPLETION_DEFAULT_FLAG, &rc);
    });
    run("dat_rmr_bind(ep)", DAT_HANDLE_TYPE_EP, [&](DAT_HANDLE h) {
        DAT_LMR_TRIPLET t{};
        t.lmr_context = a.lmr_context;
        t.virtual_address = reinterpret_cast<DAT_VADDR>(a.buffer.data());
        t.segment_length = 64;
        DAT_RMR_COOKIE c{};
        return dat_rmr_bind(a.rmr, a.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, h, c,
                            DAT_COMPLETION_DEFAULT_FLAG, &rc);
    });
    run("dat_psp_create(evd)", DAT_HANDLE_TYPE_EVD,
        [&](DAT_HANDLE h) { return dat_psp_create(a.ia, 0, h, DAT_PSP_CONSUMER_FLAG, &out); });
    run("dat_psp_create_any(evd)", DAT_HANDLE_TYPE_EVD,
        [&](DAT_HANDLE h) { return dat_psp_create_any(a.ia, &q, h, DAT_PSP_CONSUMER_FLAG, &out); });
    run("dat_rsp_create(ep)", DAT_HANDLE_TYPE_EP,
        [&](DAT_HANDLE h) { return dat_rsp_create(a.ia, 0, h, a.cr_evd, &out); });
    run("dat_rsp_create(evd)", DAT_HANDLE_TYPE_EVD,
        [&](DAT_HANDLE h) { return dat_rsp_create(a.ia, 0, a.ep, h, &out); });
    std::printf("%d refused calls\n", calls);
}

}  // namespace
}  // namespace handles_test

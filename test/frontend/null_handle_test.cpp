// Every wrapper's answer to a NULL (or, for IA functions, unused) handle: docs/dat-abi.md
// §3.3. Nothing may be dereferenced.
#include "frontend_test.hpp"

#include <functional>
#include <vector>

namespace {

struct Case {
    const char *name;
    DAT_RETURN expected;
    std::function<DAT_RETURN(void *)> call;  // argument: the handle to use
};

constexpr DAT_RETURN kIa = 0x8005000b, kEp = 0x8005000c, kLmr = 0x8005000d, kRmr = 0x8005000e,
                     kPz = 0x8005000f, kPsp = 0x80050010, kRsp = 0x80050011, kCr = 0x80050012,
                     kCno = 0x80050013, kEvd = 0x80050015, kSrq = 0x80050019, kHandle1 = 0x8005001b;

std::vector<Case> cases() {
    DAT_DTO_COOKIE cookie{};
    DAT_RMR_COOKIE rcookie{};
    DAT_REGION_DESCRIPTION region{};
    DAT_OS_WAIT_PROXY_AGENT agent{};
    return {
        {"dat_ia_query", kIa,
         [](void *h) { return dat_ia_query(h, nullptr, 0, nullptr, {}, nullptr); }},
        {"dat_ia_close", kIa, [](void *h) { return dat_ia_close(h, DAT_CLOSE_ABRUPT_FLAG); }},
        {"dat_set_consumer_context", kHandle1,
         [](void *h) { return dat_set_consumer_context(h, DAT_CONTEXT{}); }},
        {"dat_get_consumer_context", kHandle1,
         [](void *h) { return dat_get_consumer_context(h, nullptr); }},
        {"dat_get_handle_type", kHandle1, [](void *h) { return dat_get_handle_type(h, nullptr); }},
        {"dat_cno_create", kIa, [agent](void *h) { return dat_cno_create(h, agent, nullptr); }},
        {"dat_cno_modify_agent", kCno, [agent](void *h) { return dat_cno_modify_agent(h, agent); }},
        {"dat_cno_query", kCno, [](void *h) { return dat_cno_query(h, {}, nullptr); }},
        {"dat_cno_free", kCno, [](void *h) { return dat_cno_free(h); }},
        {"dat_cno_wait", kCno, [](void *h) { return dat_cno_wait(h, {}, nullptr); }},
        {"dat_cr_query", kCr, [](void *h) { return dat_cr_query(h, {}, nullptr); }},
        {"dat_cr_accept", kCr, [](void *h) { return dat_cr_accept(h, nullptr, {}, nullptr); }},
        {"dat_cr_reject", kCr, [](void *h) { return dat_cr_reject(h, {}, nullptr); }},
        {"dat_cr_handoff", kCr, [](void *h) { return dat_cr_handoff(h, 0); }},
        {"dat_evd_create", kIa,
         [](void *h) { return dat_evd_create(h, 1, nullptr, DAT_EVD_DTO_FLAG, nullptr); }},
        {"dat_evd_query", kEvd, [](void *h) { return dat_evd_query(h, {}, nullptr); }},
        {"dat_evd_modify_cno", kEvd, [](void *h) { return dat_evd_modify_cno(h, nullptr); }},
        {"dat_evd_enable", kEvd, [](void *h) { return dat_evd_enable(h); }},
        {"dat_evd_disable", kEvd, [](void *h) { return dat_evd_disable(h); }},
        {"dat_evd_wait", kEvd, [](void *h) { return dat_evd_wait(h, 0, 1, nullptr, nullptr); }},
        {"dat_evd_resize", kEvd, [](void *h) { return dat_evd_resize(h, 1); }},
        {"dat_evd_post_se", kEvd, [](void *h) { return dat_evd_post_se(h, nullptr); }},
        {"dat_evd_dequeue", kEvd, [](void *h) { return dat_evd_dequeue(h, nullptr); }},
        {"dat_evd_free", kEvd, [](void *h) { return dat_evd_free(h); }},
        {"dat_evd_set_unwaitable", kEvd, [](void *h) { return dat_evd_set_unwaitable(h); }},
        {"dat_evd_clear_unwaitable", kEvd, [](void *h) { return dat_evd_clear_unwaitable(h); }},
        {"dat_ep_create", kIa,
         [](void *h) {
             return dat_ep_create(h, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
         }},
        {"dat_ep_create_with_srq", kIa,
         [](void *h) {
             return dat_ep_create_with_srq(h, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                           nullptr);
         }},
        {"dat_ep_query", kEp, [](void *h) { return dat_ep_query(h, {}, nullptr); }},
        {"dat_ep_modify", kEp, [](void *h) { return dat_ep_modify(h, {}, nullptr); }},
        {"dat_ep_connect", kEp,
         [](void *h) {
             return dat_ep_connect(h, nullptr, 0, 0, 0, nullptr, DAT_QOS_BEST_EFFORT,
                                   DAT_CONNECT_DEFAULT_FLAG);
         }},
        {"dat_ep_dup_connect", kEp,
         [](void *h) {
             return dat_ep_dup_connect(h, nullptr, 0, 0, nullptr, DAT_QOS_BEST_EFFORT);
         }},
        {"dat_ep_disconnect", kEp,
         [](void *h) { return dat_ep_disconnect(h, DAT_CLOSE_ABRUPT_FLAG); }},
        {"dat_ep_post_send", kEp,
         [cookie](void *h) {
             return dat_ep_post_send(h, 0, nullptr, cookie, DAT_COMPLETION_DEFAULT_FLAG);
         }},
        {"dat_ep_post_recv", kEp,
         [cookie](void *h) {
             return dat_ep_post_recv(h, 0, nullptr, cookie, DAT_COMPLETION_DEFAULT_FLAG);
         }},
        {"dat_ep_post_rdma_read", kEp,
         [cookie](void *h) {
             return dat_ep_post_rdma_read(h, 0, nullptr, cookie, nullptr,
                                          DAT_COMPLETION_DEFAULT_FLAG);
         }},
        {"dat_ep_post_rdma_write", kEp,
         [cookie](void *h) {
             return dat_ep_post_rdma_write(h, 0, nullptr, cookie, nullptr,
                                           DAT_COMPLETION_DEFAULT_FLAG);
         }},
        {"dat_ep_get_status", kEp,
         [](void *h) { return dat_ep_get_status(h, nullptr, nullptr, nullptr); }},
        {"dat_ep_free", kEp, [](void *h) { return dat_ep_free(h); }},
        {"dat_ep_reset", kEp, [](void *h) { return dat_ep_reset(h); }},
        {"dat_ep_recv_query", kEp, [](void *h) { return dat_ep_recv_query(h, nullptr, nullptr); }},
        {"dat_ep_set_watermark", kEp, [](void *h) { return dat_ep_set_watermark(h, 0, 0); }},
        {"dat_lmr_create", kIa,
         [region](void *h) {
             return dat_lmr_create(h, DAT_MEM_TYPE_VIRTUAL, region, 0, nullptr,
                                   DAT_MEM_PRIV_NONE_FLAG, DAT_VA_TYPE_VA, nullptr, nullptr,
                                   nullptr, nullptr, nullptr);
         }},
        {"dat_lmr_query", kLmr, [](void *h) { return dat_lmr_query(h, {}, nullptr); }},
        {"dat_lmr_free", kLmr, [](void *h) { return dat_lmr_free(h); }},
        {"dat_lmr_sync_rdma_read", kIa,
         [](void *h) { return dat_lmr_sync_rdma_read(h, nullptr, 0); }},
        {"dat_lmr_sync_rdma_write", kIa,
         [](void *h) { return dat_lmr_sync_rdma_write(h, nullptr, 0); }},
        {"dat_rmr_create", kPz, [](void *h) { return dat_rmr_create(h, nullptr); }},
        {"dat_rmr_query", kRmr, [](void *h) { return dat_rmr_query(h, {}, nullptr); }},
        {"dat_rmr_bind", kRmr,
         [rcookie](void *h) {
             return dat_rmr_bind(h, nullptr, nullptr, DAT_MEM_PRIV_NONE_FLAG, DAT_VA_TYPE_VA,
                                 nullptr, rcookie, DAT_COMPLETION_DEFAULT_FLAG, nullptr);
         }},
        {"dat_rmr_free", kRmr, [](void *h) { return dat_rmr_free(h); }},
        {"dat_psp_create", kIa,
         [](void *h) { return dat_psp_create(h, 1, nullptr, DAT_PSP_CONSUMER_FLAG, nullptr); }},
        {"dat_psp_create_any", kIa,
         [](void *h) {
             return dat_psp_create_any(h, nullptr, nullptr, DAT_PSP_CONSUMER_FLAG, nullptr);
         }},
        {"dat_psp_query", kPsp, [](void *h) { return dat_psp_query(h, {}, nullptr); }},
        {"dat_psp_free", kPsp, [](void *h) { return dat_psp_free(h); }},
        {"dat_rsp_create", kIa,
         [](void *h) { return dat_rsp_create(h, 1, nullptr, nullptr, nullptr); }},
        {"dat_rsp_query", kRsp, [](void *h) { return dat_rsp_query(h, {}, nullptr); }},
        {"dat_rsp_free", kRsp, [](void *h) { return dat_rsp_free(h); }},
        {"dat_pz_create", kIa, [](void *h) { return dat_pz_create(h, nullptr); }},
        {"dat_pz_query", kPz, [](void *h) { return dat_pz_query(h, {}, nullptr); }},
        {"dat_pz_free", kPz, [](void *h) { return dat_pz_free(h); }},
        {"dat_srq_create", kIa,
         [](void *h) { return dat_srq_create(h, nullptr, nullptr, nullptr); }},
        {"dat_srq_free", kSrq, [](void *h) { return dat_srq_free(h); }},
        {"dat_srq_post_recv", kSrq,
         [cookie](void *h) { return dat_srq_post_recv(h, 0, nullptr, cookie); }},
        {"dat_srq_query", kSrq, [](void *h) { return dat_srq_query(h, {}, nullptr); }},
        {"dat_srq_resize", kSrq, [](void *h) { return dat_srq_resize(h, 1); }},
        {"dat_srq_set_lw", kSrq, [](void *h) { return dat_srq_set_lw(h, 0); }},
        {"dat_extension_op", kHandle1, [](void *h) { return dat_extension_op(h, 4, 0); }},
    };
}

TEST(NullHandle, EveryWrapperReturnsTheReferenceCode) {
    for (const Case &c : cases()) EXPECT_EQ(c.call(nullptr), c.expected) << c.name;
}

TEST(NullHandle, UnusedIaIndexIsAnInvalidIaForIaFunctions) {
    // No IA is open in slot 63 (tests close what they open); the table has 64 slots.
    for (const Case &c : cases()) {
        if (c.expected != kIa) continue;
        EXPECT_EQ(c.call(reinterpret_cast<void *>(std::uintptr_t{63})), kIa) << c.name;
    }
}

}  // namespace

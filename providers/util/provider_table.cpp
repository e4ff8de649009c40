#include "util/provider_table.hpp"

#include <cstring>
#include <list>
#include <mutex>

#include "trace/trace.hpp"
#include "util/entries.hpp"
#include "util/extension.hpp"
#include "util/no_cancel.hpp"

namespace opendat::util {

namespace {

// A stub of exactly the slot's function type: the reference libdat2 calls every slot
// without a NULL check, so an unimplemented operation must still be a callable function.
template <class Fn>
struct NotImplemented;
template <class... Args>
struct NotImplemented<DAT_RETURN (*)(Args...)> {
    static DAT_RETURN fn(Args...) noexcept { return kNotImplemented; }
};

template <class Fn>
void stub_if_null(Fn &slot) noexcept {
    if (slot == nullptr) slot = &NotImplemented<Fn>::fn;
}

// Every function slot of DAT_PROVIDER (slots 2..80).
// clang-format off
#define OPENDAT_ALL_SLOTS(X) \
    X(ia_open_func) \
    X(ia_query_func) \
    X(ia_close_func) \
    X(set_consumer_context_func) \
    X(get_consumer_context_func) \
    X(get_handle_type_func) \
    X(cno_create_func) \
    X(cno_modify_agent_func) \
    X(cno_query_func) \
    X(cno_free_func) \
    X(cno_wait_func) \
    X(cr_query_func) \
    X(cr_accept_func) \
    X(cr_reject_func) \
    X(cr_handoff_func) \
    X(evd_create_func) \
    X(evd_query_func) \
    X(evd_modify_cno_func) \
    X(evd_enable_func) \
    X(evd_disable_func) \
    X(evd_wait_func) \
    X(evd_resize_func) \
    X(evd_post_se_func) \
    X(evd_dequeue_func) \
    X(evd_free_func) \
    X(ep_create_func) \
    X(ep_query_func) \
    X(ep_modify_func) \
    X(ep_connect_func) \
    X(ep_dup_connect_func) \
    X(ep_disconnect_func) \
    X(ep_post_send_func) \
    X(ep_post_recv_func) \
    X(ep_post_rdma_read_func) \
    X(ep_post_rdma_write_func) \
    X(ep_get_status_func) \
    X(ep_free_func) \
    X(lmr_create_func) \
    X(lmr_query_func) \
    X(lmr_free_func) \
    X(rmr_create_func) \
    X(rmr_query_func) \
    X(rmr_bind_func) \
    X(rmr_free_func) \
    X(psp_create_func) \
    X(psp_query_func) \
    X(psp_free_func) \
    X(rsp_create_func) \
    X(rsp_query_func) \
    X(rsp_free_func) \
    X(pz_create_func) \
    X(pz_query_func) \
    X(pz_free_func) \
    X(psp_create_any_func) \
    X(ep_reset_func) \
    X(evd_set_unwaitable_func) \
    X(evd_clear_unwaitable_func) \
    X(lmr_sync_rdma_read_func) \
    X(lmr_sync_rdma_write_func) \
    X(ep_create_with_srq_func) \
    X(ep_recv_query_func) \
    X(ep_set_watermark_func) \
    X(srq_create_func) \
    X(srq_free_func) \
    X(srq_post_recv_func) \
    X(srq_query_func) \
    X(srq_resize_func) \
    X(srq_set_lw_func) \
    X(csp_create_func) \
    X(csp_query_func) \
    X(csp_free_func) \
    X(ep_common_connect_func) \
    X(rmr_create_for_ep_func) \
    X(ep_post_send_with_invalidate_func) \
    X(ep_post_rdma_read_to_rmr_func) \
    X(cno_fd_create_func) \
    X(cno_trigger_func) \
    X(ia_ha_related_func) \
    X(handle_extendedop_func)
// clang-format on

void fill_table(ProviderInstance *inst) noexcept {
    DAT_PROVIDER &t = inst->table;
    std::memset(&t, 0, sizeof t);
    t.device_name = inst->name.c_str();
    t.extension = inst;
    using namespace entry;
    // Every entry holds thread cancellation off (no_cancel.hpp) but the hot ones, the
    // posts and the dequeue, whose system calls are not cancellation points (sys_io.hpp).
    // Every entry runs inside a grace::Guard (util/grace.hpp): NoCancelEntry's, and the
    // hot ones their own (no extra call on their path).
    t.ia_open_func = &NoCancelEntry<&ia_open>::call;
    t.ia_query_func = &NoCancelEntry<&ia_query>::call;
    t.ia_close_func = &NoCancelEntry<&ia_close>::call;
    t.set_consumer_context_func = &NoCancelEntry<&set_consumer_context>::call;
    t.get_consumer_context_func = &NoCancelEntry<&get_consumer_context>::call;
    t.get_handle_type_func = &NoCancelEntry<&get_handle_type>::call;
    t.cno_create_func = &NoCancelEntry<&cno_create>::call;
    t.cno_modify_agent_func = &NoCancelEntry<&cno_modify_agent>::call;
    t.cno_query_func = &NoCancelEntry<&cno_query>::call;
    t.cno_free_func = &NoCancelEntry<&cno_free>::call;
    t.cno_wait_func = &NoCancelEntry<&cno_wait>::call;
    t.cr_query_func = &NoCancelEntry<&cr_query>::call;
    t.cr_accept_func = &NoCancelEntry<&cr_accept>::call;
    t.cr_reject_func = &NoCancelEntry<&cr_reject>::call;
    t.evd_create_func = &NoCancelEntry<&evd_create>::call;
    t.evd_query_func = &NoCancelEntry<&evd_query>::call;
    t.evd_modify_cno_func = &NoCancelEntry<&evd_modify_cno>::call;
    t.evd_enable_func = &NoCancelEntry<&evd_enable>::call;
    t.evd_disable_func = &NoCancelEntry<&evd_disable>::call;
    t.evd_wait_func = &NoCancelEntry<&evd_wait>::call;
    t.evd_resize_func = &NoCancelEntry<&evd_resize>::call;
    t.evd_post_se_func = &NoCancelEntry<&evd_post_se>::call;
    t.evd_dequeue_func = evd_dequeue;
    t.evd_free_func = &NoCancelEntry<&evd_free>::call;
    t.evd_set_unwaitable_func = &NoCancelEntry<&evd_set_unwaitable>::call;
    t.evd_clear_unwaitable_func = &NoCancelEntry<&evd_clear_unwaitable>::call;
    t.ep_create_func = &NoCancelEntry<&ep_create>::call;
    t.ep_query_func = &NoCancelEntry<&ep_query>::call;
    t.ep_modify_func = &NoCancelEntry<&ep_modify>::call;
    t.ep_connect_func = &NoCancelEntry<&ep_connect>::call;
    t.ep_dup_connect_func = &NoCancelEntry<&ep_dup_connect>::call;
    t.ep_disconnect_func = &NoCancelEntry<&ep_disconnect>::call;
    t.ep_post_send_func = ep_post_send;
    t.ep_post_recv_func = ep_post_recv;
    t.ep_post_rdma_read_func = ep_post_rdma_read;
    t.ep_post_rdma_write_func = ep_post_rdma_write;
    t.ep_get_status_func = &NoCancelEntry<&ep_get_status>::call;
    t.ep_free_func = &NoCancelEntry<&ep_free>::call;
    t.ep_reset_func = &NoCancelEntry<&ep_reset>::call;
    t.lmr_create_func = &NoCancelEntry<&lmr_create>::call;
    t.lmr_query_func = &NoCancelEntry<&lmr_query>::call;
    t.lmr_free_func = &NoCancelEntry<&lmr_free>::call;
    t.lmr_sync_rdma_read_func = &NoCancelEntry<&lmr_sync_rdma_read>::call;
    t.lmr_sync_rdma_write_func = &NoCancelEntry<&lmr_sync_rdma_write>::call;
    t.rmr_create_func = &NoCancelEntry<&rmr_create>::call;
    t.rmr_query_func = &NoCancelEntry<&rmr_query>::call;
    t.rmr_bind_func = &NoCancelEntry<&rmr_bind>::call;
    t.rmr_free_func = &NoCancelEntry<&rmr_free>::call;
    t.psp_create_func = &NoCancelEntry<&psp_create>::call;
    t.psp_create_any_func = &NoCancelEntry<&psp_create_any>::call;
    t.psp_query_func = &NoCancelEntry<&psp_query>::call;
    t.psp_free_func = &NoCancelEntry<&psp_free>::call;
    t.rsp_create_func = &NoCancelEntry<&rsp_create>::call;
    t.rsp_query_func = &NoCancelEntry<&rsp_query>::call;
    t.rsp_free_func = &NoCancelEntry<&rsp_free>::call;
    t.pz_create_func = &NoCancelEntry<&pz_create>::call;
    t.pz_query_func = &NoCancelEntry<&pz_query>::call;
    t.pz_free_func = &NoCancelEntry<&pz_free>::call;
    // Reached only when the IA reports extensions.
    t.handle_extendedop_func = extended_op;
    t.ep_create_with_srq_func = &NoCancelEntry<&ep_create_with_srq>::call;
    t.ep_recv_query_func = &NoCancelEntry<&ep_recv_query>::call;
    t.ep_set_watermark_func = &NoCancelEntry<&ep_set_watermark>::call;
    t.srq_create_func = &NoCancelEntry<&srq_create>::call;
    t.srq_free_func = &NoCancelEntry<&srq_free>::call;
    t.srq_post_recv_func = srq_post_recv;
    t.srq_query_func = &NoCancelEntry<&srq_query>::call;
    t.srq_resize_func = &NoCancelEntry<&srq_resize>::call;
    t.srq_set_lw_func = &NoCancelEntry<&srq_set_lw>::call;
#define OPENDAT_STUB(slot) stub_if_null(t.slot);
    OPENDAT_ALL_SLOTS(OPENDAT_STUB)
#undef OPENDAT_STUB
}

std::mutex g_mu;
std::list<ProviderInstance> g_instances;  // list: stable addresses for the tables

bool same_key(const DAT_PROVIDER_INFO &a, const DAT_PROVIDER_INFO &b) noexcept {
    return std::strcmp(a.ia_name, b.ia_name) == 0 && a.dapl_version_major == b.dapl_version_major &&
           a.dapl_version_minor == b.dapl_version_minor && a.is_thread_safe == b.is_thread_safe;
}

}  // namespace

void provider_init(const DAT_PROVIDER_INFO *info, const char *ia_params, MakeTransportFn make,
                   const HotEntries *hot) noexcept {
    if (info == nullptr) return;
    try {
        std::lock_guard lk(g_mu);
        ProviderInstance &inst = g_instances.emplace_back();
        inst.info = *info;
        inst.info.ia_name[DAT_NAME_MAX_LENGTH - 1] = '\0';
        inst.name = inst.info.ia_name;
        inst.params = ia_params != nullptr ? ia_params : "";
        inst.make_transport = make;
        fill_table(&inst);
        if (hot != nullptr && hot->ep_post_send != nullptr)
            inst.table.ep_post_send_func = hot->ep_post_send;
        if (hot != nullptr && hot->ep_post_recv != nullptr)
            inst.table.ep_post_recv_func = hot->ep_post_recv;
        DAT_RETURN rc = dat_registry_add_provider(&inst.table, &inst.info);
        DAPL_TRC(rc == DAT_SUCCESS ? trace::kInfo : trace::kError, "init",
                 "register %s (params \"%s\"): 0x%x", inst.name.c_str(), inst.params.c_str(), rc);
        if (rc != DAT_SUCCESS) g_instances.pop_back();
    } catch (...) {
        DAPL_TRC(trace::kError, "init", "out of memory registering %s", info->ia_name);
    }
}

void provider_fini(const DAT_PROVIDER_INFO *info) noexcept {
    if (info == nullptr) return;
    std::lock_guard lk(g_mu);
    for (auto it = g_instances.begin(); it != g_instances.end(); ++it) {
        if (!same_key(it->info, *info)) continue;
        DAT_RETURN rc = dat_registry_remove_provider(&it->table, &it->info);
        DAPL_TRC(trace::kInfo, "init", "unregister %s: 0x%x", it->name.c_str(), rc);
        g_instances.erase(it);
        return;
    }
}

ProviderInstance *find_instance(const char *name) noexcept {
    if (name == nullptr) return nullptr;
    std::lock_guard lk(g_mu);
    for (auto &inst : g_instances)
        if (inst.name == name) return &inst;
    return nullptr;
}

}  // namespace opendat::util

// The DAT entry points util implements (C ABI signatures of the DAT_PROVIDER slots).
// Internal to util: provider_table.cpp puts them into the table.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <cstdarg>

namespace opendat::util {
struct Srq;
}

namespace opendat::util::entry {

// IA, generic, PZ, CNO (entries_ia.cpp)
DAT_RETURN ia_open(const DAT_NAME_PTR, DAT_COUNT, DAT_EVD_HANDLE *, DAT_IA_HANDLE *) noexcept;
DAT_RETURN ia_query(DAT_IA_HANDLE, DAT_EVD_HANDLE *, DAT_IA_ATTR_MASK, DAT_IA_ATTR *,
                    DAT_PROVIDER_ATTR_MASK, DAT_PROVIDER_ATTR *) noexcept;
DAT_RETURN ia_close(DAT_IA_HANDLE, DAT_CLOSE_FLAGS) noexcept;
DAT_RETURN set_consumer_context(DAT_HANDLE, DAT_CONTEXT) noexcept;
DAT_RETURN get_consumer_context(DAT_HANDLE, DAT_CONTEXT *) noexcept;
DAT_RETURN get_handle_type(DAT_HANDLE, DAT_HANDLE_TYPE *) noexcept;
DAT_RETURN pz_create(DAT_IA_HANDLE, DAT_PZ_HANDLE *) noexcept;
DAT_RETURN pz_query(DAT_PZ_HANDLE, DAT_PZ_PARAM_MASK, DAT_PZ_PARAM *) noexcept;
DAT_RETURN pz_free(DAT_PZ_HANDLE) noexcept;
DAT_RETURN cno_create(DAT_IA_HANDLE, DAT_OS_WAIT_PROXY_AGENT, DAT_CNO_HANDLE *) noexcept;
DAT_RETURN cno_modify_agent(DAT_CNO_HANDLE, DAT_OS_WAIT_PROXY_AGENT) noexcept;
DAT_RETURN cno_query(DAT_CNO_HANDLE, DAT_CNO_PARAM_MASK, DAT_CNO_PARAM *) noexcept;
DAT_RETURN cno_free(DAT_CNO_HANDLE) noexcept;
DAT_RETURN cno_wait(DAT_CNO_HANDLE, DAT_TIMEOUT, DAT_EVD_HANDLE *) noexcept;

// EVD (entries_evd.cpp)
DAT_RETURN evd_create(DAT_IA_HANDLE, DAT_COUNT, DAT_CNO_HANDLE, DAT_EVD_FLAGS,
                      DAT_EVD_HANDLE *) noexcept;
DAT_RETURN evd_query(DAT_EVD_HANDLE, DAT_EVD_PARAM_MASK, DAT_EVD_PARAM *) noexcept;
DAT_RETURN evd_modify_cno(DAT_EVD_HANDLE, DAT_CNO_HANDLE) noexcept;
DAT_RETURN evd_enable(DAT_EVD_HANDLE) noexcept;
DAT_RETURN evd_disable(DAT_EVD_HANDLE) noexcept;
DAT_RETURN evd_wait(DAT_EVD_HANDLE, DAT_TIMEOUT, DAT_COUNT, DAT_EVENT *, DAT_COUNT *) noexcept;
DAT_RETURN evd_resize(DAT_EVD_HANDLE, DAT_COUNT) noexcept;
DAT_RETURN evd_post_se(DAT_EVD_HANDLE, const DAT_EVENT *) noexcept;
DAT_RETURN evd_dequeue(DAT_EVD_HANDLE, DAT_EVENT *) noexcept;
DAT_RETURN evd_free(DAT_EVD_HANDLE) noexcept;
DAT_RETURN evd_set_unwaitable(DAT_EVD_HANDLE) noexcept;
DAT_RETURN evd_clear_unwaitable(DAT_EVD_HANDLE) noexcept;

// LMR / RMR (entries_mem.cpp)
DAT_RETURN lmr_create(DAT_IA_HANDLE, DAT_MEM_TYPE, DAT_REGION_DESCRIPTION, DAT_VLEN, DAT_PZ_HANDLE,
                      DAT_MEM_PRIV_FLAGS, DAT_VA_TYPE, DAT_LMR_HANDLE *, DAT_LMR_CONTEXT *,
                      DAT_RMR_CONTEXT *, DAT_VLEN *, DAT_VADDR *) noexcept;
DAT_RETURN lmr_query(DAT_LMR_HANDLE, DAT_LMR_PARAM_MASK, DAT_LMR_PARAM *) noexcept;
DAT_RETURN lmr_free(DAT_LMR_HANDLE) noexcept;
DAT_RETURN rmr_create(DAT_PZ_HANDLE, DAT_RMR_HANDLE *) noexcept;
DAT_RETURN rmr_query(DAT_RMR_HANDLE, DAT_RMR_PARAM_MASK, DAT_RMR_PARAM *) noexcept;
DAT_RETURN rmr_bind(DAT_RMR_HANDLE, DAT_LMR_HANDLE, const DAT_LMR_TRIPLET *, DAT_MEM_PRIV_FLAGS,
                    DAT_VA_TYPE, DAT_EP_HANDLE, DAT_RMR_COOKIE, DAT_COMPLETION_FLAGS,
                    DAT_RMR_CONTEXT *) noexcept;
DAT_RETURN rmr_free(DAT_RMR_HANDLE) noexcept;
DAT_RETURN lmr_sync_rdma_read(DAT_IA_HANDLE, const DAT_LMR_TRIPLET *, DAT_VLEN) noexcept;
DAT_RETURN lmr_sync_rdma_write(DAT_IA_HANDLE, const DAT_LMR_TRIPLET *, DAT_VLEN) noexcept;

// EP, PSP, RSP, CR (entries_ep.cpp)
DAT_RETURN ep_create(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE,
                     const DAT_EP_ATTR *, DAT_EP_HANDLE *) noexcept;
DAT_RETURN ep_query(DAT_EP_HANDLE, DAT_EP_PARAM_MASK, DAT_EP_PARAM *) noexcept;
DAT_RETURN ep_modify(DAT_EP_HANDLE, DAT_EP_PARAM_MASK, const DAT_EP_PARAM *) noexcept;
DAT_RETURN ep_connect(DAT_EP_HANDLE, DAT_IA_ADDRESS_PTR, DAT_CONN_QUAL, DAT_TIMEOUT, DAT_COUNT,
                      const DAT_PVOID, DAT_QOS, DAT_CONNECT_FLAGS) noexcept;
DAT_RETURN ep_dup_connect(DAT_EP_HANDLE, DAT_EP_HANDLE, DAT_TIMEOUT, DAT_COUNT, const DAT_PVOID,
                          DAT_QOS) noexcept;
DAT_RETURN ep_disconnect(DAT_EP_HANDLE, DAT_CLOSE_FLAGS) noexcept;
DAT_RETURN ep_post_send(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
                        DAT_COMPLETION_FLAGS) noexcept;
DAT_RETURN ep_post_recv(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
                        DAT_COMPLETION_FLAGS) noexcept;
DAT_RETURN ep_post_rdma_read(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
                             const DAT_RMR_TRIPLET *, DAT_COMPLETION_FLAGS) noexcept;
DAT_RETURN ep_post_rdma_write(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
                              const DAT_RMR_TRIPLET *, DAT_COMPLETION_FLAGS) noexcept;
DAT_RETURN ep_get_status(DAT_EP_HANDLE, DAT_EP_STATE *, DAT_BOOLEAN *, DAT_BOOLEAN *) noexcept;
DAT_RETURN ep_free(DAT_EP_HANDLE) noexcept;
DAT_RETURN ep_reset(DAT_EP_HANDLE) noexcept;
DAT_RETURN psp_create(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EVD_HANDLE, DAT_PSP_FLAGS,
                      DAT_PSP_HANDLE *) noexcept;
DAT_RETURN psp_create_any(DAT_IA_HANDLE, DAT_CONN_QUAL *, DAT_EVD_HANDLE, DAT_PSP_FLAGS,
                          DAT_PSP_HANDLE *) noexcept;
DAT_RETURN psp_query(DAT_PSP_HANDLE, DAT_PSP_PARAM_MASK, DAT_PSP_PARAM *) noexcept;
DAT_RETURN psp_free(DAT_PSP_HANDLE) noexcept;
DAT_RETURN rsp_create(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EP_HANDLE, DAT_EVD_HANDLE,
                      DAT_RSP_HANDLE *) noexcept;
DAT_RETURN rsp_query(DAT_RSP_HANDLE, DAT_RSP_PARAM_MASK, DAT_RSP_PARAM *) noexcept;
DAT_RETURN rsp_free(DAT_RSP_HANDLE) noexcept;
DAT_RETURN cr_query(DAT_CR_HANDLE, DAT_CR_PARAM_MASK, DAT_CR_PARAM *) noexcept;
DAT_RETURN cr_accept(DAT_CR_HANDLE, DAT_EP_HANDLE, DAT_COUNT, const DAT_PVOID) noexcept;
DAT_RETURN cr_reject(DAT_CR_HANDLE, DAT_COUNT, const DAT_PVOID) noexcept;

// Shared receive queues (entries_srq.cpp; create_ep in entries_ep.cpp)
DAT_RETURN create_ep(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE,
                     Srq *, const DAT_EP_ATTR *, DAT_EP_HANDLE *) noexcept;
DAT_RETURN ep_create_with_srq(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE,
                              DAT_EVD_HANDLE, DAT_SRQ_HANDLE, const DAT_EP_ATTR *,
                              DAT_EP_HANDLE *) noexcept;
DAT_RETURN ep_recv_query(DAT_EP_HANDLE, DAT_COUNT *, DAT_COUNT *) noexcept;
DAT_RETURN ep_set_watermark(DAT_EP_HANDLE, DAT_COUNT, DAT_COUNT) noexcept;
DAT_RETURN srq_create(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_SRQ_ATTR *, DAT_SRQ_HANDLE *) noexcept;
DAT_RETURN srq_free(DAT_SRQ_HANDLE) noexcept;
DAT_RETURN srq_post_recv(DAT_SRQ_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE) noexcept;
DAT_RETURN srq_query(DAT_SRQ_HANDLE, DAT_SRQ_PARAM_MASK, DAT_SRQ_PARAM *) noexcept;
DAT_RETURN srq_resize(DAT_SRQ_HANDLE, DAT_COUNT) noexcept;
DAT_RETURN srq_set_lw(DAT_SRQ_HANDLE, DAT_COUNT) noexcept;

}  // namespace opendat::util::entry

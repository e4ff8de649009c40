// Memory registration wrappers: LMR and RMR. dat_lmr_create passes the 16-byte region
// description by value (two registers), untouched.
#include "ia_dispatch.hpp"

using namespace opendat::dat;

namespace {
constexpr DAT_RETURN kBadLmr = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
constexpr DAT_RETURN kBadRmr = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
// dat_rmr_create's argument is a PZ, so the reference reports a NULL one as HANDLE_PZ.
constexpr DAT_RETURN kBadPz = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
}  // namespace

extern "C" {

DAT_RETURN dat_lmr_create(DAT_IA_HANDLE ia, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
                          DAT_VLEN length, DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv,
                          DAT_VA_TYPE va_type, DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *lmr_context,
                          DAT_RMR_CONTEXT *rmr_context, DAT_VLEN *registered_length,
                          DAT_VADDR *registered_address) {
    return forward_ia<&DAT_PROVIDER::lmr_create_func>(
        "dat_lmr_create", ia, type, region, length, pz, priv, va_type, lmr, lmr_context,
        rmr_context, registered_length, registered_address);
}
DAT_RETURN dat_lmr_query(DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *param) {
    return forward<&DAT_PROVIDER::lmr_query_func, kBadLmr>("dat_lmr_query", lmr, mask, param);
}
DAT_RETURN dat_lmr_free(DAT_LMR_HANDLE lmr) {
    return forward_end<&DAT_PROVIDER::lmr_free_func, kBadLmr>("dat_lmr_free", lmr);
}
DAT_RETURN dat_lmr_sync_rdma_read(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *iov, DAT_VLEN n) {
    return forward_ia<&DAT_PROVIDER::lmr_sync_rdma_read_func>("dat_lmr_sync_rdma_read", ia, iov, n);
}
DAT_RETURN dat_lmr_sync_rdma_write(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *iov, DAT_VLEN n) {
    return forward_ia<&DAT_PROVIDER::lmr_sync_rdma_write_func>("dat_lmr_sync_rdma_write", ia, iov,
                                                               n);
}

DAT_RETURN dat_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr) {
    return forward<&DAT_PROVIDER::rmr_create_func, kBadPz>("dat_rmr_create", pz, rmr);
}
DAT_RETURN dat_rmr_query(DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *param) {
    return forward<&DAT_PROVIDER::rmr_query_func, kBadRmr>("dat_rmr_query", rmr, mask, param);
}
DAT_RETURN dat_rmr_bind(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr, const DAT_LMR_TRIPLET *triplet,
                        DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep,
                        DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                        DAT_RMR_CONTEXT *context) {
    return forward<&DAT_PROVIDER::rmr_bind_func, kBadRmr>("dat_rmr_bind", rmr, lmr, triplet, priv,
                                                          va_type, ep, cookie, flags, context);
}
DAT_RETURN dat_rmr_free(DAT_RMR_HANDLE rmr) {
    return forward_end<&DAT_PROVIDER::rmr_free_func, kBadRmr>("dat_rmr_free", rmr);
}

}  // extern "C"

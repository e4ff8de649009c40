// Connection management wrappers: public and reserved service points, connection requests.
#include "ia_dispatch.hpp"

using namespace opendat::dat;

namespace {
constexpr DAT_RETURN kBadCr = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
constexpr DAT_RETURN kBadPsp = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP);
constexpr DAT_RETURN kBadRsp = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP);
}  // namespace

extern "C" {

DAT_RETURN dat_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
                          DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp) {
    return forward_ia<&DAT_PROVIDER::psp_create_func>("dat_psp_create", ia, qual, evd, flags, psp);
}
DAT_RETURN dat_psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evd,
                              DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp) {
    return forward_ia<&DAT_PROVIDER::psp_create_any_func>("dat_psp_create_any", ia, qual, evd,
                                                          flags, psp);
}
DAT_RETURN dat_psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *param) {
    return forward<&DAT_PROVIDER::psp_query_func, kBadPsp>("dat_psp_query", psp, mask, param);
}
DAT_RETURN dat_psp_free(DAT_PSP_HANDLE psp) {
    return forward_end<&DAT_PROVIDER::psp_free_func, kBadPsp>("dat_psp_free", psp);
}

DAT_RETURN dat_rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep,
                          DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *rsp) {
    return forward_ia<&DAT_PROVIDER::rsp_create_func>("dat_rsp_create", ia, qual, ep, evd, rsp);
}
DAT_RETURN dat_rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *param) {
    return forward<&DAT_PROVIDER::rsp_query_func, kBadRsp>("dat_rsp_query", rsp, mask, param);
}
DAT_RETURN dat_rsp_free(DAT_RSP_HANDLE rsp) {
    return forward_end<&DAT_PROVIDER::rsp_free_func, kBadRsp>("dat_rsp_free", rsp);
}

DAT_RETURN dat_cr_query(DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *param) {
    return forward<&DAT_PROVIDER::cr_query_func, kBadCr>("dat_cr_query", cr, mask, param);
}
DAT_RETURN dat_cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep, DAT_COUNT pdata_size,
                         const DAT_PVOID pdata) {
    return forward_end<&DAT_PROVIDER::cr_accept_func, kBadCr>("dat_cr_accept", cr, ep, pdata_size,
                                                              pdata);
}
DAT_RETURN dat_cr_reject(DAT_CR_HANDLE cr, DAT_COUNT pdata_size, const DAT_PVOID pdata) {
    return forward_end<&DAT_PROVIDER::cr_reject_func, kBadCr>("dat_cr_reject", cr, pdata_size,
                                                              pdata);
}
DAT_RETURN dat_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL qual) {
    return forward<&DAT_PROVIDER::cr_handoff_func, kBadCr>("dat_cr_handoff", cr, qual);
}

}  // extern "C"

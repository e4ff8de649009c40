// EVD wrappers. dat_evd_wait and dat_evd_dequeue are hot: one NULL test and one indirect
// call. Every EVD function reports a NULL handle as EVD_REQUEST, like the reference.
#include "ia_dispatch.hpp"

using namespace opendat::dat;

namespace {
constexpr DAT_RETURN kBadEvd = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
}

extern "C" {

DAT_RETURN dat_evd_create(DAT_IA_HANDLE ia, DAT_COUNT qlen, DAT_CNO_HANDLE cno, DAT_EVD_FLAGS flags,
                          DAT_EVD_HANDLE *evd) {
    return forward_ia<&DAT_PROVIDER::evd_create_func>("dat_evd_create", ia, qlen, cno, flags, evd);
}
DAT_RETURN dat_evd_query(DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *param) {
    return forward<&DAT_PROVIDER::evd_query_func, kBadEvd>("dat_evd_query", evd, mask, param);
}
DAT_RETURN dat_evd_modify_cno(DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno) {
    return forward<&DAT_PROVIDER::evd_modify_cno_func, kBadEvd>("dat_evd_modify_cno", evd, cno);
}
DAT_RETURN dat_evd_enable(DAT_EVD_HANDLE evd) {
    return forward<&DAT_PROVIDER::evd_enable_func, kBadEvd>("dat_evd_enable", evd);
}
DAT_RETURN dat_evd_disable(DAT_EVD_HANDLE evd) {
    return forward<&DAT_PROVIDER::evd_disable_func, kBadEvd>("dat_evd_disable", evd);
}
[[gnu::hot]] DAT_RETURN dat_evd_wait(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                                     DAT_EVENT *event, DAT_COUNT *nmore) {
    return forward<&DAT_PROVIDER::evd_wait_func, kBadEvd>("dat_evd_wait", evd, timeout, threshold,
                                                          event, nmore);
}
DAT_RETURN dat_evd_resize(DAT_EVD_HANDLE evd, DAT_COUNT qlen) {
    return forward<&DAT_PROVIDER::evd_resize_func, kBadEvd>("dat_evd_resize", evd, qlen);
}
DAT_RETURN dat_evd_post_se(DAT_EVD_HANDLE evd, const DAT_EVENT *event) {
    return forward<&DAT_PROVIDER::evd_post_se_func, kBadEvd>("dat_evd_post_se", evd, event);
}
[[gnu::hot]] DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *event) {
    return forward<&DAT_PROVIDER::evd_dequeue_func, kBadEvd>("dat_evd_dequeue", evd, event);
}
DAT_RETURN dat_evd_free(DAT_EVD_HANDLE evd) {
    return forward_end<&DAT_PROVIDER::evd_free_func, kBadEvd>("dat_evd_free", evd);
}
DAT_RETURN dat_evd_set_unwaitable(DAT_EVD_HANDLE evd) {
    return forward<&DAT_PROVIDER::evd_set_unwaitable_func, kBadEvd>("dat_evd_set_unwaitable", evd);
}
DAT_RETURN dat_evd_clear_unwaitable(DAT_EVD_HANDLE evd) {
    return forward<&DAT_PROVIDER::evd_clear_unwaitable_func, kBadEvd>("dat_evd_clear_unwaitable",
                                                                      evd);
}

}  // extern "C"

// Shared receive queue wrappers.
#include "ia_dispatch.hpp"

using namespace opendat::dat;

namespace {
constexpr DAT_RETURN kBadSrq = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
}

extern "C" {

DAT_RETURN dat_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_SRQ_ATTR *attr,
                          DAT_SRQ_HANDLE *srq) {
    return forward_ia<&DAT_PROVIDER::srq_create_func>("dat_srq_create", ia, pz, attr, srq);
}
DAT_RETURN dat_srq_free(DAT_SRQ_HANDLE srq) {
    return forward_end<&DAT_PROVIDER::srq_free_func, kBadSrq>("dat_srq_free", srq);
}
DAT_RETURN dat_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                             DAT_DTO_COOKIE cookie) {
    return forward<&DAT_PROVIDER::srq_post_recv_func, kBadSrq>("dat_srq_post_recv", srq, n, iov,
                                                               cookie);
}
DAT_RETURN dat_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *param) {
    return forward<&DAT_PROVIDER::srq_query_func, kBadSrq>("dat_srq_query", srq, mask, param);
}
DAT_RETURN dat_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT qlen) {
    return forward<&DAT_PROVIDER::srq_resize_func, kBadSrq>("dat_srq_resize", srq, qlen);
}
DAT_RETURN dat_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT lw) {
    return forward<&DAT_PROVIDER::srq_set_lw_func, kBadSrq>("dat_srq_set_lw", srq, lw);
}

}  // extern "C"

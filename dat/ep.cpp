// Endpoint wrappers. The post_* calls are the data path: one NULL test and one indirect
// call, cookies passed by value in a register exactly as the consumer passed them.
#include "ia_dispatch.hpp"

using namespace opendat::dat;

namespace {
constexpr DAT_RETURN kBadEp = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
}

extern "C" {

DAT_RETURN dat_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
                         DAT_EVD_HANDLE request_evd, DAT_EVD_HANDLE connect_evd,
                         const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep) {
    return forward_ia<&DAT_PROVIDER::ep_create_func>("dat_ep_create", ia, pz, recv_evd, request_evd,
                                                     connect_evd, attr, ep);
}
DAT_RETURN dat_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
                                  DAT_EVD_HANDLE request_evd, DAT_EVD_HANDLE connect_evd,
                                  DAT_SRQ_HANDLE srq, const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep) {
    return forward_ia<&DAT_PROVIDER::ep_create_with_srq_func>(
        "dat_ep_create_with_srq", ia, pz, recv_evd, request_evd, connect_evd, srq, attr, ep);
}
DAT_RETURN dat_ep_query(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *param) {
    return forward<&DAT_PROVIDER::ep_query_func, kBadEp>("dat_ep_query", ep, mask, param);
}
DAT_RETURN dat_ep_modify(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *param) {
    return forward<&DAT_PROVIDER::ep_modify_func, kBadEp>("dat_ep_modify", ep, mask, param);
}
DAT_RETURN dat_ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR remote, DAT_CONN_QUAL qual,
                          DAT_TIMEOUT timeout, DAT_COUNT pdata_size, const DAT_PVOID pdata,
                          DAT_QOS qos, DAT_CONNECT_FLAGS flags) {
    return forward<&DAT_PROVIDER::ep_connect_func, kBadEp>("dat_ep_connect", ep, remote, qual,
                                                           timeout, pdata_size, pdata, qos, flags);
}
DAT_RETURN dat_ep_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup, DAT_TIMEOUT timeout,
                              DAT_COUNT pdata_size, const DAT_PVOID pdata, DAT_QOS qos) {
    return forward<&DAT_PROVIDER::ep_dup_connect_func, kBadEp>("dat_ep_dup_connect", ep, dup,
                                                               timeout, pdata_size, pdata, qos);
}
DAT_RETURN dat_ep_disconnect(DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags) {
    return forward<&DAT_PROVIDER::ep_disconnect_func, kBadEp>("dat_ep_disconnect", ep, flags);
}
[[gnu::hot]] DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                         DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
    return forward<&DAT_PROVIDER::ep_post_send_func, kBadEp>("dat_ep_post_send", ep, n, iov, cookie,
                                                             flags);
}
[[gnu::hot]] DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                         DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
    return forward<&DAT_PROVIDER::ep_post_recv_func, kBadEp>("dat_ep_post_recv", ep, n, iov, cookie,
                                                             flags);
}
[[gnu::hot]] DAT_RETURN dat_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                              DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                              DAT_COMPLETION_FLAGS flags) {
    return forward<&DAT_PROVIDER::ep_post_rdma_read_func, kBadEp>("dat_ep_post_rdma_read", ep, n,
                                                                  iov, cookie, remote, flags);
}
[[gnu::hot]] DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                               DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                               DAT_COMPLETION_FLAGS flags) {
    return forward<&DAT_PROVIDER::ep_post_rdma_write_func, kBadEp>("dat_ep_post_rdma_write", ep, n,
                                                                   iov, cookie, remote, flags);
}
DAT_RETURN dat_ep_get_status(DAT_EP_HANDLE ep, DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
                             DAT_BOOLEAN *request_idle) {
    return forward<&DAT_PROVIDER::ep_get_status_func, kBadEp>("dat_ep_get_status", ep, state,
                                                              recv_idle, request_idle);
}
DAT_RETURN dat_ep_free(DAT_EP_HANDLE ep) {
    return forward_end<&DAT_PROVIDER::ep_free_func, kBadEp>("dat_ep_free", ep);
}
DAT_RETURN dat_ep_reset(DAT_EP_HANDLE ep) {
    return forward<&DAT_PROVIDER::ep_reset_func, kBadEp>("dat_ep_reset", ep);
}
DAT_RETURN dat_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs, DAT_COUNT *bufs_alloc) {
    return forward<&DAT_PROVIDER::ep_recv_query_func, kBadEp>("dat_ep_recv_query", ep, nbufs,
                                                              bufs_alloc);
}
DAT_RETURN dat_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft_high, DAT_COUNT hard_high) {
    return forward<&DAT_PROVIDER::ep_set_watermark_func, kBadEp>("dat_ep_set_watermark", ep,
                                                                 soft_high, hard_high);
}

}  // extern "C"

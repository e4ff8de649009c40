// Checks shared by every transport's data path.
#pragma once

#include <cstring>
#include <type_traits>

#include "util/objects.hpp"

namespace opendat::util {

// The raw value of a C enum a consumer passed (a DAT_QOS, a DAT_SERVICE_TYPE, ...). It may
// lie outside the enumeration, as a bad argument to refuse; loading it as the enum type is
// undefined behaviour (the ubsan preset stops on it), so its bytes are read as the
// underlying integer.
template <class E>
auto enum_bits(const E &e) noexcept {
    static_assert(std::is_enum_v<E>);
    std::underlying_type_t<E> v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

// dat_ep_post_rdma_write's argument checks (entries_ep.cpp), shared with the write with
// immediate data (extension.cpp): a live EP, a local IOV, the remote triplet, and no more
// segments than the EP's attributes allow. Sets *ep.
DAT_RETURN rdma_write_checks(DAT_EP_HANDLE h, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                             const DAT_RMR_TRIPLET *remote, Ep **ep) noexcept;

// dat_ep_post_send's and dat_ep_post_recv's argument checks: a live EP, a local IOV of no
// more segments than the EP's attributes allow and, for a receive, an EP that takes its
// receives from no SRQ. Sets *ep. Inline: the shared entry points (entries_ep.cpp) and a
// provider's own (HotEntries, util/provider_table.hpp) make the same checks.
[[gnu::always_inline]] inline DAT_RETURN post_checks(DAT_EP_HANDLE h, DAT_COUNT n,
                                                     const DAT_LMR_TRIPLET *iov, Ep **ep) noexcept {
    Ep *e = as<Ep>(h);
    if (e == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    if (n < 0 || (n > 0 && iov == nullptr)) return bad_arg(2);
    *ep = e;
    return DAT_SUCCESS;
}
[[gnu::always_inline]] inline DAT_RETURN send_checks(DAT_EP_HANDLE h, DAT_COUNT n,
                                                     const DAT_LMR_TRIPLET *iov, Ep **ep) noexcept {
    if (DAT_RETURN rc = post_checks(h, n, iov, ep); rc != DAT_SUCCESS) return rc;
    if (n > (*ep)->attr.max_request_iov) return err(DAT_LENGTH_ERROR);
    return DAT_SUCCESS;
}
[[gnu::cold]] DAT_RETURN recv_on_srq_ep(const Ep *ep) noexcept;  // traced (entries_ep.cpp)
[[gnu::always_inline]] inline DAT_RETURN recv_checks(DAT_EP_HANDLE h, DAT_COUNT n,
                                                     const DAT_LMR_TRIPLET *iov, Ep **ep) noexcept {
    if (DAT_RETURN rc = post_checks(h, n, iov, ep); rc != DAT_SUCCESS) return rc;
    if (n > (*ep)->attr.max_recv_iov) return err(DAT_LENGTH_ERROR);
    if ((*ep)->srq != nullptr) return recv_on_srq_ep(*ep);
    return DAT_SUCCESS;
}

}  // namespace opendat::util

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

// Validates a local IOV against the EP's PZ and the LMR table: every segment with a
// non-zero length must lie inside a live LMR of that PZ granting `need`. Sets *total to
// the IOV's byte count. Local reads need no privilege (as on an HCA); a receive or RDMA
// read destination needs DAT_MEM_PRIV_LOCAL_WRITE_FLAG.
// dat_ep_post_rdma_write's argument checks (entries_ep.cpp), shared with the write with
// immediate data (extension.cpp): a live EP, a local IOV, the remote triplet, and no more
// segments than the EP's attributes allow. Sets *ep.
DAT_RETURN rdma_write_checks(DAT_EP_HANDLE h, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                             const DAT_RMR_TRIPLET *remote, Ep **ep) noexcept;

DAT_DTO_COMPLETION_STATUS check_local_iov(const Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                          DAT_MEM_PRIV_FLAGS need, std::uint64_t *total) noexcept;
// The same through the caller's cache of its last check (util/memory.hpp, LocalCheckCache).
DAT_DTO_COMPLETION_STATUS check_local_iov(const Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                          DAT_MEM_PRIV_FLAGS need, std::uint64_t *total,
                                          LocalCheckCache *cache) noexcept;

}  // namespace opendat::util

// Checks shared by every transport's data path.
#pragma once

#include "util/objects.hpp"

namespace opendat::util {

// Validates a local IOV against the EP's PZ and the LMR table: every segment with a
// non-zero length must lie inside a live LMR of that PZ granting `need`. Sets *total to
// the IOV's byte count. Local reads need no privilege (as on an HCA); a receive or RDMA
// read destination needs DAT_MEM_PRIV_LOCAL_WRITE_FLAG.
DAT_DTO_COMPLETION_STATUS check_local_iov(const Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                          DAT_MEM_PRIV_FLAGS need, std::uint64_t *total) noexcept;

}  // namespace opendat::util

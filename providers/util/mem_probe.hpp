// Registration of memory the CPU will copy to and from (software memory keys): the range
// must be mapped, readable, and writable when the registration lets anyone write into it.
// An RDMA adapter pins and checks pages at registration; without this check a remote
// write into read-only or unmapped memory would kill the process in the copy path.
#pragma once

#include <cstdint>

#include <dat2/udat.h>

namespace opendat::util {

// DAT_SUCCESS; DAT_INVALID_PARAMETER | DAT_INVALID_ARG3 (the region) when part of the range
// is not mapped or not readable; DAT_PRIVILEGES_VIOLATION when `priv` grants LOCAL_WRITE or
// REMOTE_WRITE on memory that is not writable. Reads /proc/self/maps: registration only,
// never a data path.
DAT_RETURN probe_registration(std::uint64_t addr, std::uint64_t len,
                              DAT_MEM_PRIV_FLAGS priv) noexcept;

}  // namespace opendat::util

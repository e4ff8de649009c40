// The revocation barrier: a hold on registered memory while bytes move into or out of it.
//
// A transport that copies with the CPU (tcp) checks an access on a frame's header and
// then moves the payload over many wake-ups. Without more, dat_rmr_bind (unbind),
// dat_rmr_free and dat_lmr_free would return while a later chunk still lands in (or is
// sent from) the memory they revoked. So every chunk is moved under an AccessHold:
//
//  - the hold takes the MemTable's lock (util/revocation_lock.hpp) shared, re-checks the
//    key, range and privileges the chunk needs, and keeps the lock until the copy
//    (memcpy, readv or sendmsg of a non-blocking socket: bounded) is done;
//  - revocation removes the key under the same lock held exclusively (MemTable::remove),
//    so it waits for every chunk in flight, and every later chunk finds the key gone.
//
// When dat_lmr_free / dat_rmr_free / an unbind returns, no later byte reaches or leaves
// the memory. The transfer that found its key gone is not resumed: the transport breaks
// that connection (docs/tcp-provider.md, "Revocation").
//
// A hold takes no other lock and must not be kept across anything that can call back
// into the application (posting events): a callback that frees memory would wait for it.
#pragma once

#include <cstdint>
#include <shared_mutex>  // std::shared_lock

#include "util/memory.hpp"

namespace opendat::util {

class AccessHold {
  public:
    explicit AccessHold(const MemTable &table) noexcept : table_(table), lk_(table.mu_) {}
    AccessHold(const AccessHold &) = delete;
    AccessHold &operator=(const AccessHold &) = delete;

    // A remote access through `rkey` (an LMR's rmr_context or a bound window) from the
    // connection of endpoint `ep` in protection zone `pz`. A window is usable only by the
    // endpoint it was bound through (DAT_RMR_SCOPE_EP); an LMR's own rmr_context by any
    // endpoint of its PZ. DAT_DTO_SUCCESS or DAT_DTO_ERR_REMOTE_ACCESS.
    DAT_DTO_COMPLETION_STATUS remote(std::uint32_t rkey, const Pz *pz, const void *ep,
                                     std::uint64_t addr, std::uint64_t len,
                                     DAT_MEM_PRIV_FLAGS need) const noexcept;
    // Every non-empty segment of a local IOV (LMR keys) still registered with `need`.
    // DAT_DTO_SUCCESS or DAT_DTO_ERR_LOCAL_PROTECTION.
    DAT_DTO_COMPLETION_STATUS local(const DAT_LMR_TRIPLET *iov, std::uint32_t n, const Pz *pz,
                                    DAT_MEM_PRIV_FLAGS need) const noexcept;
    // The same through the poster's cache of its last check (util/memory.hpp): a
    // one-segment IOV it passed, with no key added or removed since, needs no lookup.
    DAT_DTO_COMPLETION_STATUS local(const DAT_LMR_TRIPLET *iov, std::uint32_t n, const Pz *pz,
                                    DAT_MEM_PRIV_FLAGS need, LocalCheckCache *cache) const noexcept;

  private:
    const MemTable &table_;
    std::shared_lock<RevocationLock> lk_;
};

}  // namespace opendat::util

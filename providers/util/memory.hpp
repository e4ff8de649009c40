// Protection zones, LMRs, RMRs and the per-IA key table.
//
// lmr_context and rmr_context values are random 32-bit keys (getrandom), looked up in a
// table, so a peer cannot forge access by guessing sequential values. Every access check,
// local or remote, goes through MemTable::check(): key alive, same PZ, range inside the
// region, required privileges present. The remote side calls it before any byte of an
// RDMA write or read touches memory.
#pragma once

#include <cstdint>
#include <mutex>

#include "util/key_map.hpp"
#include "util/memory_range.hpp"
#include "util/object.hpp"
#include "util/revocation_lock.hpp"
#include "util/use_count.hpp"

namespace opendat::util {

struct Pz : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_PZ;
    Pz(const DAT_PROVIDER *p, Ia *ia) : Header(p, kType, ia) {}
    UseCount users;        // LMRs, RMRs, EPs and SRQs in this PZ
    void *impl = nullptr;  // the transport's (verbs: the protection domain)
};

class AccessHold;

enum class KeyKind { Lmr, Rmr };

// The last one-segment local IOV that passed a check under the revocation hold
// (AccessHold::local, MemTable::check_iov_locked): the next one through the same LMR, with
// no LMR freed in between (the table's LMR generation unchanged), passes without the
// table's lookup. Owned by whoever moves the bytes (an endpoint, one per direction), used
// under that owner's lock.
struct LocalCheckCache {
    std::uint64_t gen = 0;  // the table's LMR generation when it was filled; 0: empty
    std::uint32_t key = 0;
    MemRange range;
};

class MemTable {
  public:
    // Allocates a fresh key not in use (of either kind) and records `range` under it.
    // DAT_INSUFFICIENT_RESOURCES | DAT_RESOURCE_MEMORY when the table cannot grow.
    DAT_RETURN add(KeyKind kind, const MemRange &range, std::uint32_t *key) noexcept;
    void remove(KeyKind kind, std::uint32_t key) noexcept;

    // The access check. Returns DAT_DTO_SUCCESS or the DTO status to report:
    // DAT_DTO_ERR_LOCAL_PROTECTION (local) / DAT_DTO_ERR_REMOTE_ACCESS (remote).
    DAT_DTO_COMPLETION_STATUS check(KeyKind kind, std::uint32_t key, const Pz *pz,
                                    std::uint64_t addr, std::uint64_t len,
                                    DAT_MEM_PRIV_FLAGS need) const noexcept;
    // The same check for every non-empty segment of a local IOV (LMR keys), under one
    // lock; *total = the bytes it covers.
    DAT_DTO_COMPLETION_STATUS check_iov(const DAT_LMR_TRIPLET *iov, DAT_COUNT n, const Pz *pz,
                                        DAT_MEM_PRIV_FLAGS need,
                                        std::uint64_t *total) const noexcept;

  private:
    friend class AccessHold;  // the revocation barrier (util/access_guard.hpp) holds mu_
    // `ep` (remote keys): a window bound through an endpoint answers only on that one.
    DAT_DTO_COMPLETION_STATUS check_locked(KeyKind kind, std::uint32_t key, const Pz *pz,
                                           std::uint64_t addr, std::uint64_t len,
                                           DAT_MEM_PRIV_FLAGS need,
                                           const void *ep = nullptr) const noexcept;
    // The local segments of a post, mu_ held; `total` (may be null) gets their length.
    DAT_DTO_COMPLETION_STATUS check_iov_locked(const DAT_LMR_TRIPLET *iov, std::uint32_t n,
                                               const Pz *pz, DAT_MEM_PRIV_FLAGS need,
                                               std::uint64_t *total) const noexcept;
    // The same, answered from `cache` when it can be (see LocalCheckCache), and filling it
    // when a one-segment IOV passes the full check (mu_ held).
    DAT_DTO_COMPLETION_STATUS check_iov_locked(const DAT_LMR_TRIPLET *iov, std::uint32_t n,
                                               const Pz *pz, DAT_MEM_PRIV_FLAGS need,
                                               std::uint64_t *total,
                                               LocalCheckCache *cache) const noexcept;
    // Whether `cache`, filled at generation `gen`, passes segment `s` as check_locked would.
    static bool answers(const LocalCheckCache &cache, std::uint64_t gen, const DAT_LMR_TRIPLET &s,
                        const Pz *pz, DAT_MEM_PRIV_FLAGS need) noexcept;
    mutable RevocationLock mu_;
    KeyMap lmr_;
    KeyMap rmr_;
    // Bumped by every LMR removal, under the exclusive lock, and read under the shared one
    // (so a plain word): a LocalCheckCache filled at the same generation still says what
    // the table says.
    std::uint64_t lmr_gen_ = 1;
};

struct Lmr : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_LMR;
    Lmr(const DAT_PROVIDER *p, Ia *ia) : Header(p, kType, ia) {}
    DAT_MEM_TYPE mem_type = DAT_MEM_TYPE_VIRTUAL;
    DAT_REGION_DESCRIPTION region{};
    Pz *pz = nullptr;
    MemRange range;
    DAT_VA_TYPE va_type = DAT_VA_TYPE_VA;
    std::uint32_t lmr_context = 0;
    std::uint32_t rmr_context = 0;  // 0 when the LMR grants no remote access
    void *impl = nullptr;           // the transport's (verbs: the memory region)
    // RMRs bound to it, or being bound: dat_lmr_free is refused while any is (a bind takes
    // its use before the transport makes the window's key: util/use_count.hpp).
    UseCount windows;
};

struct Rmr : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_RMR;
    Rmr(const DAT_PROVIDER *p, Ia *ia) : Header(p, kType, ia) {}
    Pz *pz = nullptr;
    DAT_LMR_TRIPLET triplet{};
    DAT_MEM_PRIV_FLAGS priv = DAT_MEM_PRIV_NONE_FLAG;
    DAT_VA_TYPE va_type = DAT_VA_TYPE_VA;
    std::uint32_t rmr_context = 0;  // 0 while unbound
    void *impl = nullptr;           // the transport's (verbs: the memory window)
    // The LMR the window is bound to (nullptr while unbound). A verbs unbind is a
    // zero-length bind that must still name a memory region: this one.
    Lmr *bound = nullptr;
    // Held by dat_rmr_bind and, after its claim, by dat_rmr_free: a bind that checked the
    // RMR before the free's claim either has bound (and the free unbinds) or finds it dead,
    // so no key of a freed window stays live. Two binds of one RMR take turns.
    std::mutex mu;
};

}  // namespace opendat::util

#include "util/memory.hpp"

#include <sys/random.h>

#include <mutex>
#include <shared_mutex>

namespace opendat::util {

namespace {
std::uint32_t random_key() noexcept {
    std::uint32_t k = 0;
    while (getrandom(&k, sizeof k, 0) != static_cast<ssize_t>(sizeof k)) {
    }
    return k;
}
}  // namespace

DAT_RETURN MemTable::add(KeyKind kind, const MemRange &range, std::uint32_t *key) noexcept {
    std::unique_lock lk(mu_);
    auto &map = kind == KeyKind::Lmr ? lmr_ : rmr_;
    for (;;) {
        std::uint32_t k = random_key();
        // 0 means "no key" in our objects; keys are unique across both kinds so a
        // context of one kind can never be mistaken for the other.
        if (k == 0 || lmr_.contains(k) || rmr_.contains(k)) continue;
        if (!map.insert(k, range)) return kNoMemory;
        *key = k;
        return DAT_SUCCESS;
    }
}

void MemTable::remove(KeyKind kind, std::uint32_t key) noexcept {
    std::unique_lock lk(mu_);
    if (kind == KeyKind::Rmr) {
        rmr_.erase(key);
        return;
    }
    lmr_.erase(key);
    // Under the exclusive lock, where every cached answer reads it (under the shared one):
    // a chunk checked after this remove returns sees the new generation. Only an LMR's
    // removal can make a cached answer wrong (a new key never takes a live one's place;
    // RMR keys are another map), so windows bound and unbound per operation leave the
    // caches warm.
    ++lmr_gen_;
}

DAT_DTO_COMPLETION_STATUS MemTable::check(KeyKind kind, std::uint32_t key, const Pz *pz,
                                          std::uint64_t addr, std::uint64_t len,
                                          DAT_MEM_PRIV_FLAGS need) const noexcept {
    std::shared_lock lk(mu_);
    return check_locked(kind, key, pz, addr, len, need);
}

[[gnu::hot]] DAT_DTO_COMPLETION_STATUS MemTable::check_iov(const DAT_LMR_TRIPLET *iov, DAT_COUNT n,
                                                           const Pz *pz, DAT_MEM_PRIV_FLAGS need,
                                                           std::uint64_t *total) const noexcept {
    std::shared_lock lk(mu_);  // once per post, not once per segment
    return check_iov_locked(iov, n > 0 ? static_cast<std::uint32_t>(n) : 0, pz, need, total);
}

[[gnu::hot]] bool MemTable::answers(const LocalCheckCache &cache, std::uint64_t gen,
                                    const DAT_LMR_TRIPLET &s, const Pz *pz,
                                    DAT_MEM_PRIV_FLAGS need) noexcept {
    // What check_locked would decide, on the table as it was at the cached generation.
    const MemRange &r = cache.range;
    return cache.gen == gen && cache.key == s.lmr_context && s.segment_length != 0 &&
           (pz == nullptr || r.pz == pz) && (r.priv & need) == need &&
           s.virtual_address >= r.addr && s.virtual_address - r.addr <= r.len &&
           s.segment_length <= r.len - (s.virtual_address - r.addr);
}

[[gnu::hot]] DAT_DTO_COMPLETION_STATUS MemTable::check_iov_locked(
    const DAT_LMR_TRIPLET *iov, std::uint32_t n, const Pz *pz, DAT_MEM_PRIV_FLAGS need,
    std::uint64_t *total, LocalCheckCache *cache) const noexcept {
    // No writer is inside while the lock is held: the generation is what it was when the
    // cache would be filled.
    const std::uint64_t gen = lmr_gen_;
    if (n == 1 && answers(*cache, gen, iov[0], pz, need)) {
        if (total != nullptr) *total = iov[0].segment_length;
        return DAT_DTO_SUCCESS;
    }
    DAT_DTO_COMPLETION_STATUS st = check_iov_locked(iov, n, pz, need, total);
    if (st == DAT_DTO_SUCCESS && n == 1 && iov[0].segment_length != 0) {
        cache->range = *lmr_.find(iov[0].lmr_context);  // there: the check passed
        cache->key = iov[0].lmr_context;
        cache->gen = gen;
    }
    return st;
}

[[gnu::hot]] DAT_DTO_COMPLETION_STATUS MemTable::check_iov_locked(
    const DAT_LMR_TRIPLET *iov, std::uint32_t n, const Pz *pz, DAT_MEM_PRIV_FLAGS need,
    std::uint64_t *total) const noexcept {
    std::uint64_t sum = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
        const DAT_LMR_TRIPLET &s = iov[i];
        if (s.segment_length == 0) continue;
        DAT_DTO_COMPLETION_STATUS st = check_locked(KeyKind::Lmr, s.lmr_context, pz,
                                                    s.virtual_address, s.segment_length, need);
        if (st != DAT_DTO_SUCCESS) return st;
        sum += s.segment_length;
    }
    if (total != nullptr) *total = sum;
    return DAT_DTO_SUCCESS;
}

[[gnu::hot]] DAT_DTO_COMPLETION_STATUS MemTable::check_locked(KeyKind kind, std::uint32_t key,
                                                              const Pz *pz, std::uint64_t addr,
                                                              std::uint64_t len,
                                                              DAT_MEM_PRIV_FLAGS need,
                                                              const void *ep) const noexcept {
    const DAT_DTO_COMPLETION_STATUS fail =
        kind == KeyKind::Lmr ? DAT_DTO_ERR_LOCAL_PROTECTION : DAT_DTO_ERR_REMOTE_ACCESS;
    // A remote key may name an LMR (its rmr_context) or a bound RMR window.
    const MemRange *r = (kind == KeyKind::Lmr ? lmr_ : rmr_).find(key);
    if (r == nullptr) return fail;
    if (pz != nullptr && r->pz != pz) return fail;
    if (ep != nullptr && r->ep != nullptr && r->ep != ep) return fail;  // the window's EP scope
    if ((r->priv & need) != need) return fail;
    if (len == 0) return DAT_DTO_SUCCESS;
    if (addr < r->addr || addr - r->addr > r->len || len > r->len - (addr - r->addr)) return fail;
    return DAT_DTO_SUCCESS;
}

}  // namespace opendat::util

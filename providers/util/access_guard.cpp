#include "util/access_guard.hpp"

namespace opendat::util {

[[gnu::hot]] DAT_DTO_COMPLETION_STATUS AccessHold::remote(std::uint32_t rkey, const Pz *pz,
                                                          const void *ep, std::uint64_t addr,
                                                          std::uint64_t len,
                                                          DAT_MEM_PRIV_FLAGS need) const noexcept {
    return table_.check_locked(KeyKind::Rmr, rkey, pz, addr, len, need, ep);
}

[[gnu::hot]] DAT_DTO_COMPLETION_STATUS AccessHold::local(const DAT_LMR_TRIPLET *iov,
                                                         std::uint32_t n, const Pz *pz,
                                                         DAT_MEM_PRIV_FLAGS need) const noexcept {
    return table_.check_iov_locked(iov, n, pz, need, nullptr);
}

[[gnu::hot]] DAT_DTO_COMPLETION_STATUS AccessHold::local(const DAT_LMR_TRIPLET *iov,
                                                         std::uint32_t n, const Pz *pz,
                                                         DAT_MEM_PRIV_FLAGS need,
                                                         LocalCheckCache *cache) const noexcept {
    return table_.check_iov_locked(iov, n, pz, need, nullptr, cache);
}

}  // namespace opendat::util

#include "util/access_guard.hpp"

namespace opendat::util {

DAT_DTO_COMPLETION_STATUS AccessHold::remote(std::uint32_t rkey, const Pz *pz, const void *ep,
                                             std::uint64_t addr, std::uint64_t len,
                                             DAT_MEM_PRIV_FLAGS need) const noexcept {
    DAT_DTO_COMPLETION_STATUS st = table_.check_locked(KeyKind::Rmr, rkey, pz, addr, len, need);
    if (st != DAT_DTO_SUCCESS) return st;
    // EP scope: a window answers only on the connection it was bound through.
    auto it = table_.rmr_.find(rkey);
    if (it != table_.rmr_.end() && it->second.ep != nullptr && it->second.ep != ep)
        return DAT_DTO_ERR_REMOTE_ACCESS;
    return DAT_DTO_SUCCESS;
}

DAT_DTO_COMPLETION_STATUS AccessHold::local(const DAT_LMR_TRIPLET *iov, std::uint32_t n,
                                            const Pz *pz, DAT_MEM_PRIV_FLAGS need) const noexcept {
    for (std::uint32_t i = 0; i < n; ++i) {
        const DAT_LMR_TRIPLET &s = iov[i];
        if (s.segment_length == 0) continue;
        DAT_DTO_COMPLETION_STATUS st = table_.check_locked(
            KeyKind::Lmr, s.lmr_context, pz, s.virtual_address, s.segment_length, need);
        if (st != DAT_DTO_SUCCESS) return st;
    }
    return DAT_DTO_SUCCESS;
}

}  // namespace opendat::util

// Protection zones, LMRs and RMRs on the device: a PZ owns a protection domain, an LMR a
// memory region (its lkey/rkey are the lmr_context/rmr_context the consumer sees, so the
// device itself checks every access), an RMR a type-1 memory window.
#pragma once

#include "util/memory.hpp"
#include "verbs/raii.hpp"

namespace opendat::verbs {

struct VPz : util::Pz {
    VPz(const DAT_PROVIDER *p, util::Ia *ia, ibv_pd *pd) : util::Pz(p, ia), pd_(pd) {}
    ibv_pd *pd() const noexcept { return pd_.get(); }

  private:
    PdPtr pd_;
};

struct VLmr : util::Lmr {
    VLmr(const DAT_PROVIDER *p, util::Ia *ia) : util::Lmr(p, ia) {}
    MrPtr mr;
    std::atomic<int> windows{0};  // RMRs bound to it: it cannot be freed under them
};

struct VRmr : util::Rmr {
    VRmr(const DAT_PROVIDER *p, util::Ia *ia) : util::Rmr(p, ia) {}
    MwPtr mw;
    // The LMR the window is bound to, if any. An unbind is a zero-length bind that still
    // names a memory region of the window's PD (rxe, for one, reads it), so it names this.
    VLmr *bound = nullptr;
};

inline VPz *as_vpz(util::Pz *pz) noexcept {
    return static_cast<VPz *>(pz);
}

// DAT privileges → verbs access flags. Verbs requires local write wherever remote write
// or remote atomics are granted, so those imply it.
int access_flags(DAT_MEM_PRIV_FLAGS priv, bool mw_bind) noexcept;

namespace entry {
DAT_RETURN pz_create(DAT_IA_HANDLE, DAT_PZ_HANDLE *) noexcept;
DAT_RETURN pz_free(DAT_PZ_HANDLE) noexcept;
DAT_RETURN lmr_create(DAT_IA_HANDLE, DAT_MEM_TYPE, DAT_REGION_DESCRIPTION, DAT_VLEN, DAT_PZ_HANDLE,
                      DAT_MEM_PRIV_FLAGS, DAT_VA_TYPE, DAT_LMR_HANDLE *, DAT_LMR_CONTEXT *,
                      DAT_RMR_CONTEXT *, DAT_VLEN *, DAT_VADDR *) noexcept;
DAT_RETURN lmr_free(DAT_LMR_HANDLE) noexcept;
DAT_RETURN rmr_create(DAT_PZ_HANDLE, DAT_RMR_HANDLE *) noexcept;
DAT_RETURN rmr_bind(DAT_RMR_HANDLE, DAT_LMR_HANDLE, const DAT_LMR_TRIPLET *, DAT_MEM_PRIV_FLAGS,
                    DAT_VA_TYPE, DAT_EP_HANDLE, DAT_RMR_COOKIE, DAT_COMPLETION_FLAGS,
                    DAT_RMR_CONTEXT *) noexcept;
DAT_RETURN rmr_free(DAT_RMR_HANDLE) noexcept;
}  // namespace entry

}  // namespace opendat::verbs

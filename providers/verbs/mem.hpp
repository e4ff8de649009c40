// Protection zones, LMRs and RMRs on the device (VerbsTransport's memory hooks, mem.cpp):
// a PZ owns a protection domain, an LMR a memory region (its lkey/rkey are the
// lmr_context/rmr_context the consumer sees, so the device itself checks every access),
// an RMR a type-1 memory window. util keeps the DAT objects and their bookkeeping; each
// object's `impl` is the verbs resource, owned by it from create to free.
#pragma once

#include "util/memory.hpp"
#include "verbs/raii.hpp"

namespace opendat::verbs {

inline ibv_pd *pd_of(const util::Pz *pz) noexcept {
    return static_cast<ibv_pd *>(pz->impl);
}
inline ibv_mr *mr_of(const util::Lmr *lmr) noexcept {
    return static_cast<ibv_mr *>(lmr->impl);
}
inline ibv_mw *mw_of(const util::Rmr *rmr) noexcept {
    return static_cast<ibv_mw *>(rmr->impl);
}

// DAT privileges → verbs access flags. Verbs requires local write wherever remote write
// or remote atomics are granted, so those imply it.
int access_flags(DAT_MEM_PRIV_FLAGS priv, bool mw_bind) noexcept;

}  // namespace opendat::verbs

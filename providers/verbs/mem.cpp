#include "verbs/mem.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "trace/trace.hpp"
#include "util/objects.hpp"
#include "verbs/device_retire.hpp"
#include "verbs/ep_impl.hpp"
#include "verbs/transport.hpp"

namespace opendat::verbs {

int access_flags(DAT_MEM_PRIV_FLAGS priv, bool mw_bind) noexcept {
    int a = 0;
    if (priv & DAT_MEM_PRIV_LOCAL_WRITE_FLAG) a |= IBV_ACCESS_LOCAL_WRITE;
    if (priv & DAT_MEM_PRIV_REMOTE_READ_FLAG) a |= IBV_ACCESS_REMOTE_READ;
    if (priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
        a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if (priv & DAT_MEM_PRIV_EXTENSION_BASE)
        a |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;  // IB remote atomic
    // LOCAL_READ needs nothing: a region is always locally readable.
    if (mw_bind) a |= IBV_ACCESS_MW_BIND;
    return a;
}

// Each hook runs after util's checks (util/transport.hpp); util frees its object when a
// create hook fails and deletes it after a free hook.

DAT_RETURN VerbsTransport::pz_create(util::Pz *pz) noexcept {
    ibv_pd *pd = ibv_alloc_pd(dev_.ctx);
    if (pd == nullptr) return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_PROTECTION_DOMAIN);
    pz->impl = pd;
    return DAT_SUCCESS;
}

void VerbsTransport::pz_destroy(util::Pz *pz) noexcept {
    // util frees no PZ still in use, but a queue pair of an EP freed before may still wait
    // for its grace period: the PD goes after it (verbs/device_retire.hpp).
    retire_pd(pd_of(pz));
    pz->impl = nullptr;
}

DAT_RETURN VerbsTransport::lmr_register(util::Lmr *lmr) noexcept {
    if (lmr->va_type != DAT_VA_TYPE_VA)
        return util::err(DAT_MODEL_NOT_SUPPORTED);  // zero-based: not offered
    // A memory region cannot be empty (util accepts an empty software LMR).
    if (lmr->range.len == 0) return util::bad_arg(3);
    void *addr = reinterpret_cast<void *>(static_cast<std::uintptr_t>(lmr->range.addr));
    std::uint64_t length = lmr->range.len;
    DAT_MEM_PRIV_FLAGS priv = lmr->range.priv;
    ibv_mr *mr = ibv_reg_mr(pd_of(lmr->pz), addr, length, access_flags(priv, mw_supported()));
    if (mr == nullptr) {
        int e = errno;
        DAPL_TRC(trace::kError, "verbs", "ibv_reg_mr(%p, %llu, priv 0x%x): %s", addr,
                 static_cast<unsigned long long>(length), priv, std::strerror(e));
        if (e == ENOMEM || e == EAGAIN)
            return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
        if (e == EFAULT) return util::bad_arg(3);
        return util::err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
    }
    lmr->impl = mr;
    lmr->lmr_context = mr->lkey;
    lmr->rmr_context = mr->rkey;
    return DAT_SUCCESS;
}

void VerbsTransport::lmr_deregister(util::Lmr *lmr) noexcept {
    // No access, local or remote, after this. The device refuses while a memory window
    // is still bound to the region (a failed unbind): then it stays registered, and said.
    if (int rc = ibv_dereg_mr(mr_of(lmr)); rc != 0)
        DAPL_TRC(trace::kError, "verbs", "ibv_dereg_mr (LMR %p): %s: the region stays registered",
                 static_cast<void *>(lmr), std::strerror(rc));
    lmr->impl = nullptr;
}

DAT_RETURN VerbsTransport::rmr_create(util::Rmr *rmr) noexcept {
    // A device without memory windows cannot give RMRs (its max_rmrs is 0).
    if (!mw_supported()) return util::err(DAT_MODEL_NOT_SUPPORTED);
    ibv_mw *mw = ibv_alloc_mw(pd_of(rmr->pz), IBV_MW_TYPE_1);
    if (mw == nullptr) {
        DAPL_TRC(trace::kError, "verbs", "ibv_alloc_mw: %s", std::strerror(errno));
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
    }
    rmr->impl = mw;
    return DAT_SUCCESS;
}

// Binding posts a bind work request on the EP's send queue: its completion (an RMR bind
// event) arrives on the EP's request EVD, in order with the EP's other requests.
DAT_RETURN VerbsTransport::rmr_bind(util::Rmr *rmr, util::Lmr *lmr, const DAT_LMR_TRIPLET *t,
                                    DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, util::Ep *ep,
                                    DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    ibv_qp *const qp = impl->qp.get();  // read once: a dat_ep_modify may replace it
    if (qp == nullptr) return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED);
    ibv_mw_bind bind{};
    if (lmr != nullptr) {  // nullptr = unbind (a zero-length bind)
        bind.bind_info.mr = mr_of(lmr);
        bind.bind_info.addr = t->virtual_address;
        bind.bind_info.length = t->segment_length;
        bind.bind_info.mw_access_flags =
            access_flags(priv, false) &
            (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    }
    if (lmr == nullptr) {
        if (rmr->bound == nullptr) {
            // Never bound, or unbound already: there is no window to invalidate, and no
            // region to name in a bind request.
            DAPL_TRC(trace::kError, "verbs", "dat_rmr_bind: unbinding RMR %p, which is not bound",
                     static_cast<void *>(rmr));
            return util::err(DAT_INVALID_STATE);
        }
        bind.bind_info.mr = mr_of(rmr->bound);  // length 0: the window goes
    }
    WrSlot *slot = impl->sq.next();
    slot->cookie.as_64 = cookie.as_64;
    slot->length = 0;
    slot->op = DAT_DTO_BIND_MW;
    slot->suppress = (flags & DAT_COMPLETION_SUPPRESS_FLAG) != 0;
    slot->rmr = rmr;
    slot->ext = -1;
    slot->retires = 1 + impl->sq.unsignalled.exchange(0, std::memory_order_relaxed);
    bind.wr_id = reinterpret_cast<std::uintptr_t>(slot);
    bind.send_flags = IBV_SEND_SIGNALED;
    ibv_mw *mw = mw_of(rmr);
    impl->sq.outstanding.fetch_add(1);
    if (int rc = ibv_bind_mw(qp, mw, &bind); rc != 0) {
        impl->sq.outstanding.fetch_sub(1);
        DAPL_TRC(trace::kError, "verbs", "ibv_bind_mw: %s", std::strerror(rc));
        return rc == ENOMEM ? util::err(DAT_INSUFFICIENT_RESOURCES)
                            : util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
    }
    rmr->rmr_context = lmr != nullptr ? mw->rkey : 0;
    if (lmr != nullptr) rmr->triplet = *t;
    rmr->priv = priv;
    rmr->va_type = va_type;
    return DAT_SUCCESS;
}

void VerbsTransport::rmr_free(util::Rmr *rmr) noexcept {
    ibv_dealloc_mw(mw_of(rmr));
    rmr->impl = nullptr;
}

}  // namespace opendat::verbs

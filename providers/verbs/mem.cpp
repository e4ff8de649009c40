#include "verbs/mem.hpp"

#include <cerrno>
#include <cstring>
#include <new>

#include "trace/trace.hpp"
#include "util/objects.hpp"
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

namespace {
VerbsTransport *transport_of(util::Ia *ia) noexcept {
    return static_cast<VerbsTransport *>(ia->transport.get());
}
}  // namespace

namespace entry {

DAT_RETURN pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE *out) noexcept {
    auto *ia = util::as<util::Ia>(h);
    if (ia == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_IA);
    if (out == nullptr) return util::bad_arg(2);
    ibv_pd *pd = ibv_alloc_pd(transport_of(ia)->device().ctx);
    if (pd == nullptr) return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_PROTECTION_DOMAIN);
    auto *pz = new (std::nothrow) VPz(ia->provider, ia, pd);
    if (pz == nullptr) {
        ibv_dealloc_pd(pd);
        return util::kNoMemory;
    }
    ia->objects.fetch_add(1);
    *out = pz;
    return DAT_SUCCESS;
}

DAT_RETURN pz_free(DAT_PZ_HANDLE h) noexcept {
    auto *pz = util::as<util::Pz>(h);
    if (pz == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_PZ);
    if (pz->users.load() != 0) return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);
    pz->ia->objects.fetch_sub(1);
    delete as_vpz(pz);
    return DAT_SUCCESS;
}

DAT_RETURN lmr_create(DAT_IA_HANDLE h, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region,
                      DAT_VLEN length, DAT_PZ_HANDLE pz_h, DAT_MEM_PRIV_FLAGS priv,
                      DAT_VA_TYPE va_type, DAT_LMR_HANDLE *lmr_out, DAT_LMR_CONTEXT *lmr_ctx,
                      DAT_RMR_CONTEXT *rmr_ctx, DAT_VLEN *reg_len, DAT_VADDR *reg_addr) noexcept {
    auto *ia = util::as<util::Ia>(h);
    if (ia == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_IA);
    auto *pz = util::as<util::Pz>(pz_h);
    if (pz == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_PZ);
    if (lmr_out == nullptr) return util::bad_arg(8);
    if (va_type != DAT_VA_TYPE_VA)
        return util::err(DAT_MODEL_NOT_SUPPORTED);  // zero-based: not offered
    void *addr = nullptr;
    switch (mem_type) {
        case DAT_MEM_TYPE_VIRTUAL:
            if (region.for_va == nullptr || length == 0) return util::bad_arg(3);
            addr = region.for_va;
            break;
        case DAT_MEM_TYPE_LMR: {
            // A new registration of (all of) an existing LMR's memory.
            auto *base = util::as<util::Lmr>(region.for_lmr_handle);
            if (base == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_LMR);
            addr = reinterpret_cast<void *>(static_cast<std::uintptr_t>(base->range.addr));
            length = base->range.len;
            break;
        }
        default:
            return util::err(DAT_MODEL_NOT_SUPPORTED);
    }
    VerbsTransport *tr = transport_of(ia);
    auto *lmr = new (std::nothrow) VLmr(ia->provider, ia);
    if (lmr == nullptr) return util::kNoMemory;
    lmr->mr.reset(
        ibv_reg_mr(as_vpz(pz)->pd(), addr, length, access_flags(priv, tr->mw_supported())));
    if (!lmr->mr) {
        int e = errno;
        DAPL_TRC(trace::kError, "verbs", "ibv_reg_mr(%p, %llu, priv 0x%x): %s", addr,
                 static_cast<unsigned long long>(length), priv, std::strerror(e));
        delete lmr;
        if (e == ENOMEM || e == EAGAIN)
            return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
        if (e == EFAULT) return util::bad_arg(3);
        return util::err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
    }
    lmr->mem_type = mem_type;
    lmr->region = region;
    lmr->pz = pz;
    lmr->range = util::MemRange{reinterpret_cast<std::uintptr_t>(addr), length, priv, pz};
    lmr->va_type = va_type;
    lmr->lmr_context = lmr->mr->lkey;
    lmr->rmr_context = lmr->mr->rkey;
    pz->users.fetch_add(1);
    ia->objects.fetch_add(1);
    *lmr_out = lmr;
    if (lmr_ctx != nullptr) *lmr_ctx = lmr->lmr_context;
    if (rmr_ctx != nullptr) *rmr_ctx = lmr->rmr_context;
    if (reg_len != nullptr) *reg_len = length;
    if (reg_addr != nullptr) *reg_addr = lmr->range.addr;
    return DAT_SUCCESS;
}

DAT_RETURN lmr_free(DAT_LMR_HANDLE h) noexcept {
    auto *lmr = util::as<util::Lmr>(h);
    if (lmr == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_LMR);
    if (static_cast<VLmr *>(lmr)->windows.load() > 0) {
        DAPL_TRC(trace::kError, "verbs", "dat_lmr_free: RMRs are still bound to LMR %p",
                 static_cast<void *>(lmr));
        return util::err(DAT_INVALID_STATE);
    }
    lmr->pz->users.fetch_sub(1);
    lmr->ia->objects.fetch_sub(1);
    delete static_cast<VLmr *>(lmr);  // deregisters: no access, local or remote, after this
    return DAT_SUCCESS;
}

DAT_RETURN rmr_create(DAT_PZ_HANDLE pz_h, DAT_RMR_HANDLE *out) noexcept {
    auto *pz = util::as<util::Pz>(pz_h);
    if (pz == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_PZ);
    if (out == nullptr) return util::bad_arg(2);
    // A device without memory windows cannot give RMRs (its max_rmrs is 0).
    if (!transport_of(pz->ia)->mw_supported()) return util::err(DAT_MODEL_NOT_SUPPORTED);
    auto *rmr = new (std::nothrow) VRmr(pz->provider, pz->ia);
    if (rmr == nullptr) return util::kNoMemory;
    rmr->mw.reset(ibv_alloc_mw(as_vpz(pz)->pd(), IBV_MW_TYPE_1));
    if (!rmr->mw) {
        DAPL_TRC(trace::kError, "verbs", "ibv_alloc_mw: %s", std::strerror(errno));
        delete rmr;
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
    }
    rmr->pz = pz;
    pz->users.fetch_add(1);
    pz->ia->objects.fetch_add(1);
    *out = rmr;
    return DAT_SUCCESS;
}

// Binding posts a bind work request on the EP's send queue: its completion (an RMR bind
// event) arrives on the EP's request EVD, in order with the EP's other requests.
DAT_RETURN rmr_bind(DAT_RMR_HANDLE h, DAT_LMR_HANDLE lmr_h, const DAT_LMR_TRIPLET *t,
                    DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_h,
                    DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                    DAT_RMR_CONTEXT *ctx_out) noexcept {
    auto *rmr = util::as<util::Rmr>(h);
    if (rmr == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_RMR);
    auto *ep = util::as<util::Ep>(ep_h);
    if (ep == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_EP);
    auto *impl = static_cast<EpImpl *>(ep->impl);
    if (!impl->qp) return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED);
    ibv_mw_bind bind{};
    VLmr *lmr = nullptr;
    if (lmr_h != DAT_HANDLE_NULL) {  // NULL LMR = unbind (a zero-length bind)
        auto *l = util::as<util::Lmr>(lmr_h);
        if (l == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_LMR);
        if (t == nullptr) return util::bad_arg(3);
        if (l->pz != rmr->pz) return util::bad_arg(2);
        lmr = static_cast<VLmr *>(l);
        bind.bind_info.mr = lmr->mr.get();
        bind.bind_info.addr = t->virtual_address;
        bind.bind_info.length = t->segment_length;
        bind.bind_info.mw_access_flags =
            access_flags(priv, false) &
            (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    }
    auto *vr = static_cast<VRmr *>(rmr);
    if (lmr == nullptr) {
        if (vr->bound == nullptr) {
            // Never bound, or unbound already: there is no window to invalidate, and no
            // region to name in a bind request.
            DAPL_TRC(trace::kError, "verbs", "dat_rmr_bind: unbinding RMR %p, which is not bound",
                     static_cast<void *>(rmr));
            return util::err(DAT_INVALID_STATE);
        }
        bind.bind_info.mr = vr->bound->mr.get();  // length 0: the window goes
    }
    WrSlot *slot = impl->sq.next();
    slot->cookie.as_64 = cookie.as_64;
    slot->length = 0;
    slot->op = DAT_DTO_BIND_MW;
    slot->suppress = (flags & DAT_COMPLETION_SUPPRESS_FLAG) != 0;
    slot->rmr = rmr;
    bind.wr_id = reinterpret_cast<std::uintptr_t>(slot);
    bind.send_flags = IBV_SEND_SIGNALED;
    impl->sq.outstanding.fetch_add(1);
    if (int rc = ibv_bind_mw(impl->qp.get(), vr->mw.get(), &bind); rc != 0) {
        impl->sq.outstanding.fetch_sub(1);
        DAPL_TRC(trace::kError, "verbs", "ibv_bind_mw: %s", std::strerror(rc));
        return rc == ENOMEM ? util::err(DAT_INSUFFICIENT_RESOURCES)
                            : util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
    }
    if (vr->bound != lmr) {
        if (vr->bound != nullptr) vr->bound->windows.fetch_sub(1);
        if (lmr != nullptr) lmr->windows.fetch_add(1);
        vr->bound = lmr;
    }
    rmr->rmr_context = lmr != nullptr ? vr->mw->rkey : 0;
    if (lmr != nullptr) rmr->triplet = *t;
    rmr->priv = priv;
    rmr->va_type = va_type;
    if (ctx_out != nullptr) *ctx_out = rmr->rmr_context;
    return DAT_SUCCESS;
}

DAT_RETURN rmr_free(DAT_RMR_HANDLE h) noexcept {
    auto *rmr = util::as<util::Rmr>(h);
    if (rmr == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_RMR);
    if (auto *vr = static_cast<VRmr *>(rmr); vr->bound != nullptr) vr->bound->windows.fetch_sub(1);
    rmr->pz->users.fetch_sub(1);
    rmr->ia->objects.fetch_sub(1);
    delete static_cast<VRmr *>(rmr);
    return DAT_SUCCESS;
}

}  // namespace entry
}  // namespace opendat::verbs

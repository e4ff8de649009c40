// LMR and RMR entry points: DAT's checks and the use counts here, the registration itself
// in the transport's hooks (util/transport.hpp; the default is software keys).
#include <new>

#include "trace/trace.hpp"
#include "util/entries.hpp"
#include "util/grace.hpp"
#include "util/objects.hpp"

namespace opendat::util::entry {

DAT_RETURN lmr_create(DAT_IA_HANDLE h, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region,
                      DAT_VLEN length, DAT_PZ_HANDLE pz_h, DAT_MEM_PRIV_FLAGS priv,
                      DAT_VA_TYPE va_type, DAT_LMR_HANDLE *lmr_out, DAT_LMR_CONTEXT *lmr_ctx,
                      DAT_RMR_CONTEXT *rmr_ctx, DAT_VLEN *reg_len, DAT_VADDR *reg_addr) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    Pz *pz = as<Pz>(pz_h, ia);
    if (pz == nullptr) return invalid_handle(DAT_HANDLE_TYPE_PZ);
    if (lmr_out == nullptr) return bad_arg(8);
    MemRange range;
    range.pz = pz;
    range.priv = priv;
    range.len = length;
    switch (mem_type) {
        case DAT_MEM_TYPE_VIRTUAL:
            if (region.for_va == nullptr && length != 0) return bad_arg(3);
            range.addr = reinterpret_cast<std::uintptr_t>(region.for_va);
            break;
        case DAT_MEM_TYPE_LMR: {
            // A new registration of (all of) an existing LMR's memory.
            Lmr *base = as<Lmr>(region.for_lmr_handle, ia);
            if (base == nullptr) return invalid_handle(DAT_HANDLE_TYPE_LMR);
            range.addr = base->range.addr;
            range.len = base->range.len;
            break;
        }
        default:
            return err(DAT_MODEL_NOT_SUPPORTED);
    }
    if (range.addr + range.len < range.addr) return bad_arg(4);
    // Counted before the transport registers in it: a dat_pz_free under way refuses.
    UseHold uses;
    if (!uses.take(&pz->users)) return invalid_handle(DAT_HANDLE_TYPE_PZ);
    Lmr *lmr = new (std::nothrow) Lmr(ia->provider, ia);
    if (lmr == nullptr) return kNoMemory;
    lmr->mem_type = mem_type;
    lmr->region = region;
    lmr->pz = pz;
    lmr->range = range;
    lmr->va_type = va_type;
    if (DAT_RETURN rc = ia->transport->lmr_register(lmr); rc != DAT_SUCCESS) {
        delete lmr;
        return rc;
    }
    uses.keep();
    ia->adopt(lmr);
    *lmr_out = lmr;
    if (lmr_ctx != nullptr) *lmr_ctx = lmr->lmr_context;
    if (rmr_ctx != nullptr) *rmr_ctx = lmr->rmr_context;
    if (reg_len != nullptr) *reg_len = range.len;
    if (reg_addr != nullptr) *reg_addr = range.addr;
    return DAT_SUCCESS;
}

DAT_RETURN lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *p) noexcept {
    Lmr *lmr = as<Lmr>(h);
    if (lmr == nullptr) return invalid_handle(DAT_HANDLE_TYPE_LMR);
    if (p == nullptr) return bad_arg(3);
    if (mask & DAT_LMR_FIELD_IA_HANDLE) p->ia_handle = lmr->ia->consumer_handle();
    if (mask & DAT_LMR_FIELD_MEM_TYPE) p->mem_type = lmr->mem_type;
    if (mask & DAT_LMR_FIELD_REGION_DESC) p->region_desc = lmr->region;
    if (mask & DAT_LMR_FIELD_LENGTH) p->length = lmr->range.len;
    if (mask & DAT_LMR_FIELD_PZ_HANDLE) p->pz_handle = lmr->pz;
    if (mask & DAT_LMR_FIELD_MEM_PRIV) p->mem_priv = lmr->range.priv;
    if (mask & DAT_LMR_FIELD_VA_TYPE) p->va_type = lmr->va_type;
    if (mask & DAT_LMR_FIELD_LMR_CONTEXT) p->lmr_context = lmr->lmr_context;
    if (mask & DAT_LMR_FIELD_RMR_CONTEXT) p->rmr_context = lmr->rmr_context;
    if (mask & DAT_LMR_FIELD_REGISTERED_SIZE) p->registered_size = lmr->range.len;
    if (mask & DAT_LMR_FIELD_REGISTERED_ADDRESS) p->registered_address = lmr->range.addr;
    return DAT_SUCCESS;
}

DAT_RETURN lmr_free(DAT_LMR_HANDLE h) noexcept {
    Lmr *lmr = as<Lmr>(h);
    if (lmr == nullptr) return invalid_handle(DAT_HANDLE_TYPE_LMR);
    // From here no RMR binds to it (a bind under way has taken its use first).
    if (DAT_RETURN rc =
            begin_free(lmr->windows, err(DAT_INVALID_STATE), invalid_handle(DAT_HANDLE_TYPE_LMR));
        rc != DAT_SUCCESS) {
        if (rc == err(DAT_INVALID_STATE))
            DAPL_TRC(trace::kError, "mem", "dat_lmr_free: %d RMR(s) still bound to LMR %p",
                     lmr->windows.count(), static_cast<void *>(lmr));
        return rc;
    }
    if (!claim(lmr)) return invalid_handle(DAT_HANDLE_TYPE_LMR);  // another free won
    FreeInFlight flight(lmr->ia);
    // Deregistering first means no later access, local or remote, can reach this memory.
    lmr->ia->transport->lmr_deregister(lmr);
    lmr->pz->users.drop();
    lmr->ia->release(lmr);
    grace::retire(lmr);  // a dat_lmr_create or dat_rmr_bind that checked it still reads it
    return DAT_SUCCESS;
}

DAT_RETURN rmr_create(DAT_PZ_HANDLE pz_h, DAT_RMR_HANDLE *out) noexcept {
    Pz *pz = as<Pz>(pz_h);
    if (pz == nullptr) return invalid_handle(DAT_HANDLE_TYPE_PZ);
    if (out == nullptr) return bad_arg(2);
    UseHold uses;  // before the transport call, as in dat_lmr_create
    if (!uses.take(&pz->users)) return invalid_handle(DAT_HANDLE_TYPE_PZ);
    Rmr *rmr = new (std::nothrow) Rmr(pz->provider, pz->ia);
    if (rmr == nullptr) return kNoMemory;
    rmr->pz = pz;
    if (DAT_RETURN rc = pz->ia->transport->rmr_create(rmr); rc != DAT_SUCCESS) {
        delete rmr;
        return rc;
    }
    uses.keep();
    pz->ia->adopt(rmr);
    *out = rmr;
    return DAT_SUCCESS;
}

DAT_RETURN rmr_query(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *p) noexcept {
    Rmr *rmr = as<Rmr>(h);
    if (rmr == nullptr) return invalid_handle(DAT_HANDLE_TYPE_RMR);
    if (p == nullptr) return bad_arg(3);
    if (mask & DAT_RMR_FIELD_IA_HANDLE) p->ia_handle = rmr->ia->consumer_handle();
    if (mask & DAT_RMR_FIELD_PZ_HANDLE) p->pz_handle = rmr->pz;
    if (mask & DAT_RMR_FIELD_LMR_TRIPLET) p->lmr_triplet = rmr->triplet;
    if (mask & DAT_RMR_FIELD_MEM_PRIV) p->mem_priv = rmr->priv;
    if (mask & DAT_RMR_FIELD_RMR_CONTEXT) p->rmr_context = rmr->rmr_context;
    if (mask & DAT_RMR_FIELD_RMR_SCOPE) p->rmr_scope = rmr->ia->transport->limits().rmr_scope;
    if (mask & DAT_RMR_FIELD_VA_TYPE) p->va_type = rmr->va_type;
    return DAT_SUCCESS;
}

namespace {
// Which LMR a window is bound to, and how many windows each LMR has (dat_lmr_free refuses
// an LMR windows are bound to: DAT_INVALID_STATE). The window now names `lmr`, whose use
// the caller took (unless the window named it already); the LMR it named before loses
// its use. Under rmr->mu.
void bind_to(Rmr *rmr, Lmr *lmr) noexcept {
    if (rmr->bound == lmr) return;
    if (rmr->bound != nullptr) rmr->bound->windows.drop();
    rmr->bound = lmr;
}
}  // namespace

DAT_RETURN rmr_bind(DAT_RMR_HANDLE h, DAT_LMR_HANDLE lmr_h, const DAT_LMR_TRIPLET *t,
                    DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_h,
                    DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                    DAT_RMR_CONTEXT *ctx_out) noexcept {
    Rmr *rmr = as<Rmr>(h);
    if (rmr == nullptr) return invalid_handle(DAT_HANDLE_TYPE_RMR);
    Ep *ep = as<Ep>(ep_h, rmr->ia);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    Lmr *lmr = nullptr;
    if (lmr_h != DAT_HANDLE_NULL) {  // NULL LMR = unbind
        lmr = as<Lmr>(lmr_h, rmr->ia);
        if (lmr == nullptr) return invalid_handle(DAT_HANDLE_TYPE_LMR);
        if (t == nullptr) return bad_arg(3);
        if (lmr->pz != rmr->pz) return bad_arg(2);
    }
    std::lock_guard lk(rmr->mu);
    if (as<Rmr>(rmr) == nullptr) return invalid_handle(DAT_HANDLE_TYPE_RMR);  // freed since
    if (as<Ep>(ep) == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);     // while we waited
    // Counted before the transport makes a key into the LMR's memory: a dat_lmr_free under
    // way refuses it, and one that comes later sees the window.
    UseHold uses;
    if (lmr != nullptr && lmr != rmr->bound && !uses.take(&lmr->windows))
        return invalid_handle(DAT_HANDLE_TYPE_LMR);
    DAT_RETURN rc = rmr->ia->transport->rmr_bind(rmr, lmr, t, priv, va_type, ep, cookie, flags);
    if (rc != DAT_SUCCESS) {
        if (rmr->rmr_context == 0) bind_to(rmr, nullptr);  // the failed bind revoked it
        return rc;
    }
    uses.keep();
    bind_to(rmr, lmr);
    if (ctx_out != nullptr) *ctx_out = rmr->rmr_context;
    return DAT_SUCCESS;
}

DAT_RETURN rmr_free(DAT_RMR_HANDLE h) noexcept {
    Rmr *rmr = as<Rmr>(h);
    if (rmr == nullptr) return invalid_handle(DAT_HANDLE_TYPE_RMR);
    if (!claim(rmr)) return invalid_handle(DAT_HANDLE_TYPE_RMR);  // another free won
    FreeInFlight flight(rmr->ia);
    {
        std::lock_guard lk(rmr->mu);  // a bind under way finishes first (Rmr::mu)
        rmr->ia->transport->rmr_free(rmr);
        bind_to(rmr, nullptr);
    }
    rmr->pz->users.drop();
    rmr->ia->release(rmr);
    grace::retire(rmr);  // a dat_rmr_bind that checked it still reads it
    return DAT_SUCCESS;
}

namespace {
// dat_lmr_sync_rdma_read / _write: make RDMA-placed data visible to the CPU (read) or the
// CPU's stores visible to RDMA (write) where memory is not cache-coherent with the
// transport. Ours are (a socket copies through the CPU; the verbs devices we run on
// snoop), so both succeed once their arguments check out, and DAT_PROVIDER_ATTR.
// lmr_sync_req stays false: a consumer need not call them. As the reference provider, we do
// not look the segments up in the LMR table; a consumer's wrong triplet costs nothing here.
DAT_RETURN lmr_sync(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET *segs, DAT_VLEN n,
                    const char *call) noexcept {
    if (as<Ia>(h) == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    if (n > 0 && segs == nullptr) {
        DAPL_TRC(trace::kError, "mem", "%s: %llu segments at NULL", call,
                 static_cast<unsigned long long>(n));
        return bad_arg(2);
    }
    return DAT_SUCCESS;
}
}  // namespace

DAT_RETURN lmr_sync_rdma_read(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET *segs, DAT_VLEN n) noexcept {
    return lmr_sync(h, segs, n, "dat_lmr_sync_rdma_read");
}

DAT_RETURN lmr_sync_rdma_write(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET *segs, DAT_VLEN n) noexcept {
    return lmr_sync(h, segs, n, "dat_lmr_sync_rdma_write");
}

}  // namespace opendat::util::entry

// The default device hooks: util's software memory keys and CNO. They are the tcp
// provider's behaviour; the wire side of such a transport checks every access with
// MemTable::check. util's entry points have validated everything DAT defines before any
// of these runs (see transport.hpp).
#include "util/transport.hpp"

#include "util/mem_probe.hpp"
#include "util/objects.hpp"

namespace opendat::util {

DAT_RETURN Transport::lmr_register(Lmr *lmr) noexcept {
    Ia *ia = lmr->ia;
    // The CPU copies into this memory: refuse what it could not copy into (mem_probe.hpp).
    if (DAT_RETURN rc = probe_registration(lmr->range.addr, lmr->range.len, lmr->range.priv);
        rc != DAT_SUCCESS)
        return rc;
    if (DAT_RETURN rc = ia->mem.add(KeyKind::Lmr, lmr->range, &lmr->lmr_context); rc != DAT_SUCCESS)
        return rc;
    if (DAT_RETURN rc = ia->mem.add(KeyKind::Rmr, lmr->range, &lmr->rmr_context);
        rc != DAT_SUCCESS) {
        ia->mem.remove(KeyKind::Lmr, lmr->lmr_context);
        lmr->lmr_context = 0;  // no key left behind that names this LMR
        return rc;
    }
    return DAT_SUCCESS;
}

void Transport::lmr_deregister(Lmr *lmr) noexcept {
    // Removing the keys means no later remote access can reach this memory.
    lmr->ia->mem.remove(KeyKind::Lmr, lmr->lmr_context);
    lmr->ia->mem.remove(KeyKind::Rmr, lmr->rmr_context);
}

// Binding is synchronous here: the window is re-keyed (so a context handed out for an
// earlier binding is revoked), then the bind completion is posted on the EP's request EVD.
DAT_RETURN Transport::rmr_bind(Rmr *rmr, Lmr *lmr, const DAT_LMR_TRIPLET *t,
                               DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, Ep *ep,
                               DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept {
    Ia *ia = rmr->ia;
    if (rmr->rmr_context != 0) {
        ia->mem.remove(KeyKind::Rmr, rmr->rmr_context);
        rmr->rmr_context = 0;
    }
    if (lmr != nullptr) {
        std::uint64_t len = t->segment_length;
        if (ia->mem.check(KeyKind::Lmr, lmr->lmr_context, nullptr, t->virtual_address, len,
                          DAT_MEM_PRIV_NONE_FLAG) != DAT_DTO_SUCCESS)
            return err(DAT_LENGTH_ERROR);
        MemRange r{t->virtual_address, len, static_cast<DAT_MEM_PRIV_FLAGS>(priv & lmr->range.priv),
                   rmr->pz};
        r.ep = ep;  // RMR scope: the window answers only on this EP's connection
        std::uint32_t key = 0;
        if (DAT_RETURN rc = ia->mem.add(KeyKind::Rmr, r, &key); rc != DAT_SUCCESS) return rc;
        rmr->rmr_context = key;
        rmr->triplet = *t;
        rmr->priv = priv;
        rmr->va_type = va_type;
    }
    if (!(flags & DAT_COMPLETION_SUPPRESS_FLAG) && ep->request_evd != nullptr) {
        DAT_EVENT ev{};
        ev.event_number = DAT_RMR_BIND_COMPLETION_EVENT;
        ev.event_data.rmr_completion_event_data.rmr_handle = rmr;
        ev.event_data.rmr_completion_event_data.user_cookie = cookie;
        ev.event_data.rmr_completion_event_data.status = DAT_RMR_BIND_SUCCESS;
        ep->request_evd->post(ev);
    }
    return DAT_SUCCESS;
}

void Transport::rmr_free(Rmr *rmr) noexcept {
    if (rmr->rmr_context != 0) rmr->ia->mem.remove(KeyKind::Rmr, rmr->rmr_context);
}

DAT_RETURN Transport::cno_wait(Cno *cno, DAT_TIMEOUT timeout_us, DAT_EVD_HANDLE *out) noexcept {
    return cno->wait(timeout_us, out);
}

}  // namespace opendat::util

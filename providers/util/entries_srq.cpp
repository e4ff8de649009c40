// Shared receive queue entry points (dat_srq_*, dat_ep_create_with_srq, dat_ep_recv_query,
// dat_ep_set_watermark): validation and bookkeeping; the queue is util's software ring
// unless the transport overrides the SRQ hooks (util/transport.hpp).
#include <new>

#include "trace/trace.hpp"
#include "util/entries.hpp"
#include "util/grace.hpp"
#include "util/evd.hpp"
#include "util/objects.hpp"
#include "util/srq.hpp"

namespace opendat::util::entry {

namespace {

constexpr DAT_RETURN kBadSrq = invalid_handle(DAT_HANDLE_TYPE_SRQ);

}  // namespace

DAT_RETURN srq_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_h, DAT_SRQ_ATTR *attr,
                      DAT_SRQ_HANDLE *out) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    Pz *pz = as<Pz>(pz_h, ia);
    if (pz == nullptr) return invalid_handle(DAT_HANDLE_TYPE_PZ);
    if (attr == nullptr) return bad_arg(3);
    if (out == nullptr) return bad_arg(4);
    const Limits &lim = ia->transport->limits();
    if (lim.max_srqs <= 0) {
        DAPL_TRC(trace::kInfo, "srq",
                 "dat_srq_create: the %s transport has no shared receive queues",
                 lim.transport_name);
        return err(DAT_MODEL_NOT_SUPPORTED);
    }
    const DAT_SRQ_ATTR a = *attr;
    if (a.max_recv_dtos <= 0 || a.max_recv_dtos > lim.max_recv_per_srq || a.max_recv_iov < 0 ||
        a.max_recv_iov > lim.max_iov || a.low_watermark < 0 || a.low_watermark > a.max_recv_dtos)
        return bad_arg(3);
    UseHold uses;  // before the transport sees the PZ (util/use_count.hpp)
    if (!uses.take(&pz->users)) return invalid_handle(DAT_HANDLE_TYPE_PZ);
    auto *srq = new (std::nothrow) Srq(ia->provider, ia);
    if (srq == nullptr) return kNoMemory;
    srq->pz = pz;
    srq->max_recv_dtos = a.max_recv_dtos;
    srq->max_recv_iov = a.max_recv_iov > 0 ? a.max_recv_iov : 1;
    srq->low_watermark = a.low_watermark;
    srq->lw_armed = a.low_watermark > 0;
    try {
        srq->ring.reshape(static_cast<std::size_t>(srq->max_recv_dtos),
                          static_cast<std::size_t>(srq->max_recv_iov));
    } catch (...) {
        delete srq;
        return kNoMemory;
    }
    if (DAT_RETURN rc = ia->transport->srq_create(srq); rc != DAT_SUCCESS) {
        delete srq;
        return rc;
    }
    uses.keep();
    ia->adopt(srq);
    *out = srq;
    return DAT_SUCCESS;
}

DAT_RETURN srq_free(DAT_SRQ_HANDLE h) noexcept {
    Srq *srq = as<Srq>(h);
    if (srq == nullptr) return kBadSrq;
    // From here no endpoint is created with it (util/use_count.hpp).
    if (DAT_RETURN rc =
            begin_free(srq->users, err(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE), kBadSrq);
        rc != DAT_SUCCESS)
        return rc;
    if (!claim(srq)) return kBadSrq;  // another free won
    FreeInFlight flight(srq->ia);
    srq->ia->transport->srq_destroy(srq);
    srq->pz->users.drop();
    srq->ia->release(srq);
    // Receives still posted go with it: no endpoint is left to report them. Deleted once
    // a dat_srq_post_recv that checked it before the claim has returned.
    grace::retire(srq);
    return DAT_SUCCESS;
}

DAT_RETURN srq_post_recv(DAT_SRQ_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                         DAT_DTO_COOKIE cookie) noexcept {
    grace::Guard call;  // a hot entry point: its own (util/grace.hpp)
    Srq *srq = as<Srq>(h);
    if (srq == nullptr) return kBadSrq;
    if (n < 0 || (n > 0 && iov == nullptr)) return bad_arg(2);
    if (n > srq->max_recv_iov) return err(DAT_LENGTH_ERROR);
    return srq->ia->transport->srq_post_recv(srq, n, iov, cookie);
}

DAT_RETURN srq_query(DAT_SRQ_HANDLE h, DAT_SRQ_PARAM_MASK, DAT_SRQ_PARAM *p) noexcept {
    Srq *srq = as<Srq>(h);
    if (srq == nullptr) return kBadSrq;
    if (p == nullptr) return bad_arg(3);
    std::lock_guard lk(srq->mu);
    p->ia_handle = srq->ia->consumer_handle();
    p->srq_state = srq->state;
    p->pz_handle = srq->pz;
    p->max_recv_dtos = srq->max_recv_dtos;
    p->max_recv_iov = srq->max_recv_iov;
    p->low_watermark = srq->low_watermark;
    p->available_dto_count = static_cast<DAT_COUNT>(srq->ring.size());
    p->outstanding_dto_count = static_cast<DAT_COUNT>(srq->ring.size()) + srq->taken.load();
    return DAT_SUCCESS;
}

DAT_RETURN srq_resize(DAT_SRQ_HANDLE h, DAT_COUNT max_recv_dtos) noexcept {
    Srq *srq = as<Srq>(h);
    if (srq == nullptr) return kBadSrq;
    if (max_recv_dtos <= 0 || max_recv_dtos > srq->ia->transport->limits().max_recv_per_srq)
        return bad_arg(2);
    std::lock_guard lk(srq->mu);
    // Receives posted and not yet completed keep their place: the queue cannot shrink
    // below them.
    if (max_recv_dtos < static_cast<DAT_COUNT>(srq->ring.size()) + srq->taken.load())
        return bad_arg(2);
    if (DAT_RETURN rc = srq->ia->transport->srq_resize(srq, max_recv_dtos); rc != DAT_SUCCESS)
        return rc;
    try {
        srq->ring.reshape(static_cast<std::size_t>(max_recv_dtos),
                          static_cast<std::size_t>(srq->max_recv_iov));
    } catch (...) {
        return kNoMemory;
    }
    srq->max_recv_dtos = max_recv_dtos;
    if (srq->low_watermark > max_recv_dtos) srq->low_watermark = max_recv_dtos;
    return DAT_SUCCESS;
}

DAT_RETURN srq_set_lw(DAT_SRQ_HANDLE h, DAT_COUNT low_watermark) noexcept {
    Srq *srq = as<Srq>(h);
    if (srq == nullptr) return kBadSrq;
    std::lock_guard lk(srq->mu);
    if (low_watermark < 0 || low_watermark > srq->max_recv_dtos) return bad_arg(2);
    // Armed once: the next time an endpoint takes a receive and leaves fewer than this
    // available, one asynchronous event (srq_take_locked). 0 disarms.
    srq->low_watermark = low_watermark;
    srq->lw_armed = low_watermark > 0;
    return DAT_SUCCESS;
}

DAT_RETURN ep_create_with_srq(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_h, DAT_EVD_HANDLE recv_h,
                              DAT_EVD_HANDLE req_h, DAT_EVD_HANDLE conn_h, DAT_SRQ_HANDLE srq_h,
                              const DAT_EP_ATTR *attr, DAT_EP_HANDLE *out) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    Srq *srq = as<Srq>(srq_h, ia);
    if (srq == nullptr) return kBadSrq;
    // The SRQ's limit of endpoints is checked by create_ep, with its own use counted.
    DAT_RETURN rc = create_ep(h, pz_h, recv_h, req_h, conn_h, srq, attr, out);
    if (rc == DAT_SUCCESS && ia->own_async_evd) {
        // Each SRQ endpoint reports the end of its connection on the async EVD
        // (ep_connection_ended). dtestsrq ends up to 100 connections before it reads one
        // report: the async EVD the IA made for the consumer keeps room for all of them.
        const DAT_COUNT want = ia->async_evd->qlen() + 1;
        if (ia->async_evd->resize(want) != DAT_SUCCESS)
            DAPL_TRC(trace::kInfo, "srq", "async EVD stays at %d events", want - 1);
    }
    return rc;
}

DAT_RETURN ep_recv_query(DAT_EP_HANDLE h, DAT_COUNT *nbufs, DAT_COUNT *span) noexcept {
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    if (nbufs == nullptr) return bad_arg(2);
    if (span == nullptr) return bad_arg(3);
    return ep->ia->transport->ep_recv_info(ep, nbufs, span);
}

DAT_RETURN ep_set_watermark(DAT_EP_HANDLE h, DAT_COUNT soft_hw, DAT_COUNT hard_hw) noexcept {
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    // The high watermarks bound how many of an SRQ's receives one endpoint may hold. No
    // transport enforces them: only "no watermark" is accepted, anything else is refused
    // instead of being ignored.
    if (soft_hw != DAT_WATERMARK_INFINITE) return err(DAT_MODEL_NOT_SUPPORTED);
    if (hard_hw != DAT_WATERMARK_INFINITE) return err(DAT_MODEL_NOT_SUPPORTED);
    return DAT_SUCCESS;
}

}  // namespace opendat::util::entry

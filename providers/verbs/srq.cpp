// dat_srq_* on the verbs provider (srq.hpp): ibv_create_srq, ibv_post_srq_recv, resize.
#include "verbs/srq.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "trace/trace.hpp"
#include "util/objects.hpp"
#include "verbs/device_retire.hpp"
#include "verbs/mem.hpp"
#include "verbs/transport.hpp"

namespace opendat::verbs {

EpImpl *SrqImpl::owner_of(std::uint32_t qp_num) noexcept {
    std::lock_guard lk(eps_mu);
    auto it = eps.find(qp_num);
    return it == eps.end() ? nullptr : it->second;
}

bool SrqImpl::size_slots(std::uint32_t wr) noexcept {
    std::uint32_t n = 1;
    while (n < 2 * std::max<std::uint32_t>(wr, 1)) n <<= 1;
    // Slots still named by receives in the device stay valid: a ring only grows, and the
    // old one is kept until the SRQ goes (a resize is rare).
    if (n <= mask + 1 && slots) return true;
    std::unique_ptr<WrSlot[]> fresh(new (std::nothrow) WrSlot[n]);
    if (!fresh) return false;
    for (std::uint32_t i = 0; i < n; ++i) {
        fresh[i].owner = nullptr;  // the EP is known only when the completion names it
        fresh[i].recv = true;
        fresh[i].op = DAT_DTO_RECEIVE;
    }
    if (slots) {
        try {
            old_slots.push_back(std::move(slots));
        } catch (...) {
            return false;  // `slots` is unchanged (push_back gives the strong guarantee)
        }
    }
    slots = std::move(fresh);
    mask = n - 1;
    head = 0;
    return true;
}

void srq_receive_done(SrqImpl *s) noexcept {
    // A completion still in a CQ after dat_srq_free (its EP freed before it, its receive
    // never dequeued): the mirror went with util's SRQ.
    std::lock_guard live(s->live_mu);
    util::Srq *srq = s->srq;
    if (srq == nullptr) return;
    {
        std::lock_guard lk(srq->mu);
        util::SrqRecv r;
        DAT_LMR_TRIPLET iov[kMaxSge];
        util::srq_take_locked(srq, &r, iov);
    }
    util::srq_completed(srq, 1);
}

DAT_RETURN VerbsTransport::srq_create(util::Srq *srq) noexcept {
    auto impl = std::unique_ptr<SrqImpl>(new (std::nothrow) SrqImpl);
    if (!impl) return util::kNoMemory;
    impl->srq = srq;
    ibv_srq_init_attr a{};
    a.srq_context = impl.get();
    a.attr.max_wr = static_cast<std::uint32_t>(std::max<DAT_COUNT>(srq->max_recv_dtos, 1));
    a.attr.max_sge = static_cast<std::uint32_t>(std::max<DAT_COUNT>(srq->max_recv_iov, 1));
    impl->dev = ibv_create_srq(pd_of(srq->pz), &a);
    if (impl->dev == nullptr) {
        DAPL_TRC(trace::kError, "verbs", "ibv_create_srq (%d receives, %d segments): %s",
                 srq->max_recv_dtos, srq->max_recv_iov, std::strerror(errno));
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
    }
    impl->max_wr = a.attr.max_wr;
    if (!impl->size_slots(impl->max_wr)) {
        ibv_destroy_srq(impl->dev);
        return util::kNoMemory;
    }
    srq->impl = impl.release();
    return DAT_SUCCESS;
}

void VerbsTransport::srq_destroy(util::Srq *srq) noexcept {
    SrqImpl *impl = nullptr;
    {
        // Under the SRQ's lock: a dat_srq_post_recv that checked the SRQ before the free
        // (util keeps the SRQ itself for it, util/grace.hpp) finds it gone, never a
        // destroyed device queue. Not under live_mu: a completion takes that one first.
        std::lock_guard lk(srq->mu);
        impl = srq_impl(srq);
        if (impl == nullptr) return;
        srq->impl = nullptr;
    }
    // No EP uses it any more (util checked), but the queue pairs of EPs freed before may
    // still wait for their grace period: it goes after them (verbs/device_retire.hpp).
    // Receives still posted go with it, as with the reference.
    retire_srq(impl->dev);
    {
        std::lock_guard live(impl->live_mu);
        impl->srq = nullptr;  // util deletes its SRQ when this returns
    }
    // A completion of this SRQ still in a CQ names a slot: kept with the EPs' graveyard.
    graveyard_.park(util::Deferred::of(impl));
}

DAT_RETURN VerbsTransport::srq_post_recv(util::Srq *srq, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                         DAT_DTO_COOKIE cookie) noexcept {
    ibv_sge sge[kMaxSge];
    int nsge = 0;
    std::uint64_t total = 0;
    if (!build_sges(n, iov, sge, &nsge, &total)) return util::err(DAT_LENGTH_ERROR);
    std::lock_guard lk(srq->mu);
    SrqImpl *impl = srq_impl(srq);
    if (impl == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_SRQ);  // freed meanwhile
    // util's mirror first: it refuses a post beyond max_recv_dtos (and a non-operational SRQ).
    if (DAT_RETURN rc = util::srq_post_locked(srq, n, iov, cookie); rc != DAT_SUCCESS) return rc;
    WrSlot *slot = &impl->slots[impl->head++ & impl->mask];
    slot->cookie = cookie;
    slot->length = static_cast<std::uint32_t>(total);
    slot->suppress = false;
    slot->retires = 1;
    slot->ext = -1;
    slot->srq = impl;
    ibv_recv_wr wr{};
    wr.wr_id = reinterpret_cast<std::uintptr_t>(slot);
    wr.sg_list = sge;
    wr.num_sge = nsge;
    ibv_recv_wr *bad = nullptr;
    if (int rc = ibv_post_srq_recv(impl->dev, &wr, &bad); rc != 0) {
        DAPL_TRC(trace::kError, "verbs", "ibv_post_srq_recv: %s", std::strerror(rc));
        util::SrqRecv r;
        DAT_LMR_TRIPLET back[kMaxSge];
        srq->ring.pop(&r, back);  // the mirror counts one receive fewer again
        return rc == ENOMEM ? util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ)
                            : util::err(DAT_INVALID_PARAMETER);
    }
    return DAT_SUCCESS;
}

DAT_RETURN VerbsTransport::srq_resize(util::Srq *srq, DAT_COUNT max_recv_dtos) noexcept {
    SrqImpl *impl = srq_impl(srq);  // util holds srq->mu, as srq_destroy does to clear it
    if (impl == nullptr) return util::invalid_handle(DAT_HANDLE_TYPE_SRQ);  // freed meanwhile
    const auto want = static_cast<std::uint32_t>(max_recv_dtos);
    if (want <= impl->max_wr) return DAT_SUCCESS;  // the device queue already holds them
    ibv_srq_attr a{};
    a.max_wr = want;
    if (int rc = ibv_modify_srq(impl->dev, &a, IBV_SRQ_MAX_WR); rc != 0) {
        DAPL_TRC(trace::kError, "verbs", "ibv_modify_srq(max_wr %u): %s", want, std::strerror(rc));
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
    }
    if (!impl->size_slots(want)) return util::kNoMemory;
    impl->max_wr = want;
    return DAT_SUCCESS;
}

DAT_RETURN VerbsTransport::ep_recv_info(util::Ep *ep, DAT_COUNT *nbufs, DAT_COUNT *span) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    *nbufs = 0;
    *span = 0;
    // An SRQ endpoint: which of the SRQ's receives its queue pair has taken shows only when
    // one completes, and a completed one is no longer held, so it holds none we can name.
    if (impl == nullptr || impl->srq != nullptr || !impl->rq.slots) return DAT_SUCCESS;
    // Its own receives complete in posting order: the outstanding ones are the newest.
    const int out = impl->rq.outstanding.load(std::memory_order_acquire);
    const std::uint32_t head = impl->rq.head.load(std::memory_order_acquire);
    std::uint64_t bytes = 0;
    for (int i = 1; i <= out; ++i)
        bytes += impl->rq.slots[(head - static_cast<std::uint32_t>(i)) & impl->rq.mask].length;
    *nbufs = out > 0 ? out : 0;
    *span = static_cast<DAT_COUNT>(std::min<std::uint64_t>(bytes, 0x7fffffff));
    return DAT_SUCCESS;
}

}  // namespace opendat::verbs

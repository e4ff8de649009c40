// VerbsTransport: opening the device, the CM/async thread, EP creation and teardown.
#include "verbs/transport.hpp"

#include "verbs/srq.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "trace/trace.hpp"
#include "tunables/tunables.hpp"
#include "util/grace.hpp"
#include "verbs/cq_evd.hpp"
#include "verbs/device_retire.hpp"
#include "verbs/mem.hpp"

namespace opendat::verbs {

void SlotRing::init(EpImpl *owner, std::uint32_t capacity, bool recv) {
    std::uint32_t n = 1;
    while (n < 2 * std::max<std::uint32_t>(capacity, 1)) n <<= 1;
    slots = std::make_unique<WrSlot[]>(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        slots[i].owner = owner;
        slots[i].recv = recv;
    }
    mask = n - 1;
}

namespace {

int mtu_bytes(ibv_mtu m) noexcept {
    switch (m) {
        case IBV_MTU_256:
            return 256;
        case IBV_MTU_512:
            return 512;
        case IBV_MTU_1024:
            return 1024;
        case IBV_MTU_2048:
            return 2048;
        case IBV_MTU_4096:
            return 4096;
    }
    return 1024;
}

std::uint32_t configured_max_inline() noexcept {
    static const std::uint32_t v = [] {
        return static_cast<std::uint32_t>(tunables::read_int(tunables::kVerbsMaxInline));
    }();
    return v;
}

DAT_COUNT clamp_count(long v) noexcept {
    return static_cast<DAT_COUNT>(std::clamp<long>(v, 0, 0x7fffffff));
}

void set_nonblock(int fd) noexcept {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

}  // namespace

DAT_RETURN VerbsTransport::open(const util::ProviderInstance *inst) noexcept {
    // A missing interface is reported as such first, as the reference's cma provider does.
    if (DAT_RETURN rc = resolve_address(inst->name.c_str(), inst->params, &dev_); rc != DAT_SUCCESS)
        return rc;
    ch_.reset(rdma_create_event_channel());
    if (!ch_) {
        // No /dev/infiniband/rdma_cm: the kernel has no RDMA support or no device at all.
        DAPL_TRC(trace::kError, "verbs",
                 "IA %s: no RDMA device: rdma_create_event_channel: %s (%s)", inst->name.c_str(),
                 std::strerror(errno),
                 errno == ENOENT || errno == ENODEV ? "no RDMA support in this kernel"
                                                    : "rdma_cm unusable");
        return util::err(DAT_INTERNAL_ERROR);
    }
    set_nonblock(ch_->fd);
    if (DAT_RETURN rc = bind_device(inst->name.c_str(), ch_.get(), &dev_); rc != DAT_SUCCESS)
        return rc;

    const ibv_device_attr &a = dev_.attr;
    limits_.max_eps = clamp_count(a.max_qp);
    limits_.max_dto_per_ep = clamp_count(a.max_qp_wr);
    limits_.max_rdma_read_per_ep = clamp_count(std::min(a.max_qp_rd_atom, a.max_qp_init_rd_atom));
    limits_.max_evds = clamp_count(a.max_cq);
    limits_.max_evd_qlen = clamp_count(a.max_cqe);
    limits_.max_iov = clamp_count(std::min(a.max_sge, kMaxSge));
    limits_.max_lmrs = clamp_count(a.max_mr);
    limits_.max_message_size =
        static_cast<DAT_SEG_LENGTH>(std::min<std::uint64_t>(dev_.port_attr.max_msg_sz, 0x7fffffff));
    limits_.max_rdma_size = limits_.max_message_size;
    limits_.transport_mtu = mtu_bytes(dev_.port_attr.active_mtu);
    // Verbs has no per-message "acknowledge after placement" control: RC completions
    // already mean the peer acknowledged; there is nothing to delay.
    limits_.delayed_ack_supported = false;
    // Shared receive queues: ibv_srq (srq.cpp), where the device has them.
    limits_.max_srqs = clamp_count(a.max_srq_wr > 0 ? a.max_srq : 0);
    limits_.max_ep_per_srq = limits_.max_srqs > 0 ? limits_.max_eps : 0;
    limits_.max_recv_per_srq = limits_.max_srqs > 0 ? clamp_count(a.max_srq_wr) : 0;
    // Windows are IB type 1 (mem.cpp): the device checks their rkey against the PD, so any
    // QP of the PZ may use one, not just the EP it was bound through.
    limits_.rmr_scope = DAT_RMR_SCOPE_PZ;
    limits_.transport_name = "verbs";
    // IB extensions: RDMA write with immediate is part of every RC QP; remote atomics
    // only where the device has them (rxe: IBV_ATOMIC_HCA).
    limits_.immediate_data = true;
    limits_.atomics = a.atomic_cap != IBV_ATOMIC_NONE;

    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return util::kInternal;
    stop_.reset(fd);
    fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return util::kInternal;
    wake_.reset(fd);
    set_nonblock(dev_.ctx->async_fd);
    try {
        thread_ = std::thread([this] { cm_thread(); });
    } catch (...) {
        return util::kInternal;
    }
    return DAT_SUCCESS;
}

VerbsTransport::~VerbsTransport() {
    if (thread_.joinable()) {
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(stop_.get(), &one, sizeof one);
        thread_.join();
    }
    destroy_ended_ids();  // before the channel they were made on
    // Objects the consumer did not free: release their verbs resources (the DAT objects
    // themselves stay, their handles are dead with the IA).
    for (EpImpl *e : eps_) delete e;
    for (SpImpl *s : sps_) delete s;
    for (CrImpl *c : crs_) delete c;
    graveyard_.drain_now();
}

DAT_RETURN make_transport(util::ProviderInstance *inst, util::Ia *ia,
                          std::unique_ptr<util::Transport> *out) {
    auto t = std::make_unique<VerbsTransport>(ia);
    if (DAT_RETURN rc = t->open(inst); rc != DAT_SUCCESS) return rc;
    *out = std::move(t);
    return DAT_SUCCESS;
}

// --- EP creation -----------------------------------------------------------------------

// The EP's queue pair, from the PZ, EVDs and attributes it has (ep_create) or is about to
// have (ep_modify). May throw (OPENDAT_GUARD in the callers reports it).
DAT_RETURN VerbsTransport::make_qp(EpImpl *impl, const util::EpConfig &c) {
    util::Ep *ep = impl->ep;
    auto *rcq = as_cq_evd(c.recv_evd);
    auto *scq = as_cq_evd(c.request_evd);
    if (rcq == nullptr) return util::err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
    if (scq == nullptr) return util::err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
    const DAT_EP_ATTR &at = c.attr;
    ibv_qp_init_attr qa{};
    qa.send_cq = scq->cq();
    qa.recv_cq = rcq->cq();
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;
    qa.cap.max_send_wr = static_cast<std::uint32_t>(std::max<DAT_COUNT>(at.max_request_dtos, 1));
    qa.cap.max_recv_wr = static_cast<std::uint32_t>(std::max<DAT_COUNT>(at.max_recv_dtos, 1));
    // dat_ep_create_with_srq: receives come from the SRQ's device queue.
    SrqImpl *srq = ep->srq != nullptr ? srq_impl(ep->srq) : nullptr;
    if (srq != nullptr) {
        qa.srq = srq->dev;
        qa.cap.max_recv_wr = 0;
        qa.cap.max_recv_sge = 0;
    }
    qa.cap.max_send_sge = static_cast<std::uint32_t>(
        std::max({at.max_request_iov, at.max_rdma_read_iov, at.max_rdma_write_iov, DAT_COUNT{1}}));
    qa.cap.max_send_sge =
        std::min<std::uint32_t>(qa.cap.max_send_sge, static_cast<std::uint32_t>(limits_.max_iov));
    if (srq == nullptr)
        qa.cap.max_recv_sge = static_cast<std::uint32_t>(std::max<DAT_COUNT>(at.max_recv_iov, 1));
    // Inline sends copy the data into the work request: the device then never
    // checks the lmr_context, so a bad one would not give LOCAL_PROTECTION as DAT
    // requires. Off unless OPENDAT_VERBS_MAX_INLINE asks for it (a latency trade).
    qa.cap.max_inline_data = configured_max_inline();
    ibv_qp *qp = ibv_create_qp(pd_of(c.pz), &qa);
    if (qp == nullptr) {
        qa.cap.max_inline_data = 0;
        qp = ibv_create_qp(pd_of(c.pz), &qa);
    }
    if (qp == nullptr) {
        DAPL_TRC(trace::kError, "verbs", "ibv_create_qp (send %u recv %u): %s", qa.cap.max_send_wr,
                 qa.cap.max_recv_wr, std::strerror(errno));
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
    }
    QpPtr owned(qp);
    qp->qp_context = impl;
    SlotRing sq, rq;
    sq.init(impl, qa.cap.max_send_wr, false);
    rq.init(impl, qa.cap.max_recv_wr, true);
    // Receives may be posted before the connection exists: INIT accepts them. Done before
    // the EP takes anything of the new queue pair, so that a failure leaves it as it was
    // (dat_ep_modify keeps the old queue pair, with its own slot rings).
    if (qp_reset_to_init(qp) != 0) {
        DAPL_TRC(trace::kError, "verbs", "QP %u to INIT: %s", qp->qp_num, std::strerror(errno));
        return util::kInternal;
    }
    if (srq != nullptr) {
        std::lock_guard slk(srq->eps_mu);
        srq->eps[qp->qp_num] = impl;
    }
    // Nothing can fail from here on: the EP takes the new queue pair.
    impl->qp = std::move(owned);
    impl->max_inline = qa.cap.max_inline_data;
    impl->sq.slots = std::move(sq.slots);
    impl->sq.mask = sq.mask;
    impl->rq.slots = std::move(rq.slots);
    impl->rq.mask = rq.mask;
    impl->srq = srq;
    if (at.recv_completion_flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) rcq->set_solicited_only();
    return DAT_SUCCESS;
}

DAT_RETURN VerbsTransport::ep_create(util::Ep *ep) noexcept {
    OPENDAT_GUARD({
        auto impl = std::make_unique<EpImpl>(this, ep);
        // An EP without PZ or DTO EVDs cannot be connected (util refuses it) and so
        // needs no queue pair yet: dat_ep_modify gives it one (a provider-created EP).
        if (ep->pz != nullptr && ep->recv_evd != nullptr && ep->request_evd != nullptr) {
            util::EpConfig c;
            c.pz = ep->pz;
            c.recv_evd = ep->recv_evd;
            c.request_evd = ep->request_evd;
            c.connect_evd = ep->connect_evd;
            c.attr = ep->attr;
            if (DAT_RETURN rc = make_qp(impl.get(), c); rc != DAT_SUCCESS) return rc;
        }
        bool listed = false;
        {
            std::lock_guard lk(mu_);
            try {
                eps_.insert(impl.get());
                listed = true;
            } catch (...) {
            }
        }
        if (!listed) {
            // The SRQ must not name the EpImpl that goes with the failed create.
            if (impl->srq != nullptr && impl->qp) {
                std::lock_guard slk(impl->srq->eps_mu);
                impl->srq->eps.erase(impl->qp->qp_num);
            }
            return util::kNoMemory;
        }
        ep->impl = impl.release();
        return DAT_SUCCESS;
    })
}

namespace {

// The attributes a queue pair is built from (make_qp).
bool same_queues(const DAT_EP_ATTR &a, const DAT_EP_ATTR &b) noexcept {
    return a.max_recv_dtos == b.max_recv_dtos && a.max_request_dtos == b.max_request_dtos &&
           a.max_recv_iov == b.max_recv_iov && a.max_request_iov == b.max_request_iov &&
           a.max_rdma_read_iov == b.max_rdma_read_iov &&
           a.max_rdma_write_iov == b.max_rdma_write_iov &&
           a.recv_completion_flags == b.recv_completion_flags;
}

}  // namespace

// dat_ep_modify of what the queue pair is built from (util holds ep->mu; the EP is
// UNCONNECTED or RESERVED). An EP without a queue pair (a provider-created one, or one
// made without PZ or EVDs) gets one now; an EP whose queue pair has no work posted and no
// connection under way gets a new one; otherwise the change is refused. The connection
// EVD is not part of the queue pair.
DAT_RETURN VerbsTransport::ep_modify(util::Ep *ep, const util::EpConfig &next) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    const bool qp_same = next.pz == ep->pz && next.recv_evd == ep->recv_evd &&
                         next.request_evd == ep->request_evd && same_queues(next.attr, ep->attr);
    if (qp_same && impl->qp) return DAT_SUCCESS;
    if (next.pz == nullptr || next.recv_evd == nullptr || next.request_evd == nullptr) {
        // Not connectable yet: nothing to build. A queue pair already built stays unless
        // it has to change.
        if (!impl->qp) return DAT_SUCCESS;
        return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
    }
    if (impl->qp) {
        if (impl->id || impl->rq.outstanding.load() != 0 || impl->sq.outstanding.load() != 0) {
            // A device cannot resize a queue pair, nor move posted work to another one.
            DAPL_TRC(trace::kInfo, "verbs",
                     "dat_ep_modify: EP %p has work posted or a connection under way: its "
                     "queue pair cannot be rebuilt",
                     static_cast<void *>(ep));
            return util::err(DAT_MODEL_NOT_SUPPORTED);
        }
    }
    // The new queue pair first: if it cannot be made, the EP keeps the old one (and util
    // the old configuration). No work is posted on the old one, so no completion of it
    // can be in a CQ when it goes.
    QpPtr old = std::move(impl->qp);
    DAT_RETURN rc = util::kInternal;
    try {
        rc = make_qp(impl, next);
    } catch (const std::bad_alloc &) {
        rc = util::kNoMemory;
    } catch (...) {
    }
    // A make_qp that failed changed nothing of the EP: it keeps the old queue pair.
    if (rc != DAT_SUCCESS) {
        impl->qp = std::move(old);
        return rc;
    }
    // The queue pair that goes is retired, not destroyed: what it was made in (an old PZ
    // or SRQ the EP lets go of) is then destroyed after it (verbs/device_retire.hpp). A
    // post racing a modify of its own EP is the consumer's misuse all the same: it may
    // meet the slot rings being replaced.
    if (old && impl->srq != nullptr) {
        std::lock_guard slk(impl->srq->eps_mu);
        impl->srq->eps.erase(old->qp_num);
    }
    retire_replaced_qp(old.release());
    return DAT_SUCCESS;
}

void VerbsTransport::ep_destroy(util::Ep *ep) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    IdPtr id;
    {
        std::lock_guard lk(ep->mu);
        impl->dead.store(true, std::memory_order_release);
        qp_to_error(impl);
        if (impl->id && ep->state == DAT_EP_STATE_CONNECTED) rdma_disconnect(impl->id.get());
        id = std::move(impl->id);
    }
    // Outside ep->mu: destroying an id waits until its events are acknowledged, and the
    // CM thread may be waiting for ep->mu with one of them (see on_cm_event).
    id.reset();
    if (impl->srq != nullptr && impl->qp) {
        std::lock_guard slk(impl->srq->eps_mu);
        impl->srq->eps.erase(impl->qp->qp_num);
    }
    // A dat_ep_post_* that checked the EP before the free may still be on its way into
    // ibv_post_send with impl->qp: the queue pair goes, and impl->qp changes, only once it
    // has returned (verbs/device_retire.hpp). Meanwhile such a post meets a queue pair in
    // the error state. The EpImpl itself outlives this (the graveyard).
    util::grace::retire(
        util::Deferred{impl, [](void *p) { static_cast<EpImpl *>(p)->qp.reset(); }});
    {
        std::lock_guard lk(mu_);
        eps_.erase(impl);
    }
    // Out of memory while parking leaks it rather than free memory a CQ may still name.
    // util's EP follows (ep_release).
    graveyard_.park(impl);
}

void VerbsTransport::ep_idle(util::Ep *ep, bool *recv_idle, bool *request_idle) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    *recv_idle = impl->rq.outstanding.load(std::memory_order_relaxed) <= 0;
    *request_idle = impl->sq.outstanding.load(std::memory_order_relaxed) <= 0;
}

int VerbsTransport::qp_reset_to_init(EpImpl *impl) noexcept {
    return qp_reset_to_init(impl->qp.get());
}

int VerbsTransport::qp_reset_to_init(ibv_qp *qp) noexcept {
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_RESET;
    if (qp->state != IBV_QPS_RESET && ibv_modify_qp(qp, &qa, IBV_QP_STATE) != 0) return -1;
    qa = ibv_qp_attr{};
    qa.qp_state = IBV_QPS_INIT;
    qa.pkey_index = 0;
    qa.port_num = dev_.port;
    qa.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                         IBV_ACCESS_REMOTE_ATOMIC;
    return ibv_modify_qp(qp, &qa,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int VerbsTransport::qp_to(EpImpl *impl, rdma_cm_id *id, ibv_qp_state state, int rd_atom) noexcept {
    ibv_qp_attr qa{};
    int mask = 0;
    qa.qp_state = state;
    if (rdma_init_qp_attr(id, &qa, &mask) != 0) return -1;
    if (state == IBV_QPS_RTR && rd_atom >= 0)
        qa.max_dest_rd_atomic = static_cast<std::uint8_t>(rd_atom);
    if (state == IBV_QPS_RTS && rd_atom >= 0) qa.max_rd_atomic = static_cast<std::uint8_t>(rd_atom);
    if (state == IBV_QPS_RTR) {
        // How long a sender we refuse for want of a posted receive (RNR NAK) waits before
        // it retries. rdma_cm leaves the encoding 0, which means the longest wait, 655 ms:
        // a burst of sends that outruns the receives then crawls at two messages a
        // second. 12 is 0.64 ms (IB encoding), the usual choice.
        qa.min_rnr_timer = 12;
        mask |= IBV_QP_MIN_RNR_TIMER;
    }
    if (state == IBV_QPS_RTS) {
        // Retry sends to a receiver without a posted buffer forever, as DAT expects a
        // reliable connection to wait for the consumer's receive.
        qa.rnr_retry = 7;
        mask |= IBV_QP_RNR_RETRY;
    }
    return ibv_modify_qp(impl->qp.get(), &qa, mask);
}

// --- The CM / async thread --------------------------------------------------------------

void VerbsTransport::cm_thread() noexcept {
    pollfd fds[4] = {{ch_->fd, POLLIN, 0},
                     {dev_.ctx->async_fd, POLLIN, 0},
                     {stop_.get(), POLLIN, 0},
                     {wake_.get(), POLLIN, 0}};
    for (;;) {
        // Here, before the look: an id ended while we handled the last round has woken
        // wake_, which the round may have drained already (end_id). No event in hand.
        destroy_ended_ids();
        if (::poll(fds, 4, expire_connect_deadlines()) < 0) {
            if (errno == EINTR) continue;
            DAPL_TRC(trace::kError, "verbs", "CM thread poll: %s", std::strerror(errno));
            return;
        }
        if (fds[2].revents != 0) return;
        if (fds[0].revents != 0) {
            rdma_cm_event *ev = nullptr;
            while (rdma_get_cm_event(ch_.get(), &ev) == 0) on_cm_event(ev);
        }
        if (fds[1].revents != 0) on_async_event();
        if (fds[3].revents != 0) {
            std::uint64_t n;
            [[maybe_unused]] ssize_t r = ::read(wake_.get(), &n, sizeof n);
        }
    }
}

void VerbsTransport::end_id(IdPtr id) noexcept {
    if (!id) return;
    {
        std::lock_guard lk(ended_mu_);
        try {
            ended_ids_.push_back(id.get());
            id.release();
        } catch (...) {
            // Out of memory: destroyed here after all (the narrow case on_cm_event guards
            // against comes back, nothing worse).
        }
    }
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

void VerbsTransport::destroy_ended_ids() noexcept {
    std::vector<rdma_cm_id *> ended;
    {
        std::lock_guard lk(ended_mu_);
        ended.swap(ended_ids_);
    }
    // This thread acknowledged every event it took: rdma_destroy_id does not wait.
    for (rdma_cm_id *id : ended) rdma_destroy_id(id);
}

void VerbsTransport::on_async_event() noexcept {
    ibv_async_event ae{};
    while (ibv_get_async_event(dev_.ctx, &ae) == 0) {
        DAPL_TRC(trace::kInfo, "verbs", "async event %s", ibv_event_type_str(ae.event_type));
        switch (ae.event_type) {
            case IBV_EVENT_QP_FATAL:
            case IBV_EVENT_QP_REQ_ERR:
            case IBV_EVENT_QP_ACCESS_ERR: {
                // The device's async fd is shared by every IA of the process on it: the
                // object names its own IA.
                auto *impl = static_cast<EpImpl *>(ae.element.qp->qp_context);
                if (impl != nullptr && !impl->dead.load()) {
                    util::post_async(impl->ep->ia, DAT_ASYNC_ERROR_EP_BROKEN, impl->ep);
                    impl->tr->break_connection(impl);
                }
                break;
            }
            case IBV_EVENT_CQ_ERR: {
                auto *evd = static_cast<util::Evd *>(ae.element.cq->cq_context);
                if (evd != nullptr) util::post_async(evd->ia, DAT_ASYNC_ERROR_EVD_OVERFLOW, evd);
                break;
            }
            case IBV_EVENT_DEVICE_FATAL:
                util::post_async(ia_, DAT_ASYNC_ERROR_IA_CATASTROPHIC, ia_);
                break;
            default:
                break;  // port and path changes, COMM_EST, LAST_WQE: nothing the consumer must see
        }
        ibv_ack_async_event(&ae);
    }
}

void VerbsTransport::qp_to_error(EpImpl *impl) noexcept {
    if (!impl->qp) return;
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(impl->qp.get(), &qa, IBV_QP_STATE);
}

}  // namespace opendat::verbs

#include "verbs/cq_evd.hpp"
#include "util/sys_io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <new>

#include <dat2/dat_ib_extensions.h>

#include "trace/trace.hpp"
#include "util/deadline.hpp"
#include "util/objects.hpp"
#include "verbs/ep_impl.hpp"
#include "verbs/srq.hpp"
#include "verbs/transport.hpp"
#include "verbs/wc_status.hpp"

namespace opendat::verbs {

namespace {
constexpr DAT_EVD_FLAGS kCqOnly =
    static_cast<DAT_EVD_FLAGS>(DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);
}  // namespace

CqEvd::CqEvd(util::Evd *evd) : mixed((evd->flags & ~kCqOnly) != 0), evd_(evd) {}

DAT_RETURN CqEvd::open(ibv_context *ctx, DAT_COUNT qlen) noexcept {
    ch_.reset(ibv_create_comp_channel(ctx));
    if (!ch_) return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
    int fl = fcntl(ch_->fd, F_GETFL);
    fcntl(ch_->fd, F_SETFL, fl | O_NONBLOCK);
    // The CQ's context is the EVD: the CM thread reports a CQ error on its handle.
    cq_.reset(ibv_create_cq(ctx, qlen, evd_, ch_.get(), 0));
    if (!cq_) {
        DAPL_TRC(trace::kError, "verbs", "ibv_create_cq(%d): %s", qlen, std::strerror(errno));
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
    }
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
    wake_.reset(fd);
    stage_.reset(new (std::nothrow) DAT_EVENT[static_cast<std::size_t>(qlen)]);
    if (!stage_) return util::kNoMemory;
    stage_cap_ = static_cast<std::size_t>(qlen);
    return DAT_SUCCESS;
}

// Turns a work completion into its DAT event; false when there is none to report: a
// successful suppressed request, or an EP freed since it posted.
bool CqEvd::convert(const ibv_wc &wc, DAT_EVENT *out) noexcept {
    auto *slot = reinterpret_cast<WrSlot *>(static_cast<std::uintptr_t>(wc.wr_id));
    EpImpl *owner = slot->owner;
    if (slot->srq != nullptr) {
        // A shared receive: the SRQ's mirror gives it back; the EP is the one whose queue
        // pair took it.
        srq_receive_done(slot->srq);
        owner = slot->srq->owner_of(wc.qp_num);
        if (owner == nullptr || owner->dead.load(std::memory_order_acquire)) return false;
    } else {
        if (owner->dead.load(std::memory_order_acquire)) return false;
        // A signalled request's completion also retires the unsignalled ones before it.
        (slot->recv ? owner->rq : owner->sq)
            .outstanding.fetch_sub(static_cast<int>(slot->retires), std::memory_order_relaxed);
    }
    DAT_DTO_COMPLETION_STATUS st = dto_status(wc.status);
    if (st == DAT_DTO_SUCCESS && slot->suppress) return false;
    // A failed (not flushed) request has put the QP in error: the connection is broken.
    // Unless it was posted on a connection that has ended since (the EP was reset, and may
    // be connected again): that one is over already, and the QP serves the next. Decided
    // under the EP's lock, where a reset starts the next connection.
    if (st != DAT_DTO_SUCCESS && st != DAT_DTO_ERR_FLUSHED) {
        DAPL_TRC(trace::kWarn, "verbs", "EP %p: work request failed: %s (vendor error 0x%x)",
                 static_cast<void *>(owner->ep), ibv_wc_status_str(wc.status), wc.vendor_err);
        // A shared receive's slot names no EP at post time: it counts as current.
        owner->tr->break_connection(owner, slot->srq != nullptr
                                               ? std::nullopt
                                               : std::optional<std::uint32_t>(slot->connection));
    }
    std::memset(out, 0, offsetof(DAT_EVENT, event_extension_data));
    out->evd_handle = evd_;
    if (slot->op == DAT_DTO_BIND_MW) {
        out->event_number = DAT_RMR_BIND_COMPLETION_EVENT;
        auto &r = out->event_data.rmr_completion_event_data;
        r.rmr_handle = slot->rmr;
        r.user_cookie.as_64 = slot->cookie.as_64;
        r.status = st == DAT_DTO_SUCCESS ? DAT_RMR_BIND_SUCCESS : DAT_RMR_BIND_FAILURE;
        return true;
    }
    out->event_number = DAT_DTO_COMPLETION_EVENT;
    auto &d = out->event_data.dto_completion_event_data;
    d.ep_handle = owner->ep;
    d.user_cookie = slot->cookie;
    d.status = st;
    d.operation = slot->op;
    // Only a receive's completion says how much arrived; requests moved what was posted.
    if (slot->op == DAT_DTO_RECEIVE)
        d.transfered_length = st == DAT_DTO_SUCCESS ? wc.byte_len : 0;
    else
        d.transfered_length = slot->length;
    // IB extensions: the request's own kind, or a receive consumed by an RDMA write with
    // immediate (or a send with immediate); the opcode is valid only on success.
    int ext = slot->ext;
    if (slot->recv && st == DAT_DTO_SUCCESS) {
        if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            ext = DAT_IB_RDMA_WRITE_IMMED_DATA;
            d.operation = static_cast<DAT_DTOS>(DAT_IB_DTO_RECV_IMMED);
        } else if (wc.wc_flags & IBV_WC_WITH_IMM) {
            ext = DAT_IB_RECV_IMMED_DATA;
            d.operation = static_cast<DAT_DTOS>(DAT_IB_DTO_RECV_MSG_IMMED);
        }
    }
    if (ext >= 0) {
        out->event_number = static_cast<DAT_EVENT_NUMBER>(DAT_IB_DTO_EVENT);
        static_assert(sizeof(DAT_IB_EXTENSION_EVENT_DATA) <= sizeof out->event_extension_data);
        DAT_IB_EXTENSION_EVENT_DATA x{};
        x.type = static_cast<DAT_IB_EXT_TYPE>(ext);
        x.status = st == DAT_DTO_SUCCESS ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
        // As the reference: the work completion's immediate, not byte-swapped (post.cpp).
        if (wc.wc_flags & IBV_WC_WITH_IMM) x.val.immed.data = wc.imm_data;
        std::memcpy(out->event_extension_data, &x, sizeof x);
    }
    return true;
}

DAT_RETURN CqEvd::dequeue(DAT_EVENT *out) noexcept {
    if (staged_.load(std::memory_order_acquire) != 0) {
        std::lock_guard lk(stage_mu_);
        if (pop_staged_locked(out)) return DAT_SUCCESS;
    }
    ibv_wc wc;
    while (ibv_poll_cq(cq_.get(), 1, &wc) == 1)
        if (convert(wc, out)) return DAT_SUCCESS;
    if (mixed) return evd_->ring_dequeue(out);  // (bare QUEUE_EMPTY for DTO EVDs)
    // Exactly DAT_QUEUE_EMPTY without the error class, as the reference's CQ path: a
    // polling dtest compares the return with the bare enumerator.
    return DAT_QUEUE_EMPTY;
}

void CqEvd::drain_locked() noexcept {
    ibv_wc wcs[16];
    while (staged_.load(std::memory_order_relaxed) < stage_cap_) {
        int room = static_cast<int>(
            std::min<std::size_t>(16, stage_cap_ - staged_.load(std::memory_order_relaxed)));
        int n = ibv_poll_cq(cq_.get(), room, wcs);
        if (n <= 0) return;
        for (int i = 0; i < n; ++i) {
            std::size_t k = staged_.load(std::memory_order_relaxed);
            if (convert(wcs[i], &stage_[(stage_head_ + k) % stage_cap_])) {
                staged_.store(k + 1, std::memory_order_release);
                arrived_.fetch_add(1, std::memory_order_release);
            }
        }
    }
}

bool CqEvd::pop_staged_locked(DAT_EVENT *out) noexcept {
    std::size_t k = staged_.load(std::memory_order_relaxed);
    if (k == 0) return false;
    *out = stage_[stage_head_];
    stage_head_ = (stage_head_ + 1) % stage_cap_;
    staged_.store(k - 1, std::memory_order_release);
    return true;
}

DAT_RETURN CqEvd::wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT *out,
                       DAT_COUNT *nmore) noexcept {
    if (waiters_.fetch_add(1) != 0) {
        waiters_.fetch_sub(1);
        return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
    }
    bool took = false;  // this wait read a channel event: it used up the CQ's arming
    struct Leave {
        CqEvd &e;
        const bool &took;
        ~Leave() {
            // A CNO agent or a dat_cno_wait may sleep on the channel too, counting on the
            // arming we used up (they saw no event): arm again for them.
            if (took && e.evd_->cno() != nullptr) e.arm();
            e.waiters_.fetch_sub(1);
        }
    } leave{*this, took};
    const util::Deadline deadline(timeout_us);
    bool armed = false;
    for (;;) {
        {
            std::lock_guard lk(stage_mu_);
            // util checked the threshold against the EVD's length before we counted
            // ourselves in; a dat_evd_resize that shrank it since saw no waiter here
            // (resize() refuses to shrink once it does). Looked at again, as the entry
            // point would have, in the look the wait makes anyway.
            if (static_cast<std::size_t>(threshold) > stage_cap_) return util::bad_arg(3);
            drain_locked();
            auto have = static_cast<DAT_COUNT>(staged_.load(std::memory_order_relaxed));
            DAT_COUNT soft = mixed ? evd_->pending() : 0;
            // A dat_evd_dequeue on another thread may take the ring's event between
            // pending() and here: then look again rather than return an unwritten *out.
            if (have + soft >= threshold &&
                (pop_staged_locked(out) || evd_->ring_dequeue(out) == DAT_SUCCESS)) {
                if (nmore != nullptr) *nmore = have + soft - 1;
                return DAT_SUCCESS;
            }
        }
        if (!armed) {
            // Arm, then look again: a completion that arrived before arming raises no
            // channel event.
            if (arm() != 0) return util::kInternal;
            armed = true;
            continue;
        }
        if (deadline.expired()) {
            if (nmore != nullptr)
                *nmore = static_cast<DAT_COUNT>(staged_.load()) + (mixed ? evd_->pending() : 0);
            return util::err(DAT_TIMEOUT_EXPIRED);
        }
        // Both kinds of event wake us: a completion through the armed channel, and
        // (mixed EVDs) an event queued on the software ring or dat_evd_set_unwaitable
        // through wake_ (ring_posted/unwaitable write it once they see waiters_ > 0,
        // which we set before our first look: nothing posted after that look is missed).
        pollfd fds[2] = {{ch_->fd, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
        int n = ::poll(fds, 2, deadline.poll_ms(-1));
        if (n < 0 && errno != EINTR) return util::kInternal;
        if (n < 0) return util::err(DAT_INTERRUPTED_CALL);
        if ((fds[0].revents & POLLIN) && take_channel_event(/*by_waiter=*/true)) {
            armed = false;
            took = true;
        }
        if (fds[1].revents & POLLIN) {
            std::uint64_t v;
            [[maybe_unused]] ssize_t r = ::read(wake_.get(), &v, sizeof v);
            if (evd_->state() & DAT_EVD_STATE_UNWAITABLE) return util::err(DAT_INTERRUPTED_CALL);
            // The poke may come from a CNO agent or dat_cno_wait that took the channel
            // event meant for us (take_channel_event): the CQ is no longer armed.
            armed = false;
        }
    }
}

DAT_RETURN CqEvd::resize(DAT_COUNT qlen) noexcept {
    std::lock_guard lk(stage_mu_);
    if (qlen <= 0 ||
        static_cast<std::size_t>(qlen) < staged_.load() + static_cast<std::size_t>(evd_->pending()))
        return util::bad_arg(2);
    // dat_evd_resize refused a waiter it saw; one that came in after that look has counted
    // itself in by now or will check its threshold against the new length (wait()), under
    // this lock. A shrink under it could leave it waiting for a count the EVD can never
    // hold; growing is harmless.
    if (waiters_.load() > 0 && static_cast<std::size_t>(qlen) < stage_cap_) {
        DAPL_TRC(trace::kError, "evd", "dat_evd_resize: EVD %p has a waiter",
                 static_cast<void *>(evd_));
        return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
    }
    std::unique_ptr<DAT_EVENT[]> fresh(new (std::nothrow)
                                           DAT_EVENT[static_cast<std::size_t>(qlen)]);
    if (!fresh) return util::kNoMemory;
    if (ibv_resize_cq(cq_.get(), qlen) != 0)
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
    if (DAT_RETURN rc = evd_->ring_resize(qlen); rc != DAT_SUCCESS) return rc;
    std::size_t k = staged_.load();
    for (std::size_t i = 0; i < k; ++i) fresh[i] = stage_[(stage_head_ + i) % stage_cap_];
    stage_ = std::move(fresh);
    stage_cap_ = static_cast<std::size_t>(qlen);
    stage_head_ = 0;
    return DAT_SUCCESS;
}

bool CqEvd::has_event() noexcept {
    if (evd_->state() & DAT_EVD_STATE_DISABLED) return false;
    if (mixed && evd_->pending() > 0) return true;
    std::lock_guard lk(stage_mu_);
    drain_locked();
    return staged_.load(std::memory_order_relaxed) > 0;
}

bool CqEvd::take_channel_event(bool by_waiter) noexcept {
    ibv_cq *cq = nullptr;
    void *ctx = nullptr;
    if (ibv_get_cq_event(ch_.get(), &cq, &ctx) != 0) return false;
    ibv_ack_cq_events(cq, 1);
    // A dat_evd_wait may sleep in poll(2) on this channel too. Its poll re-checks the fd
    // after the wake-up; if we read the event first, it sleeps on, with the completion in
    // the CQ (or staged by a CNO agent) and the CQ no longer armed: until its timeout, or
    // for ever. Its eventfd wakes it to look again and re-arm. (A waiter that counts
    // itself in after our look at waiters_ drains the CQ before it sleeps.)
    if (!by_waiter && waiters_.load() > 0) sys::signal_eventfd(wake_.get());
    return true;
}

void CqEvd::unwaitable() noexcept {
    sys::signal_eventfd(wake_.get());
}

void CqEvd::ring_posted() noexcept {
    // Only a waiter needs the wake-up: a post to an EVD nobody waits on costs no syscall.
    if (!mixed || waiters_.load() == 0) return;
    sys::signal_eventfd(wake_.get());
}

void CqEvd::cno_changed(util::Cno *from, util::Cno *to) noexcept {
    if (from != nullptr) cno_detach(from, this);
    if (to != nullptr) cno_attach(to, this);
}

// --- The transport hook ----------------------------------------------------------------

// util has checked the arguments and made the EVD (its ring, its CNO); every DTO EVD
// gets a completion queue of the same length.
DAT_RETURN VerbsTransport::evd_create_dto(util::Evd *evd) noexcept {
    std::unique_ptr<CqEvd> cq(new (std::nothrow) CqEvd(evd));
    if (!cq) return util::kNoMemory;
    if (DAT_RETURN rc = cq->open(dev_.ctx, evd->qlen()); rc != DAT_SUCCESS) return rc;
    evd->set_backend(std::move(cq));
    // Completions come from the CQ, polled by the backend: an empty poll of the EVD's
    // software ring (mixed EVDs) has no transport progress to make.
    evd->set_progress(nullptr);
    return DAT_SUCCESS;
}

}  // namespace opendat::verbs

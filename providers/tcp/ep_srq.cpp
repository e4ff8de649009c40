// TcpEp: receives from a shared receive queue. The endpoint takes one receive from the
// SRQ's ring when a SEND arrives, into its own one-slot receive ring, so the rest of the
// receive path (payload placement, completion on the EP's recv EVD with the EP's handle,
// flush at teardown) is the one of an endpoint's own receives.
#include "tcp/ep.hpp"
#include "tcp/srq.hpp"
#include "util/srq.hpp"

namespace opendat::tcp {

bool TcpEp::take_srq_recv() noexcept {
    util::Srq *srq = ep->srq;
    const std::size_t slot = rq_slot(rq_tail_);
    util::SrqRecv r;
    std::lock_guard lk(srq->mu);
    if (!util::srq_take_locked(srq, &r, rq_[slot].seg)) {
        // Empty: stop reading this connection until dat_srq_post_recv wakes us (TcpSrq).
        static_cast<TcpSrq *>(srq->impl)->wait(this);
        return false;
    }
    RecvWr &w = rq_[slot];
    w.cookie = r.cookie;
    w.niov = r.niov;
    w.capacity = r.capacity;
    w.status = r.status;
    ++rq_tail_;
    return true;
}

void TcpEp::srq_completed(std::uint64_t n) noexcept {
    util::srq_completed(ep->srq, static_cast<DAT_COUNT>(n));
}

void TcpEp::srq_ready() noexcept {
    std::lock_guard lk(ep->mu);
    if (dead_ || !fd_ || !rx_.blocked) return;
    rx_.blocked = false;
    rx_progress();
    reap();
    update_poll();
}

void TcpEp::recv_info(DAT_COUNT *nbufs, DAT_COUNT *span) const noexcept {
    std::uint64_t bytes = 0;
    for (std::uint64_t c = rq_head_; c != rq_tail_; ++c) bytes += rq_[rq_slot(c)].capacity;
    *nbufs = static_cast<DAT_COUNT>(rq_tail_ - rq_head_);
    *span = bytes > 0x7fffffff ? 0x7fffffff : static_cast<DAT_COUNT>(bytes);
}

}  // namespace opendat::tcp

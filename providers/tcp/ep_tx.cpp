// TcpEp: construction, posting and the transmit state machine.
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "tcp/ep.hpp"
#include "tcp/transport.hpp"
#include "trace/trace.hpp"
#include "util/access_guard.hpp"
#include "util/ep_checks.hpp"
#include "util/extension.hpp"

namespace opendat::tcp {

TcpEp::TcpEp(TcpTransport *tr, util::Ep *e) : ep(e), tr_(tr) {}

TcpEp::~TcpEp() = default;

namespace {

std::size_t at_least_one(DAT_COUNT v) noexcept {
    return v > 0 ? static_cast<std::size_t>(v) : 1;
}

// The ring sizes an EP attribute asks for (ep_create, and dat_ep_modify's reconfigure).
struct RingSizes {
    std::size_t req, recv, ctrl;
};
RingSizes ring_sizes(const DAT_EP_ATTR &a, bool srq) noexcept {
    const std::size_t nrecv = at_least_one(a.max_recv_dtos);
    // An SRQ endpoint holds one receive of its own: the one its current message lands in.
    // Control frames answer the peer's requests (ACKs, read responses) plus our own
    // handshake frame; when the ring is full we stop reading, which pushes back on the peer.
    return {at_least_one(a.max_request_dtos), srq ? 1 : nrecv,
            nrecv + at_least_one(a.max_rdma_read_in) + 8};
}

}  // namespace

void TcpEp::init() {
    const RingSizes n = ring_sizes(ep->attr, ep->srq != nullptr);
    sq_.resize(n.req);
    sq_iov_.allocate(n.req * kMaxIov);
    rq_.resize(n.recv);
    rq_iov_.allocate(n.recv * kMaxIov);
    ctrl_.resize(n.ctrl);
}

DAT_RETURN TcpEp::reconfigure(const DAT_EP_ATTR &a) noexcept {
    if (phase_ != Phase::Idle || fd_ || sq_head_ != sq_tail_ || ctrl_head_ != ctrl_tail_)
        return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
    const RingSizes n = ring_sizes(a, ep->srq != nullptr);
    std::size_t posted = rq_tail_ - rq_head_;
    if (posted > n.recv) {
        DAPL_TRC(trace::kError, "tcp", "EP %p: %zu receives posted, more than max_recv_dtos %zu",
                 static_cast<void *>(ep), posted, n.recv);
        return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
    }
    // Build the new rings aside, then swap: a failed allocation changes nothing.
    try {
        std::vector<RequestWr> sq(n.req);
        SlotArray<DAT_LMR_TRIPLET> sq_iov;
        sq_iov.allocate(n.req * kMaxIov);
        std::vector<RecvWr> rq(n.recv);
        SlotArray<DAT_LMR_TRIPLET> rq_iov;
        rq_iov.allocate(n.recv * kMaxIov);
        std::vector<CtrlFrame> ctrl(n.ctrl);
        for (std::size_t i = 0; i < posted; ++i) {
            std::size_t from = (rq_head_ + i) % rq_.size();
            rq[i] = rq_[from];
            std::memcpy(&rq_iov[i * kMaxIov], &rq_iov_[from * kMaxIov],
                        sizeof(DAT_LMR_TRIPLET) * static_cast<std::size_t>(rq_[from].niov));
        }
        sq_.swap(sq);
        sq_iov_.swap(sq_iov);
        rq_.swap(rq);
        rq_iov_.swap(rq_iov);
        ctrl_.swap(ctrl);
    } catch (...) {
        return util::kNoMemory;
    }
    rq_head_ = 0;
    rq_tail_ = posted;
    sq_head_ = sq_tail_ = sq_tx_ = 0;
    ctrl_head_ = ctrl_tail_ = 0;
    return DAT_SUCCESS;
}

DAT_RETURN TcpEp::post_recv(DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                            DAT_DTO_COOKIE cookie) noexcept {
    if (dead_) return util::invalid_handle(DAT_HANDLE_TYPE_EP);
    if (n > kMaxIov) return util::err(DAT_LENGTH_ERROR);
    if (ep->state == DAT_EP_STATE_DISCONNECTED)
        return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED);
    if (rq_tail_ - rq_head_ == rq_.size())
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
    std::uint64_t total = 0;
    std::size_t slot = rq_tail_ % rq_.size();
    RecvWr &r = rq_[slot];
    r.cookie = cookie;
    r.niov = static_cast<std::uint32_t>(n);
    r.status = util::check_local_iov(ep, n, iov, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &total);
    r.capacity = total;
    if (n > 0)
        std::memcpy(&rq_iov_[slot * kMaxIov], iov,
                    sizeof(DAT_LMR_TRIPLET) * static_cast<std::size_t>(n));
    ++rq_tail_;
    if (rx_.blocked && fd_) {
        // The peer's SEND was waiting for this buffer.
        rx_.blocked = false;
        rx_progress();
        reap();
        update_poll();
    }
    return DAT_SUCCESS;
}

DAT_RETURN TcpEp::post_request(DAT_DTOS dto, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                               DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                               DAT_COMPLETION_FLAGS flags, const ExtArgs *x) noexcept {
    if (dead_) return util::invalid_handle(DAT_HANDLE_TYPE_EP);
    if (n > kMaxIov) return util::err(DAT_LENGTH_ERROR);
    if (phase_ != Phase::Connected) {
        return util::err(DAT_INVALID_STATE, ep->state == DAT_EP_STATE_DISCONNECTED
                                                ? DAT_INVALID_STATE_EP_DISCONNECTED
                                                : DAT_INVALID_STATE_EP_UNCONNECTED);
    }
    if (sq_tail_ - sq_head_ == sq_.size())
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
    std::size_t slot = sq_tail_ % sq_.size();
    RequestWr &w = sq_[slot];
    // An IB extension the peer did not agree to (ep_ext.cpp): refused before anything
    // is queued.
    if (x != nullptr && !ext_request(w, *x)) return util::err(DAT_MODEL_NOT_SUPPORTED);
    w.cookie = cookie;
    w.flags = flags;
    w.dto = dto;
    w.niov = static_cast<std::uint32_t>(n);
    w.transmitted = false;
    w.replied = false;
    // Local reads need no privilege; an RDMA read (and an atomic's original value)
    // writes into local memory.
    const bool atomic = x != nullptr && !x->immed_op;
    w.status = util::check_local_iov(
        ep, n, iov,
        dto == DAT_DTO_RDMA_READ || atomic ? DAT_MEM_PRIV_LOCAL_WRITE_FLAG : DAT_MEM_PRIV_NONE_FLAG,
        &w.total);
    // The transport's limit, not the EP attribute: like an HCA, we do not hold consumers
    // to the sizes they asked for at ep_create (dtest asks for 64 KiB and writes 4 MiB).
    const util::Limits &lim = tr_->limits();
    if (w.status == DAT_DTO_SUCCESS &&
        w.total > (dto == DAT_DTO_SEND ? lim.max_message_size : lim.max_rdma_size))
        w.status = DAT_DTO_ERR_LOCAL_LENGTH;
    if (n > 0)
        std::memcpy(&sq_iov_[slot * kMaxIov], iov,
                    sizeof(DAT_LMR_TRIPLET) * static_cast<std::size_t>(n));
    auto seq = static_cast<std::uint32_t>(sq_tail_);
    switch (static_cast<int>(dto)) {  // DAT_DTOS, or a DAT_IB_DTOS value
        case DAT_DTO_SEND:
            w.hdr = frame(kSend, static_cast<std::uint32_t>(w.total), seq);
            break;
        case DAT_DTO_RDMA_WRITE:
            w.hdr = frame(kWrite, static_cast<std::uint32_t>(w.total), seq);
            break;
        case DAT_IB_DTO_RDMA_WRITE_IMMED:
            w.hdr = frame(kWriteImm, static_cast<std::uint32_t>(w.total), seq);
            w.hdr.aux = x->immed;
            break;
        case DAT_IB_DTO_FETCH_ADD:
        case DAT_IB_DTO_CMP_SWAP:
            // No payload; the operands travel in the header's extension.
            w.hdr = frame(kAtomicReq, 0, seq);
            w.hdr.hdr_len = (kBaseHeader + kAtomicExtension) / 8;
            w.hdr.aux = x->cmp_swap ? kAtomicCmpSwap : kAtomicFetchAdd;
            break;
        default:  // DAT_DTO_RDMA_READ: the request carries no payload; aux = bytes wanted
            w.hdr = frame(kReadReq, 0, seq);
            w.hdr.aux = static_cast<std::uint32_t>(w.total);
            break;
    }
    if (remote != nullptr) {
        w.hdr.addr = remote->virtual_address;
        w.hdr.rkey = remote->rmr_context;
    }
    // A solicited message, as IBV_SEND_SOLICITED: its receive wakes a solicited-only
    // waiter. A peer that did not agree to the flag takes every message as solicited.
    if ((flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) && (wire_.caps & kCapSolicited) &&
        (w.hdr.op == kSend || w.hdr.op == kWriteImm))
        w.hdr.flags |= kFlagSolicited;
    w.need_reply = dto == DAT_DTO_RDMA_READ || atomic;  // read data / the original value
    if (dto != DAT_DTO_RDMA_READ && !atomic && ep->delayed_ack.load(std::memory_order_relaxed)) {
        w.hdr.flags |= kFlagAckReq;
        w.need_reply = true;
    }
    if (w.status != DAT_DTO_SUCCESS) {
        // A local protection or length error puts an RC endpoint into the error state:
        // this request completes with its status, the outstanding work is flushed and the
        // connection breaks.
        w.transmitted = true;
        w.need_reply = false;
        ++sq_tail_;
        DAPL_TRC(trace::kInfo, "tcp", "EP %p: request failed local checks (status %d)",
                 static_cast<void *>(ep), w.status);
        teardown(DAT_CONNECTION_EVENT_BROKEN, true);
        return DAT_SUCCESS;
    }
    ++sq_tail_;
    tx_progress();
    reap();
    update_poll();
    return DAT_SUCCESS;
}

bool TcpEp::queue_ctrl(const FrameHeader &hdr, const void *data) noexcept {
    if (ctrl_full()) return false;
    CtrlFrame &c = ctrl_[ctrl_tail_ % ctrl_.size()];
    c.hdr = hdr;
    c.data = data;
    c.rkey = 0;  // revocation barrier: set by on_read_req for a READ_RESP
    ++ctrl_tail_;
    return true;
}

// Picks the frame to transmit next, if none is under way, and describes its bytes in
// tx_frame_ (the cursor then moves as they are sent). Control frames go first (they
// answer the peer); DISC goes last.
bool TcpEp::next_frame() noexcept {
    if (tx_src_ != TxSrc::None) return true;
    if (ctrl_head_ != ctrl_tail_) {
        tx_src_ = TxSrc::Ctrl;
    } else {
        // Skip requests that failed local checks: they are already "transmitted".
        while (sq_tx_ != sq_tail_ && sq_[sq_tx_ % sq_.size()].transmitted) ++sq_tx_;
        if (sq_tx_ != sq_tail_ && !close_after_ctrl_ && !fence_holds())
            tx_src_ = TxSrc::Request;
        else if (disc_wanted_ && !disc_sent_ && sq_tx_ == sq_tail_)
            tx_src_ = TxSrc::Disc;
        else
            return false;
    }
    tx_frame_.clear();
    switch (tx_src_) {
        case TxSrc::Ctrl: {
            const CtrlFrame &c = ctrl_[ctrl_head_ % ctrl_.size()];
            tx_frame_.push(&c.hdr, sizeof c.hdr);
            tx_frame_.push(c.data, c.hdr.length);
            break;
        }
        case TxSrc::Request: {
            std::size_t slot = sq_tx_ % sq_.size();
            const RequestWr &w = sq_[slot];
            tx_frame_.push(&w.hdr, sizeof w.hdr);
            if (w.hdr.op == kAtomicReq)
                tx_frame_.push(w.hdr_ext, sizeof w.hdr_ext);
            else if (w.hdr.op != kReadReq)
                tx_frame_.push_segments(&sq_iov_[slot * kMaxIov], w.niov);
            break;
        }
        case TxSrc::Disc:
            disc_hdr_ = frame(kDisc, 0);
            tx_frame_.push(&disc_hdr_, sizeof disc_hdr_);
            break;
        case TxSrc::None:
            return false;
    }
    {
        // The header is the first buffer of a frame just described.
        const auto *f = static_cast<const FrameHeader *>(tx_frame_.data()[0].iov_base);
        DAPL_TRC_FRAME("tcp.frame", "EP %p tx op %u flags 0x%x length %u seq %u",
                       static_cast<void *>(this), f->op, f->flags, f->length, f->seq);
    }
    return true;
}

void TcpEp::frame_sent() noexcept {
    switch (tx_src_) {
        case TxSrc::Ctrl:
            ++ctrl_head_;
            if (close_after_ctrl_ && ctrl_head_ == ctrl_tail_) {
                // The NAK is out: no more data from us; drain the peer until it closes.
                half_close();
            }
            break;
        case TxSrc::Request: {
            RequestWr &w = sq_[sq_tx_ % sq_.size()];
            w.transmitted = true;
            ++sq_tx_;
            break;
        }
        case TxSrc::Disc:
            disc_sent_ = true;
            half_close();
            break;
        case TxSrc::None:
            break;
    }
    tx_src_ = TxSrc::None;
}

// Our side of the stream is finished (DISC, or the NAK after a violation); the peer's side
// is still read until it closes. A failure here (the peer already reset the connection)
// shows up on that read, which ends the connection.
void TcpEp::half_close() noexcept {
    if (shutdown(fd_.get(), SHUT_WR) != 0) {
        DAPL_TRC(trace::kInfo, "tcp", "EP %p: shutdown failed: errno %d", static_cast<void *>(ep),
                 errno);
    }
}

void TcpEp::tx_progress() noexcept {
    if (!fd_ ||
        (phase_ != Phase::Connected && phase_ != Phase::Closing && phase_ != Phase::AwaitAccept))
        return;
    bool freed_ctrl = false;
    for (;;) {
        if (!next_frame()) break;
        msghdr msg{};
        msg.msg_iov = tx_frame_.data();
        msg.msg_iovlen = static_cast<std::size_t>(tx_frame_.count());
        ssize_t sent;
        if (tx_needs_hold()) {
            // Revocation barrier: re-check the source and send under the hold.
            bool alive;
            {
                util::AccessHold hold(ep->ia->mem);
                alive = tx_source_alive(hold);
                sent = alive ? sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
            }
            if (!alive) {
                access_revoked(false);
                return;
            }
        } else {
            sent = sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        if (sent < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;  // EPOLLOUT resumes
            if (errno == EINTR) continue;
            DAPL_TRC(trace::kInfo, "tcp", "EP %p send failed: errno %d", static_cast<void *>(ep),
                     errno);
            teardown(DAT_CONNECTION_EVENT_BROKEN, true);
            return;
        }
        tx_frame_.consume(static_cast<std::size_t>(sent));
        if (tx_frame_.left() > 0) continue;
        if (tx_src_ == TxSrc::Ctrl) freed_ctrl = true;
        frame_sent();
    }
    if (freed_ctrl && rx_.blocked && !ctrl_full()) {
        rx_.blocked = false;
        rx_progress();
    }
}

// Posts completions in posting order: a request completes once it is transmitted and,
// if it waits for one, its reply (read data, delayed ACK) has arrived.
void TcpEp::reap() noexcept {
    while (sq_head_ != sq_tx_) {
        RequestWr &w = sq_[sq_head_ % sq_.size()];
        if (!w.transmitted || (w.need_reply && !w.replied)) break;
        ++sq_head_;
        // Suppressed (or unsignalled, as the verbs provider takes it): no event when it
        // succeeds; a failure is always reported.
        if (w.status == DAT_DTO_SUCCESS &&
            (w.flags & (DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG)))
            continue;
        post_request_completion(w, w.status);
    }
}

// DAT_COMPLETION_BARRIER_FENCE_FLAG: the next request waits until every RDMA read posted
// before it has its data placed. Without it the target could take a later write (or the
// consumer, woken by a later send, could change the memory) before it sends the read's
// data, which it reads from memory only when it transmits the response.
bool TcpEp::fence_holds() const noexcept {
    if (sq_tx_ == sq_tail_ || !(sq_[sq_tx_ % sq_.size()].flags & DAT_COMPLETION_BARRIER_FENCE_FLAG))
        return false;
    for (std::uint64_t i = sq_head_; i != sq_tx_; ++i) {
        const RequestWr &w = sq_[i % sq_.size()];
        if (w.dto == DAT_DTO_RDMA_READ && w.need_reply && !w.replied) return true;
    }
    return false;
}

void TcpEp::idle(bool *recv_idle, bool *req_idle) const noexcept {
    *recv_idle = rq_head_ == rq_tail_;
    *req_idle = sq_head_ == sq_tail_;
}

void TcpEp::update_poll() noexcept {
    if (!fd_ || dead_) return;
    std::uint32_t want = 0;
    if (phase_ == Phase::Connecting) {
        want = EPOLLOUT;
    } else {
        if (!rx_.blocked) want |= EPOLLIN | EPOLLRDHUP;
        // Limits per peer: after a violation's NAK nothing more is sent; queued requests
        // must not keep EPOLLOUT armed on the half-closed socket (a busy loop).
        bool pending = tx_src_ != TxSrc::None || ctrl_head_ != ctrl_tail_ ||
                       (sq_tx_ != sq_tail_ && !close_after_ctrl_ && !fence_holds()) ||
                       (disc_wanted_ && !disc_sent_);
        if (pending) want |= EPOLLOUT;
    }
    if (registered_ && want == armed_) return;
    bool ok = registered_ ? tr_->engine().modify(fd_.get(), this, want)
                          : tr_->engine().add(fd_.get(), this, want);
    if (ok) {
        armed_ = want;
        registered_ = true;
    } else
        DAPL_TRC(trace::kError, "tcp", "epoll_ctl failed for EP %p: errno %d",
                 static_cast<void *>(ep), errno);
}

}  // namespace opendat::tcp

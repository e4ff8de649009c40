// TcpEp: construction, posting and the transmit state machine.
#include <sys/epoll.h>
#include <sys/socket.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "tcp/ep.hpp"
#include "tcp/send_frames.hpp"
#include "tcp/transport.hpp"
#include "trace/trace.hpp"
#include "util/access_guard.hpp"
#include "util/ep_checks.hpp"
#include "util/extension.hpp"
#include "util/sys_io.hpp"

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

// A work request's IOV into its ring slot. Most posts carry one segment: a copy of a size
// the compiler knows (inline moves, any alignment the caller's array has), not a call to
// memcpy for a size known only at run time (two per ping-pong turnaround).
[[gnu::always_inline]] inline void copy_iov(DAT_LMR_TRIPLET *to, const DAT_LMR_TRIPLET *from,
                                            DAT_COUNT n) noexcept {
    if (n == 1)
        std::memcpy(to, from, sizeof(DAT_LMR_TRIPLET));
    else if (n > 1)
        std::memcpy(to, from, sizeof(DAT_LMR_TRIPLET) * static_cast<std::size_t>(n));
}

// Every frame that leaves, at trace level 10 (kData): one line, one place (inline: the
// level test is all a frame pays when tracing is off). `ep` is the TcpEp sending it.
[[gnu::always_inline]] inline void tx_frame_traced(const void *ep, const FrameHeader &h) noexcept {
    DAPL_TRC_FRAME("tcp.frame", "EP %p tx op %u flags 0x%x length %u seq %u", ep, h.op, h.flags,
                   h.length, h.seq);
}

}  // namespace

void TcpEp::init() {
    const RingSizes n = ring_sizes(ep->attr, ep->srq != nullptr);
    sq_.resize(std::bit_ceil(n.req));
    sq_iov_.allocate(sq_.size() * kMaxIov);
    rq_.allocate(std::bit_ceil(n.recv));
    ctrl_.resize(n.ctrl);
    set_ring_limits(n.req, n.recv);
}

void TcpEp::set_ring_limits(std::size_t req, std::size_t recv) noexcept {
    sq_cap_ = req;
    rq_cap_ = recv;
    sq_mask_ = sq_.size() - 1;
    rq_mask_ = rq_.size() - 1;
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
        std::vector<RequestWr> sq(std::bit_ceil(n.req));
        SlotArray<DAT_LMR_TRIPLET> sq_iov;
        sq_iov.allocate(sq.size() * kMaxIov);
        SlotArray<RecvWr> rq;
        rq.allocate(std::bit_ceil(n.recv));
        std::vector<CtrlFrame> ctrl(n.ctrl);
        for (std::size_t i = 0; i < posted; ++i) {
            rq[i] = rq_[rq_slot(rq_head_ + i)];
        }
        sq_.swap(sq);
        sq_iov_.swap(sq_iov);
        rq_.swap(rq);
        ctrl_.swap(ctrl);
    } catch (...) {
        return util::kNoMemory;
    }
    set_ring_limits(n.req, n.recv);
    rq_head_ = 0;
    rq_tail_ = posted;
    sq_head_ = sq_tail_ = sq_tx_ = 0;
    ctrl_head_ = ctrl_tail_ = 0;
    return DAT_SUCCESS;
}

[[gnu::hot]] DAT_RETURN TcpEp::post_recv(DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                         DAT_DTO_COOKIE cookie) noexcept {
    if (dead_) return util::invalid_handle(DAT_HANDLE_TYPE_EP);
    if (n > kMaxIov) return util::err(DAT_LENGTH_ERROR);
    if (ep->state == DAT_EP_STATE_DISCONNECTED)
        return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED);
    if (rq_tail_ - rq_head_ == rq_cap_)
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
    std::size_t slot = rq_slot(rq_tail_);
    RecvWr &r = rq_[slot];
    r.cookie = cookie;
    r.niov = static_cast<std::uint32_t>(n);
    // Copied first: the caller's array may change under us once it is read (another thread
    // of a careless application), and the receive must be what is checked and written.
    copy_iov(r.seg, iov, n);
    // Its keys are checked once, when a message is placed, under the revocation hold
    // (rx_fast_send, rx_target_alive; an empty message too): a check here could not spare
    // that one (the LMR may be freed before the message comes), and a receive that fails it
    // completes in error when a message arrives for it either way, as on an RC queue pair.
    r.status = DAT_DTO_SUCCESS;
    r.capacity = segments_bytes(r.seg, static_cast<std::uint32_t>(n));
    ++rq_tail_;
    if (rx_.ended) {
        // The peer's end is read and nothing more will be: flushed at once, as the rest
        // were (rx_teardown), not when the answers have drained.
        flush_recvs(true);
        return DAT_SUCCESS;
    }
    if (rx_.blocked && fd_) {
        // The peer's SEND was waiting for this buffer.
        rx_.blocked = false;
        rx_progress();
        reap();
        update_poll();
    }
    return DAT_SUCCESS;
}

[[gnu::hot]] DAT_RETURN TcpEp::post_request(DAT_DTOS dto, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                            DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                            DAT_COMPLETION_FLAGS flags, const ExtArgs *x) noexcept {
    if (dead_) return util::invalid_handle(DAT_HANDLE_TYPE_EP);
    if (n > kMaxIov) return util::err(DAT_LENGTH_ERROR);
    if (phase_ != Phase::Connected) {
        // Closing: a disconnect is under way (ours, or the peer's end is read).
        return util::err(DAT_INVALID_STATE,
                         ep->state == DAT_EP_STATE_DISCONNECTED || phase_ == Phase::Closing
                             ? DAT_INVALID_STATE_EP_DISCONNECTED
                             : DAT_INVALID_STATE_EP_UNCONNECTED);
    }
    if (sq_tail_ - sq_head_ == sq_cap_)
        return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
    std::size_t slot = sq_slot(sq_tail_);
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
    // Copied first (as in post_recv): what is sent, and its length in the frame header and
    // in send_alone's flat buffer, is what is checked, whatever the caller's array holds by
    // then.
    DAT_LMR_TRIPLET *mine = &sq_iov_[slot * kMaxIov];
    copy_iov(mine, iov, n);
    const bool atomic = x != nullptr && !x->immed_op;
    // The keys are checked once, where the bytes move, under the revocation hold: a
    // payload as it is sent (source_alive: local reads need no privilege), an RDMA read's
    // data or an atomic's original value as it is written (LOCAL_WRITE; rx_target_alive,
    // on_atomic_resp). A check here could not spare those (the LMR may be freed in
    // between); a request that fails them completes with DAT_DTO_ERR_LOCAL_PROTECTION in
    // posting order and breaks the connection, as an RC queue pair's work request does.
    w.total = segments_bytes(mine, static_cast<std::uint32_t>(n));
    w.status = DAT_DTO_SUCCESS;
    // The transport's limit, not the EP attribute: like an HCA, we do not hold consumers
    // to the sizes they asked for at ep_create (dtest asks for 64 KiB and writes 4 MiB).
    const util::Limits &lim = tr_->limits();
    if (w.status == DAT_DTO_SUCCESS &&
        w.total > (dto == DAT_DTO_SEND ? lim.max_message_size : lim.max_rdma_size))
        w.status = DAT_DTO_ERR_LOCAL_LENGTH;
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
        // A local length error (above the transport's limit) puts an RC endpoint into the
        // error state: this request completes with its status, the outstanding work is
        // flushed and the connection breaks.
        w.transmitted = true;
        w.need_reply = false;
        ++sq_tail_;
        DAPL_TRC(trace::kInfo, "tcp", "EP %p: request failed local checks (status %d)",
                 static_cast<void *>(ep), w.status);
        teardown(DAT_CONNECTION_EVENT_BROKEN, true);
        return DAT_SUCCESS;
    }
    const bool write = w.hdr.op == kWrite;
    if (write_last_) follow_write(!write);  // a held write leaves with this post
    ++sq_tail_;
    if (defer_tx()) {
        // EPOLLOUT (the socket has room) sends it, with what is posted meanwhile, in the
        // next epoll round of whoever progresses.
        update_poll();
        if (write) note_write();
        return DAT_SUCCESS;
    }
    if (!send_alone()) tx_progress();
    reap();
    update_poll();
    if (stamp_post_) last_post_ = std::chrono::steady_clock::now();
    if (write) note_write();
    return DAT_SUCCESS;
}

// A plain SEND of one small segment on a connection with nothing else to send or to
// complete (a ping-pong's every send): the frame is built in the flat buffer, its payload
// checked and copied under the revocation hold, and it leaves with one send(); the
// completion is posted at once. No request slot is written, since nothing will look at it:
// a SEND without ACK_REQ gets no reply, and the ring's counters move past it (its seq is
// the slot's, as post_request's would be). This is post_request, defer_tx, send_alone,
// reap and update_poll for that case, each of which would find nothing else to do, on
// fewer lines of code and data (docs/benchmarks.md, "A plain SEND in one step").
// False: nothing was done or sent; post_request takes it the long way, which may defer it
// (a completion is waiting: perhaps a burst), refuse it, fail it (a key that does not
// pass, a size above the limit), or queue it behind a full socket.
[[gnu::hot]] bool TcpEp::send_now(const DAT_LMR_TRIPLET &seg, DAT_DTO_COOKIE cookie,
                                  DAT_COMPLETION_FLAGS flags) noexcept {
    const DAT_LMR_TRIPLET s = seg;  // read once: what is checked is what is sent
    // After a write, post_request: the write may be held for this SEND (ep_cork.cpp).
    if (dead_ || write_last_ || phase_ != Phase::Connected || sq_head_ != sq_tail_ ||
        tx_src_ != TxSrc::None || ctrl_head_ != ctrl_tail_ || (flags & ~RequestWr::kQuiet) != 0 ||
        s.segment_length > kFlatSendMax - sizeof(FrameHeader) ||
        s.segment_length > tr_->limits().max_message_size ||
        ep->delayed_ack.load(std::memory_order_relaxed))
        return false;
    util::Evd *const evd = ep->request_evd;
    if (evd != nullptr && evd->has_events_hint()) return false;
    const auto len = static_cast<std::uint32_t>(s.segment_length);
    const FrameHeader h = frame(kSend, len, static_cast<std::uint32_t>(sq_tail_));
    std::memcpy(flat_, &h, sizeof h);
    if (len != 0) {
        util::AccessHold hold(ep->ia->mem);
        if (hold.local(&s, 1, ep->pz, DAT_MEM_PRIV_NONE_FLAG, &request_check_) != DAT_DTO_SUCCESS)
            return false;
        copy_bytes(flat_ + sizeof h, segment_base(s), len);
    }
    const std::size_t bytes = sizeof h + len;
    long sent;  // or -errno
    do {
        sent = sys::send_raw(fd_.get(), flat_, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (sent == -EINTR);
    if (sent <= 0) return false;  // full, or failed: the long way's send says which
    tx_frame_traced(this, h);
    tx_sent_ += static_cast<std::uint64_t>(sent);
    if (static_cast<std::size_t>(sent) != bytes) {
        send_now_rest(s, cookie, flags, h, static_cast<std::size_t>(sent));
        return true;
    }
    sq_head_ = sq_tx_ = ++sq_tail_;
    if (evd != nullptr && RequestWr::reports(flags, DAT_DTO_SUCCESS))
        util::post_dto(evd, ep, cookie, DAT_DTO_SUCCESS, static_cast<DAT_COUNT>(len), DAT_DTO_SEND);
    return true;
}

// A request's flat frame (send_alone, send_now) the socket took `sent` bytes of: the rest
// becomes the frame under way, from the request's own memory (re-checked when the round
// sends it).
void TcpEp::rest_under_way(std::size_t sent) noexcept {
    tx_src_ = TxSrc::Request;
    tx_frame_.clear();
    describe_frame(TxSrc::Request, sq_tx_, &tx_frame_, false);
    tx_frame_.consume(sent);
}

// The socket took send_now's frame in part: the request is queued as post_request would
// have queued it, as the frame under way, and the transmit round (EPOLLOUT) sends the rest
// from the application's memory, re-checked as it goes, as after send_alone.
[[gnu::cold]] void TcpEp::send_now_rest(const DAT_LMR_TRIPLET &s, DAT_DTO_COOKIE cookie,
                                        DAT_COMPLETION_FLAGS flags, const FrameHeader &h,
                                        std::size_t sent) noexcept {
    const std::size_t slot = sq_slot(sq_tail_);
    RequestWr &w = sq_[slot];
    w = RequestWr{};
    w.cookie = cookie;
    w.flags = flags;
    w.dto = DAT_DTO_SEND;
    w.hdr = h;
    w.niov = 1;
    w.total = h.length;
    sq_iov_[slot * kMaxIov] = s;
    ++sq_tail_;
    rest_under_way(sent);
    update_poll();
}

// A post whose frame is the only one to transmit, and small (a ping-pong's every post):
// header and payload are copied into one flat buffer and leave with one send(), without
// the transmit round's frame selection, batch gathering, iovec bookkeeping and the
// second selection after the send (under callgrind, a dat_ep_post_send of 8 bytes ran
// 1270 instructions through the round and 800 this way; docs/benchmarks.md, "One frame
// straight out"). The payload is copied under the revocation hold after its re-check, as
// the round's send would be; the send itself needs no hold once the bytes are ours.
// False: the frame is left to the transmit round, untouched (any other frame waiting, a
// fence, a bigger frame, memory revoked since the post's check, or a send that failed).
// A send the socket took only in part leaves the rest as the frame under way, which the
// round (EPOLLOUT) finishes from the request's own memory.
[[gnu::hot]] bool TcpEp::send_alone() noexcept {
    // Called by post_request on a Connected endpoint only: no NAK or DISC can be due.
    if (tx_src_ != TxSrc::None || ctrl_head_ != ctrl_tail_ || sq_tail_ - sq_tx_ != 1) return false;
    const std::size_t slot = sq_slot(sq_tx_);
    RequestWr &w = sq_[slot];
    if ((w.flags & DAT_COMPLETION_BARRIER_FENCE_FLAG) && fence_holds_at(sq_tx_)) return false;
    const bool payload = w.hdr.op != kReadReq && w.hdr.op != kAtomicReq;
    const std::size_t ext = w.hdr.op == kAtomicReq ? sizeof w.hdr_ext : 0;
    const std::size_t bytes = sizeof w.hdr + ext + (payload ? w.total : 0);
    if (bytes > kFlatSendMax) return false;
    std::memcpy(flat_, &w.hdr, sizeof w.hdr);
    if (ext != 0) std::memcpy(flat_ + sizeof w.hdr, w.hdr_ext, ext);
    if (payload && w.total != 0) {
        util::AccessHold hold(ep->ia->mem);
        if (!source_alive(hold, TxSrc::Request, sq_tx_)) return false;  // the round fails it
        copy_segments(&sq_iov_[slot * kMaxIov], w.niov, flat_ + sizeof w.hdr);
    }
    // An RDMA write the history says a post follows waits in the socket for it.
    const int more = w.hdr.op == kWrite && cork_write(w) ? MSG_MORE : 0;
    long sent;  // or -errno
    do {
        sent = sys::send_raw(fd_.get(), flat_, bytes, MSG_NOSIGNAL | MSG_DONTWAIT | more);
    } while (sent == -EINTR);
    if (sent < 0) {
        if (more != 0) cork_failed();
        // Full: EPOLLOUT (update_poll) brings the round. Failed: the round's own send
        // fails the same way and ends the connection.
        return sent == -EAGAIN || sent == -EWOULDBLOCK;
    }
    tx_frame_traced(this, w.hdr);
    tx_sent_ += static_cast<std::uint64_t>(sent);
    tx_src_ = TxSrc::Request;
    if (static_cast<std::size_t>(sent) == bytes) {
        frame_sent();
        return true;
    }
    rest_under_way(static_cast<std::size_t>(sent));
    return true;
}

// Back-to-back posts leave together. A request is only queued when it is part of a burst:
// it comes within the engine's burst_gap of the end of the previous post on this endpoint, and the
// consumer has not caught up (earlier requests are outstanding, or completions wait in the
// request EVD). update_poll() then arms EPOLLOUT, and the next epoll round (a polling
// consumer's empty dequeue, a dat_evd_wait in the progress, or the progress thread, awake
// or not: the socket is writable) sends every queued frame with one sendmsg, as does the
// next post that is not deferred. A post after a round trip (a ping-pong) or after its
// predecessor's completion was taken (post, poll, post) goes at once, and so does a post
// that fills a batch, or one whose frame carries more than kDeferMax bytes.
// DAT_TCP_TX_BATCH=1 turns this off.
// The clock is read last, only for a post that could be deferred: a ping-pong's posts
// (nothing outstanding, no completion waiting) cost no clock read at all.
[[gnu::hot]] bool TcpEp::defer_tx() noexcept {
    stamp_post_ = false;
    const ProgressPolicy &policy = tr_->engine().policy();
    const std::uint32_t batch = policy.tx_batch;
    if (batch <= 1) return false;
    const bool behind = sq_tail_ - sq_head_ > 1 ||
                        (ep->request_evd != nullptr && ep->request_evd->has_events_hint());
    if (!behind) return false;
    const auto now = std::chrono::steady_clock::now();
    const bool burst = now - last_post_ < policy.burst_gap;
    last_post_ = now;
    stamp_post_ = true;
    // A big message gains nothing: its copy dwarfs the system call. An RDMA read's (or an
    // atomic's) request is a header, whatever it asks for: a run of them leaves in one
    // send, and the target answers them with one.
    const FrameHeader &h = sq_[sq_slot(sq_tail_ - 1)].hdr;
    return burst && sq_tail_ - sq_tx_ < batch && h.length <= kDeferMax;
}

[[gnu::hot]] bool TcpEp::queue_ctrl(const FrameHeader &hdr, const void *data) noexcept {
    if (ctrl_full()) return false;
    CtrlFrame &c = ctrl_[ctrl_tail_ % ctrl_.size()];
    c.hdr = hdr;
    c.data = data;
    c.rkey = 0;  // revocation barrier: set by on_read_req for a READ_RESP
    ++ctrl_tail_;
    return true;
}

[[gnu::hot]] TcpEp::TxSrc TcpEp::pick_frame(std::uint64_t ctrl, std::uint64_t *req) const noexcept {
    if (ctrl != ctrl_tail_) return TxSrc::Ctrl;
    // Skip requests that failed local checks: they are already "transmitted".
    while (*req != sq_tail_ && sq_[sq_slot(*req)].transmitted) ++*req;
    if (*req != sq_tail_ && !close_after_ctrl_ && !fence_holds_at(*req)) return TxSrc::Request;
    if (disc_due() && *req == sq_tail_) return TxSrc::Disc;
    return TxSrc::None;
}

template <int N>
[[gnu::hot]] void TcpEp::describe_frame(TxSrc src, std::uint64_t idx, IovCursor<N> *out,
                                        bool trace) noexcept {
    switch (src) {
        case TxSrc::Ctrl: {
            const CtrlFrame &c = ctrl_[idx % ctrl_.size()];
            out->push(&c.hdr, sizeof c.hdr);
            out->push(c.data, c.hdr.length);
            if (trace) tx_frame_traced(this, c.hdr);
            break;
        }
        case TxSrc::Request: {
            std::size_t slot = sq_slot(idx);
            const RequestWr &w = sq_[slot];
            out->push(&w.hdr, sizeof w.hdr);
            if (w.hdr.op == kAtomicReq)
                out->push(w.hdr_ext, sizeof w.hdr_ext);
            else if (w.hdr.op != kReadReq)
                out->push_segments(&sq_iov_[slot * kMaxIov], w.niov);
            if (trace) tx_frame_traced(this, w.hdr);
            break;
        }
        case TxSrc::Disc:
            disc_hdr_ = frame(kDisc, 0);
            out->push(&disc_hdr_, sizeof disc_hdr_);
            if (trace) tx_frame_traced(this, disc_hdr_);
            break;
        case TxSrc::None:
            break;
    }
}

// Picks the frame to transmit next, if none is under way, and describes its bytes in
// tx_frame_ (the cursor then moves as they are sent). Control frames go first (they
// answer the peer); DISC goes last.
[[gnu::hot]] bool TcpEp::next_frame(bool traced) noexcept {
    if (tx_src_ != TxSrc::None) return true;
    const TxSrc src = pick_frame(ctrl_head_, &sq_tx_);
    if (src == TxSrc::None) return false;
    tx_src_ = src;
    tx_frame_.clear();
    // A frame that went out in a batch was traced when it was gathered.
    describe_frame(src, tx_index(), &tx_frame_, !traced);
    return true;
}

[[gnu::hot]] void TcpEp::frame_sent() noexcept {
    switch (tx_src_) {
        case TxSrc::Ctrl:
            ++ctrl_head_;
            if (close_after_ctrl_ && ctrl_head_ == ctrl_tail_) {
                // The NAK is out: no more data from us; drain the peer until it closes
                // (after rx_teardown, tx_progress then ends the connection).
                half_close();
            }
            break;
        case TxSrc::Request: {
            RequestWr &w = sq_[sq_slot(sq_tx_)];
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

// Our side of the stream is finished (DISC, the NAK after a violation, or the answers
// rx_teardown sends before the connection ends); the peer's side
// is still read until it closes. A failure here (the peer already reset the connection)
// shows up on that read, which ends the connection.
void TcpEp::half_close() noexcept {
    if (shutdown(fd_.get(), SHUT_WR) != 0) {
        DAPL_TRC(trace::kInfo, "tcp", "EP %p: shutdown failed: errno %d", static_cast<void *>(ep),
                 errno);
    }
}

// Frames queued behind the one under way leave with it in one sendmsg: no system call per
// small message while many are queued. The batch's iovecs are the head frame's remaining
// bytes, then each gathered frame's; `frames` says where each gathered frame came from,
// its size and where its iovecs end. Never value-initialised: it lives on the stack of
// every transmit round.
struct TcpEp::TxBatch {
    static constexpr int kFrames = 128;  // DAT_TCP_TX_BATCH's maximum
    static constexpr int kIov = 256;
    static constexpr std::uint64_t kBytes = 128 * 1024;  // bigger frames gain nothing
    struct Frame {
        TxSrc src;
        std::uint64_t idx;    // its ring counter
        std::uint64_t bytes;  // header and payload
        int iov_end;          // iovecs of the batch up to and including this frame
        bool hold;            // reads registered memory (the revocation barrier)
    };
    IovCursor<kIov> iov;
    Frame frames[kFrames];
    int n = 0;
    bool hold = false;
};

[[gnu::hot]] void TcpEp::gather_batch(TxBatch *b) noexcept {
    const auto max = static_cast<int>(tr_->engine().policy().tx_batch);
    if (max <= 1 || (tx_src_ != TxSrc::Ctrl && tx_src_ != TxSrc::Request)) return;
    std::uint64_t ctrl = ctrl_head_ + (tx_src_ == TxSrc::Ctrl ? 1 : 0);
    std::uint64_t req = sq_tx_ + (tx_src_ == TxSrc::Request ? 1 : 0);
    std::uint64_t bytes = tx_frame_.left();
    bool copied_head = false;
    while (b->n + 1 < max && b->n < TxBatch::kFrames && bytes < TxBatch::kBytes &&
           b->iov.count() + kMaxIov + 1 + tx_frame_.count() <= TxBatch::kIov) {
        // The same choice next_frame() will make once the frames before it are sent; DISC
        // goes on its own (it ends our side of the stream).
        const TxSrc src = pick_frame(ctrl, &req);
        if (src != TxSrc::Ctrl && src != TxSrc::Request) break;
        if (!copied_head) {
            for (int i = 0; i < tx_frame_.count(); ++i)
                b->iov.push(tx_frame_.data()[i].iov_base, tx_frame_.data()[i].iov_len);
            copied_head = true;
        }
        const std::uint64_t idx = src == TxSrc::Ctrl ? ctrl++ : req++;
        const std::uint64_t before = b->iov.left();
        describe_frame(src, idx, &b->iov, true);
        TxBatch::Frame &f = b->frames[b->n++];
        f.src = src;
        f.idx = idx;
        f.bytes = b->iov.left() - before;
        f.iov_end = b->iov.count();
        f.hold = needs_hold(src, idx);
        b->hold = b->hold || f.hold;
        bytes += f.bytes;
    }
}

// Sends what is queued. A receive round that stopped because the control ring was full
// (answers the peer asked for faster than the socket took them) resumes once some of them
// left, and what it queues goes next, in a loop here rather than through rx_progress, which
// calls back: that recursion would be as deep as a flood of read requests is long. A
// resumed round reads within what is left of the last round's budget (only rx_progress
// starts one); once that is spent, level-triggered epoll (or the poller's next round)
// brings a fresh round. The loop ends with the receive side running, or with answers the
// socket did not take (EPOLLOUT comes back for them), or blocked for a reason a send
// cannot remove (no receive posted: post_recv resumes it), or with the transmit budget
// spent (EPOLLOUT, or the poller's next round, brings the rest). Once the peer's end was
// read (rx_teardown), the last answer to leave ends the connection.
[[gnu::hot]] void TcpEp::tx_progress(std::uint64_t *budget) noexcept {
    bool room = send_queued(budget);
    while (room && rx_.blocked && !ctrl_full()) {
        rx_.blocked = false;
        rx_round();
        room = fd_ && ctrl_head_ != ctrl_tail_ && send_queued(budget);
    }
    if (fd_ && rx_.ended && ctrl_head_ == ctrl_tail_) teardown(end_event_, true);
}

// One transmit round: the queued frames the socket takes, until `*budget` bytes have
// left. True if control-ring slots were freed (and the connection is still there).
[[gnu::hot]] bool TcpEp::send_queued(std::uint64_t *budget) noexcept {
    if (!fd_ ||
        (phase_ != Phase::Connected && phase_ != Phase::Closing && phase_ != Phase::AwaitAccept))
        return false;
    bool freed_ctrl = false;
    for (;;) {
        if (*budget == 0 || !next_frame()) break;
        TxBatch b;
        gather_batch(&b);
        msghdr msg{};
        if (b.n > 0) {
            msg.msg_iov = b.iov.data();
            msg.msg_iovlen = static_cast<std::size_t>(b.iov.count());
        } else {
            msg.msg_iov = tx_frame_.data();
            msg.msg_iovlen = static_cast<std::size_t>(tx_frame_.count());
        }
        // No more than the budget in one call (IovCap); the rest is the frame under way.
        auto send_capped = [&] {
            IovCap cap(msg, *budget);
            return send_frames(fd_.get(), msg);
        };
        ssize_t sent;
        const bool head_hold = needs_hold(tx_src_, tx_index());
        if (head_hold || b.hold) {
            // Revocation barrier: re-check every source and send under the hold.
            bool alive;
            {
                util::AccessHold hold(ep->ia->mem);
                alive = !head_hold || source_alive(hold, tx_src_, tx_index());
                // A gathered frame whose memory went stops the batch before it: it fails
                // as the head of a later round.
                for (int i = 0; alive && i < b.n; ++i) {
                    const TxBatch::Frame &f = b.frames[i];
                    if (f.hold && !source_alive(hold, f.src, f.idx)) {
                        msg.msg_iovlen = static_cast<std::size_t>(i == 0 ? tx_frame_.count()
                                                                         : b.frames[i - 1].iov_end);
                        b.n = i;
                        break;
                    }
                }
                sent = alive ? send_capped() : 0;
            }
            if (!alive) {
                access_revoked(false);
                return false;
            }
        } else {
            sent = send_capped();
        }
        if (sent < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;  // EPOLLOUT resumes
            if (errno == EINTR) continue;
            DAPL_TRC(trace::kInfo, "tcp", "EP %p send failed: errno %d", static_cast<void *>(ep),
                     errno);
            teardown(ended_or(DAT_CONNECTION_EVENT_BROKEN), true);
            return false;
        }
        // The bytes the kernel took: the head frame's first, then the gathered frames' in
        // order; each one complete is sent, a partial one becomes the frame under way.
        auto rest = static_cast<std::uint64_t>(sent);
        *budget = rest < *budget ? *budget - rest : 0;
        tx_sent_ += rest;
        std::uint64_t take = rest < tx_frame_.left() ? rest : tx_frame_.left();
        tx_frame_.consume(static_cast<std::size_t>(take));
        rest -= take;
        if (tx_frame_.left() > 0) continue;
        if (tx_src_ == TxSrc::Ctrl) freed_ctrl = true;
        frame_sent();
        for (int i = 0; i < b.n && rest > 0; ++i) {
            const TxBatch::Frame &f = b.frames[i];
            // Nothing was queued meanwhile, so next_frame() picks the frame gathered here.
            if (!next_frame(true) || tx_src_ != f.src || tx_index() != f.idx) {
                DAPL_TRC(trace::kError, "tcp",
                         "EP %p: transmit batch out of step: connection broken",
                         static_cast<void *>(ep));
                teardown(DAT_CONNECTION_EVENT_BROKEN, true);
                return false;
            }
            take = rest < f.bytes ? rest : f.bytes;
            tx_frame_.consume(static_cast<std::size_t>(take));
            rest -= take;
            if (tx_frame_.left() > 0) break;
            if (tx_src_ == TxSrc::Ctrl) freed_ctrl = true;
            frame_sent();
        }
    }
    return freed_ctrl && fd_;
}

// Posts completions in posting order: a request completes once it is transmitted and,
// if it waits for one, its reply (read data, delayed ACK) has arrived. The run of
// completions one sendmsg finished goes to the request EVD under one lock (Evd::Batch).
[[gnu::hot]] void TcpEp::reap() noexcept {
    if (sq_head_ == sq_tx_) return;  // every poll of a hot connection comes here
    util::Evd *evd = ep->request_evd;
    util::Evd::Batch batch(evd);
    int dropped = 0;
    while (sq_head_ != sq_tx_) {
        RequestWr &w = sq_[sq_slot(sq_head_)];
        if (!w.transmitted || (w.need_reply && !w.replied)) break;
        ++sq_head_;
        if (!w.reports(w.status)) continue;
        // A request's completion ends a solicited-only wait only when it failed.
        if (evd != nullptr &&
            !batch.add(request_completion(w, w.status), w.status != DAT_DTO_SUCCESS))
            ++dropped;
    }
    batch.finish();
    for (; dropped > 0; --dropped) util::post_async(ep->ia, DAT_ASYNC_ERROR_EVD_OVERFLOW, evd);
}

// DAT_COMPLETION_BARRIER_FENCE_FLAG: the next request waits until every RDMA read posted
// before it has its data placed. Without it the target could take a later write (or the
// consumer, woken by a later send, could change the memory) before it sends the read's
// data, which it reads from memory only when it transmits the response.
[[gnu::hot]] bool TcpEp::fence_holds_at(std::uint64_t req) const noexcept {
    if (req == sq_tail_ || !(sq_[sq_slot(req)].flags & DAT_COMPLETION_BARRIER_FENCE_FLAG))
        return false;
    for (std::uint64_t i = sq_head_; i != req; ++i) {
        const RequestWr &w = sq_[sq_slot(i)];
        if (w.dto == DAT_DTO_RDMA_READ && w.need_reply && !w.replied) return true;
    }
    return false;
}

void TcpEp::idle(bool *recv_idle, bool *req_idle) const noexcept {
    *recv_idle = rq_head_ == rq_tail_;
    *req_idle = sq_head_ == sq_tail_;
}

[[gnu::hot]] void TcpEp::update_poll_full() noexcept {
    if (!fd_ || dead_) return;
    std::uint32_t want = 0;
    if (phase_ == Phase::Connecting) {
        want = EPOLLOUT;
    } else {
        if (rx_.reading())
            want |= kReadEvents;
        else if (rx_.awaits_peer_end())
            want |= EPOLLRDHUP;  // the peer's end, while we wait (on_events)
        // EPOLLOUT only for a frame the next transmit round can pick: the socket is
        // always writable, and a frame that must wait would keep the round coming back
        // with nothing to send (a busy loop). Requests wait after a violation's NAK (our
        // side is half-closed) or behind a fence, and our DISC behind every request.
        std::uint64_t next = sq_tx_;
        bool pending =
            !tx_idle() && (tx_src_ != TxSrc::None || pick_frame(ctrl_head_, &next) != TxSrc::None);
        if (pending) want |= EPOLLOUT;
    }
    if (detached_) {
        // Out of the set while polled directly: reading needs no epoll; anything else
        // (a transmit to finish, a receive to wait for) brings it back.
        if (want == kReadEvents) return;
        detached_ = false;
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

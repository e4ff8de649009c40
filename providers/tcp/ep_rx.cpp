// TcpEp: the receive state machine. Every frame header is validated before anything is
// done with it; payloads land directly in the posted receive buffer, the RDMA target
// region or the read initiator's buffer, after the access check.
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "tcp/ep.hpp"
#include "tcp/transport.hpp"
#include "trace/trace.hpp"
#include "tcp/frame_limits.hpp"
#include "util/access_guard.hpp"

namespace opendat::tcp {

namespace {
// Every frame that arrives, at trace level 10 (kData): one line, one place for the long
// way and the fast one (inline: the level test is all a frame pays when tracing is off).
// `ep` is the TcpEp receiving it.
[[gnu::always_inline]] inline void rx_frame_traced(const void *ep, const FrameHeader &h) noexcept {
    DAPL_TRC_FRAME("tcp.frame", "EP %p rx op %u flags 0x%x length %u seq %u", ep, h.op, h.flags,
                   h.length, h.seq);
}
}  // namespace

// A receive round, then the answers it queued (RDMA read responses, atomic responses,
// delayed_ack ACKs) are sent: a run of read requests that arrived together is answered in
// as few sendmsg calls as a transmit batch allows, not one each (tx_progress, which may
// resume a round the full control ring stopped). A round ends as soon as a read comes
// back short, so a lone request is answered without an extra system call.
[[gnu::hot]] void TcpEp::rx_progress(std::uint64_t *tx_budget) noexcept {
    if (!fd_) return;
    in_.begin_round(fd_.get(), kRxBudget);
    rx_continue(tx_budget);
}

[[gnu::hot]] void TcpEp::rx_continue(std::uint64_t *tx_budget) noexcept {
    rx_round();
    if (fd_ && ctrl_head_ != ctrl_tail_) tx_progress(tx_budget);
}

// The frame state machine. The buffered socket hands out the stream's bytes; each state
// says how many it needs and where they go, and a step returns once the socket is drained
// (level-triggered epoll brings us back), the endpoint is blocked, or the connection ended.
// rx_progress starts the round's budget; a resumed round (tx_progress) goes on with it.
[[gnu::hot]] void TcpEp::rx_round() noexcept {
    if (!fd_) return;
    while (fd_ && rx_.reading()) {
        BufferedSocket::Io io = BufferedSocket::Io::Done;
        // Every frame starts at its header, so that state is tested before the switch: the
        // switch's jump table would put a line (and a page) of .rodata on every turnaround.
        if (rx_.at == RxState::At::Header) {
            if (rx_.hdr_got == 0) {
                io = in_.fill();  // what assemble reads first
                if (io == BufferedSocket::Io::Done && rx_fast_send()) continue;
            }
            if (io == BufferedSocket::Io::Done) {
                io = in_.assemble(&rx_.hdr, sizeof rx_.hdr, &rx_.hdr_got);
                if (io == BufferedSocket::Io::Done && !rx_header()) return;
            }
        } else {
            switch (rx_.at) {
                case RxState::At::Header:
                    break;  // above
                case RxState::At::Extension:
                    io = in_.assemble(rx_.ext, rx_.ext_want, &rx_.ext_got);
                    if (io == BufferedSocket::Io::Done) io = in_.skip(&rx_.skip);
                    if (io == BufferedSocket::Io::Done) rx_.at = RxState::At::Dispatch;
                    break;
                case RxState::At::Dispatch: {
                    Step s = rx_dispatch();
                    if (s == Step::Failed) return;
                    if (s == Step::Stop) rx_.blocked = true;
                    continue;
                }
                case RxState::At::Payload: {
                    // Revocation barrier: the target is re-checked, and the bytes placed, under
                    // one hold of the memory table; a revocation waits for this round to end.
                    bool alive;
                    {
                        util::AccessHold hold(ep->ia->mem);
                        alive = rx_target_alive(hold);
                        if (alive) io = in_.read_into(&rx_.dst);
                    }
                    if (!alive) {
                        access_revoked(true);
                        return;
                    }
                    if (io == BufferedSocket::Io::Done && rx_payload_done() == Step::Failed) return;
                    break;
                }
                case RxState::At::Discard:
                    io = in_.skip(&rx_.skip);
                    if (io == BufferedSocket::Io::Done) rx_.next_frame();
                    break;
            }
        }
        if (io == BufferedSocket::Io::Done) continue;
        if (io == BufferedSocket::Io::Again) return;
        rx_stream_ended(io == BufferedSocket::Io::Failed ? in_.error() : 0);
        return;
    }
}

// Ends the connection from the receive side. The answers already queued go out first, as
// they would have had each left with its request: the peer's RDMA read before its DISC
// completes (its own graceful disconnect sends DISC once its requests are transmitted, not
// answered), and an atomic executed here is not reported flushed there. Control frames
// only: none of our requests follows the peer's end (close_after_ctrl_), and nothing after
// our own DISC (our side of the stream is shut).
//
// They leave as any answer does, a transmit budget per call (tx_progress, which ends the
// connection with `event` after the last): a peer that asked for a ring of big reads and
// then ended its stream must not keep the endpoint's lock and the progress thread for
// all of them at once. Nothing more is read meanwhile (RxState::ended), and the close
// deadline bounds how long a peer that does not take them keeps the endpoint. A
// connection that ends with unread bytes in its receive buffer is reset by close(), which
// may still discard answers the kernel holds.
void TcpEp::rx_teardown(DAT_EVENT_NUMBER event) noexcept {
    if (fd_ && ctrl_head_ != ctrl_tail_ && !disc_sent_ &&
        (phase_ == Phase::Connected || phase_ == Phase::Closing)) {
        close_after_ctrl_ = true;
        rx_.ended = true;
        end_event_ = event;
        // Nothing more is read: the receives (one an SRQ lent for a message the end cut
        // short) end now, not once the answers have drained (up to DAT_TCP_CLOSE_MS).
        flush_recvs(true);
        if (phase_ == Phase::Connected) {
            phase_ = Phase::Closing;
            ep->state = DAT_EP_STATE_DISCONNECT_PENDING;  // no more posts; the end is coming
            arm_close_deadline(false);  // limits per peer: the peer gets this long
        }
        return;  // every caller's round transmits next, or arms EPOLLOUT for it
    }
    if (fd_) teardown(event, true);
}

// The peer's end of the stream is gone: an orderly close (err 0) or a socket error.
void TcpEp::rx_stream_ended(int err) noexcept {
    if (err != 0) {
        DAPL_TRC(trace::kInfo, "tcp", "EP %p recv failed: errno %d", static_cast<void *>(ep), err);
    }
    // After our DISC or theirs an orderly close is the normal end; otherwise the peer
    // vanished without saying goodbye.
    DAT_EVENT_NUMBER event = failure_event();
    if (err == 0 && phase_ == Phase::Closing && !rx_.discard_all)
        event = DAT_CONNECTION_EVENT_DISCONNECTED;
    rx_teardown(event);
}

// The peer ended its stream (EPOLLRDHUP: its FIN, or its close) while a frame of it waits
// for a receive, an SRQ's receive or room in the control ring. It sends nothing more, and
// what it sent stays unread until the wait ends: its own DISC may be there, behind the
// waiting message. Without a look at the socket meanwhile, the endpoint stayed CONNECTED,
// its socket open, until a keepalive probe failed (some 70 s after a close) or, for a peer
// that only shut down its sending side, for ever: an SRQ server kept every endpoint whose
// peer left a message behind. Now the peer's end starts the close deadline
// (DAT_TCP_CLOSE_MS, limits per peer): a receive posted in time lets the round go on and
// read the rest (the message, then DISC or the end of the stream). Each time a wait ends
// (a receive completes, an answer leaves) the peer gets the time again, so a peer that left
// many messages behind for a receiver that keeps posting, or many reads whose answers still
// leave, loses nothing; a wait that makes no progress for that long ends the connection
// BROKEN (TcpEp::on_tick), the waiting message unread. Connected endpoints only: a graceful
// close of ours (Closing) has its own deadline already.
void TcpEp::peer_ended_while_blocked() noexcept {
    rx_.peer_fin = true;  // EPOLLRDHUP is level-triggered: update_poll stops asking for it
    if (phase_ != Phase::Connected) return;
    DAPL_TRC(trace::kInfo, "tcp",
             "EP %p: the peer ended its stream while its frame waits for a receive or room "
             "for answers; DAT_TCP_CLOSE_MS for each wait",
             static_cast<void *>(ep));
    fin_mark_ = progress_mark();
    arm_close_deadline(false);
}

// A ping-pong's every message in one step: a whole plain SEND (no extension, no ACK
// wanted) already staged, a receive of one segment posted, no SRQ. It makes the checks of
// the long way (rx_header, rx_dispatch, on_send_frame, the payload's revocation barrier,
// rx_payload_done) that can fail for such a frame, and nothing that cannot; any other
// frame, or a check that fails, goes the long way, which then reports it: nothing is
// consumed unless the message was placed. The long way's five calls, jump tables and
// cursor cost a turnaround about 25 lines of code and data (docs/benchmarks.md).
[[gnu::hot]] bool TcpEp::rx_fast_send() noexcept {
    constexpr std::size_t kHdr = sizeof(FrameHeader);
    if (in_.staged() < kHdr || phase_ != Phase::Connected || rx_.discard_all ||
        rq_head_ == rq_tail_ || ep->srq != nullptr)
        return false;
    FrameHeader &h = rx_.hdr;
    std::memcpy(&h, in_.peek(), kHdr);
    if (h.op != kSend || (h.flags & kFlagAckReq) != 0 || !header_valid(h) ||
        extension_bytes(h, wire_.version) != 0 || in_.staged() - kHdr < h.length ||
        frame_too_large(h, tr_->limits()) != nullptr)
        return false;
    const RecvWr &r = rq_[rq_slot(rq_head_)];
    if (r.status != DAT_DTO_SUCCESS || r.niov != 1 || h.length > r.capacity) return false;
    {
        util::AccessHold hold(ep->ia->mem);  // the revocation barrier, as for any payload
        if (hold.local(r.seg, 1, ep->pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &recv_check_) !=
            DAT_DTO_SUCCESS)
            return false;
        copy_bytes(segment_base(r.seg[0]), in_.peek() + kHdr, h.length);
    }
    in_.drop(kHdr + h.length);
    rx_frame_traced(this, h);
    ++rq_head_;
    util::post_dto(ep->recv_evd, ep, r.cookie, DAT_DTO_SUCCESS, static_cast<DAT_COUNT>(h.length),
                   DAT_DTO_RECEIVE, rx_solicited());
    return true;
}

// The base header is in: check what holds for every frame (magic, the agreed version, a
// header length, flags and op that version and its capabilities define), so nothing of an
// invalid frame is read further. False: the connection is gone.
[[gnu::hot]] bool TcpEp::rx_header() noexcept {
    const FrameHeader &h = rx_.hdr;
    long ext = extension_bytes(h, wire_.version);
    if (rx_.discard_all) {
        rx_.drop_frame(ext > 0 ? static_cast<std::size_t>(ext) : 0);
        return true;
    }
    if (ext < 0 || !header_valid(h)) {
        protocol_error("bad frame header");
        return false;
    }
    rx_.header_done(static_cast<std::size_t>(ext));
    return true;
}

[[gnu::hot]] TcpEp::Step TcpEp::rx_dispatch() noexcept {
    const FrameHeader &h = rx_.hdr;
    rx_frame_traced(this, h);
    if (const char *why = frame_too_large(h, tr_->limits())) {  // receiver's max message size
        protocol_error(why);
        return Step::Failed;
    }
    if (phase_ == Phase::AwaitAccept) {
        if (!valid_handshake(h, h.op == kConnAcc ? kConnAcc : kConnRej, util::kMaxPrivateData)) {
            protocol_error("unexpected frame during connect");
            return Step::Failed;
        }
        if (h.op == kConnAcc) wire_ = agree(offer_, announced(h));
        rx_.dst.clear();
        rx_.dst.push(pdata_in_, h.length);
        rx_.expect_payload(RxState::Done::ConnPdata);
        return Step::Continue;
    }
    switch (h.op) {
        case kSend:
            return on_send_frame();
        case kWrite:
            return on_write_frame();
        case kWriteImm:
            return on_write_imm_frame();
        case kAtomicReq:
            return on_atomic_req();
        case kAtomicResp:
            return on_atomic_resp();
        case kReadReq:
            return on_read_req();
        case kReadResp:
            return on_read_resp();
        case kAck:
            return on_reply(false);
        case kNak:
            return on_reply(true);
        case kDisc:
            if (h.length != 0) break;
            rx_teardown(DAT_CONNECTION_EVENT_DISCONNECTED);
            return Step::Failed;  // connection gone: stop processing
        default:
            break;
    }
    protocol_error("unexpected frame");
    return Step::Failed;
}

[[gnu::hot]] TcpEp::Step TcpEp::on_send_frame() noexcept {
    // No receive posted (or none left in the SRQ): wait, as an RC responder's RNR retry.
    if (rq_head_ == rq_tail_ && (ep->srq == nullptr || !take_srq_recv())) return Step::Stop;
    if ((rx_.hdr.flags & kFlagAckReq) && ctrl_full()) return Step::Stop;
    std::size_t slot = rq_slot(rq_head_);
    RecvWr &r = rq_[slot];
    if (r.status != DAT_DTO_SUCCESS || rx_.hdr.length > r.capacity) {
        // Receive buffer unusable or too small: the receive completes in error and, as
        // on an RC queue pair, the connection breaks.
        DAT_DTO_COMPLETION_STATUS st =
            r.status != DAT_DTO_SUCCESS ? r.status : DAT_DTO_ERR_LOCAL_LENGTH;
        ++rq_head_;
        util::post_dto(ep->recv_evd, ep, r.cookie, st, 0, DAT_DTO_RECEIVE);
        srq_recvs_done(1);
        rx_teardown(DAT_CONNECTION_EVENT_BROKEN);
        return Step::Failed;
    }
    // Scatter the message over the buffer's segments, as far as it goes.
    rx_.dst.clear();
    rx_.dst.push_segments(r.seg, r.niov, rx_.hdr.length);
    rx_.expect_payload(RxState::Done::Recv);
    return Step::Continue;
}

[[gnu::hot]] TcpEp::Step TcpEp::on_write_frame() noexcept {
    return expect_remote_write(RxState::Done::Write);
}

[[gnu::hot]] TcpEp::Step TcpEp::expect_remote_write(RxState::Done done) noexcept {
    if ((rx_.hdr.flags & kFlagAckReq) && ctrl_full()) return Step::Stop;
    DAT_DTO_COMPLETION_STATUS st = util::AccessHold(ep->ia->mem)  // also the RMR's EP scope
                                       .remote(rx_.hdr.rkey, ep->pz, ep, rx_.hdr.addr,
                                               rx_.hdr.length, DAT_MEM_PRIV_REMOTE_WRITE_FLAG);
    if (st != DAT_DTO_SUCCESS) return remote_violation(st);
    rx_.dst.clear();
    rx_.dst.push(reinterpret_cast<void *>(static_cast<std::uintptr_t>(rx_.hdr.addr)),
                 rx_.hdr.length);
    rx_.expect_payload(done);
    return Step::Continue;
}

[[gnu::hot]] TcpEp::Step TcpEp::on_read_req() noexcept {
    if (rx_.hdr.length != 0) {
        protocol_error("read request with payload");
        return Step::Failed;
    }
    if (ctrl_full()) return Step::Stop;
    DAT_DTO_COMPLETION_STATUS st = util::AccessHold(ep->ia->mem)  // also the RMR's EP scope
                                       .remote(rx_.hdr.rkey, ep->pz, ep, rx_.hdr.addr, rx_.hdr.aux,
                                               DAT_MEM_PRIV_REMOTE_READ_FLAG);
    if (st != DAT_DTO_SUCCESS) return remote_violation(st);
    FrameHeader resp = frame(kReadResp, rx_.hdr.aux, rx_.hdr.seq);
    queue_ctrl(resp, reinterpret_cast<const void *>(static_cast<std::uintptr_t>(rx_.hdr.addr)));
    ctrl_[(ctrl_tail_ - 1) % ctrl_.size()].rkey = rx_.hdr.rkey;  // revocation barrier
    rx_.next_frame();
    return Step::Continue;  // sent after the round (rx_progress)
}

TcpEp::Step TcpEp::remote_violation(DAT_DTO_COMPLETION_STATUS status) noexcept {
    // The NAK needs a control slot: with the ring full of this round's answers, wait until
    // some leave (tx_progress resumes the round, which comes back here) rather than end
    // the connection and drop them.
    if (ctrl_full()) return Step::Stop;
    DAPL_TRC(trace::kInfo, "tcp", "EP %p: remote access violation (rkey 0x%x addr 0x%llx len %u)",
             static_cast<void *>(ep), rx_.hdr.rkey, static_cast<unsigned long long>(rx_.hdr.addr),
             rx_.hdr.op == kReadReq ? rx_.hdr.aux : rx_.hdr.length);
    FrameHeader nak = frame(kNak, 0, rx_.hdr.seq);
    nak.aux = status;
    queue_ctrl(nak, nullptr);  // room checked above
    // Like an RC responder: nothing more is executed on this connection. Tell the
    // initiator why, then drain until it closes (closing with unread data would reset the
    // connection and could destroy the NAK in flight).
    close_after_ctrl_ = true;
    rx_.discard_all = true;
    rx_.skip = rx_.hdr.op == kWrite || rx_.hdr.op == kWriteImm ? rx_.hdr.length : 0;
    rx_.at = RxState::At::Discard;
    phase_ = Phase::Closing;
    arm_close_deadline(true);  // limits per peer: the drain ends in bounded time
    tx_progress();
    return fd_ ? Step::Continue : Step::Failed;
}

[[gnu::hot]] RequestWr *TcpEp::find_wr(std::uint32_t seq, std::uint64_t *counter) noexcept {
    // Requests awaiting replies lie in [sq_head_, sq_tx_); seq is the counter's low 32 bits.
    std::uint64_t c =
        sq_head_ + static_cast<std::uint32_t>(seq - static_cast<std::uint32_t>(sq_head_));
    if (c >= sq_tx_) return nullptr;
    *counter = c;
    return &sq_[sq_slot(c)];
}

[[gnu::hot]] TcpEp::Step TcpEp::on_read_resp() noexcept {
    std::uint64_t c = 0;
    RequestWr *w = find_wr(rx_.hdr.seq, &c);
    if (w == nullptr || w->dto != DAT_DTO_RDMA_READ || w->replied || rx_.hdr.length != w->total) {
        protocol_error("unmatched read response");
        return Step::Failed;
    }
    rx_.dst.clear();
    rx_.dst.push_segments(&sq_iov_[sq_slot(c) * kMaxIov], w->niov);
    rx_.wr = c;
    rx_.expect_payload(RxState::Done::ReadResp);
    return Step::Continue;
}

[[gnu::hot]] TcpEp::Step TcpEp::on_reply(bool nak) noexcept {
    std::uint64_t c = 0;
    RequestWr *w = find_wr(rx_.hdr.seq, &c);
    if (nak && rx_.hdr.length == 0 && w == nullptr) {
        // The refused request already completed (an RDMA write without delayed_ack
        // completes once TCP has the data): it cannot fail any more, so the error is
        // reported on the endpoint, which breaks as an RC queue pair would.
        DAPL_TRC(trace::kInfo, "tcp", "EP %p: peer refused completed request %u (status %u)",
                 static_cast<void *>(ep), rx_.hdr.seq, rx_.hdr.aux);
        util::post_async(ep->ia, DAT_ASYNC_ERROR_EP_BROKEN, ep);
        rx_teardown(DAT_CONNECTION_EVENT_BROKEN);
        return Step::Failed;
    }
    // An ACK answers only a frame that asked for one (SEND, WRITE, WRITE_IMM); a NAK may
    // also refuse a read or an atomic.
    if (rx_.hdr.length != 0 || w == nullptr ||
        (!nak && (!w->need_reply || w->dto == DAT_DTO_RDMA_READ || w->hdr.op == kAtomicReq))) {
        protocol_error("unmatched acknowledgement");
        return Step::Failed;
    }
    w->replied = true;
    rx_.next_frame();
    if (!nak) return Step::Continue;
    // The target refused the access: this request fails, everything after it is flushed
    // and the connection is gone (RC semantics).
    w->status = rx_.hdr.aux == DAT_DTO_ERR_REMOTE_ACCESS ? DAT_DTO_ERR_REMOTE_ACCESS
                                                         : DAT_DTO_ERR_REMOTE_RESPONDER;
    w->need_reply = false;
    rx_teardown(DAT_CONNECTION_EVENT_BROKEN);
    return Step::Failed;
}

[[gnu::hot]] TcpEp::Step TcpEp::rx_payload_done() noexcept {
    rx_.next_frame();
    switch (rx_.done) {
        case RxState::Done::Recv: {
            RecvWr &r = rq_[rq_slot(rq_head_)];
            ++rq_head_;
            util::post_dto(ep->recv_evd, ep, r.cookie, DAT_DTO_SUCCESS,
                           static_cast<DAT_COUNT>(rx_.hdr.length), DAT_DTO_RECEIVE, rx_solicited());
            srq_recvs_done(1);
            break;
        }
        case RxState::Done::Write:
            break;
        case RxState::Done::WriteImm:
            write_imm_placed();
            break;
        case RxState::Done::ReadResp:
            sq_[sq_slot(rx_.wr)].replied = true;
            break;
        case RxState::Done::ConnPdata:
            if (rx_.hdr.op == kConnAcc) {
                phase_ = Phase::Connected;
                if (ticking_) {
                    tr_->engine().want_ticks(this, false);
                    ticking_ = false;
                }
                util::ep_established(ep, static_cast<DAT_COUNT>(rx_.hdr.length), pdata_in_);
            } else {
                // Rejected by the peer application: report it with its private data. No
                // service point for our qualifier there: a non-peer reject (wire.hpp).
                if (rx_.hdr.aux == kRejNoServicePoint)
                    teardown(DAT_CONNECTION_EVENT_NON_PEER_REJECTED, true);
                else
                    teardown(DAT_CONNECTION_EVENT_PEER_REJECTED, true,
                             static_cast<DAT_COUNT>(rx_.hdr.length), pdata_in_);
                return Step::Failed;
            }
            break;
        case RxState::Done::None:
            break;
    }
    if ((rx_.done == RxState::Done::Recv || rx_.done == RxState::Done::Write ||
         rx_.done == RxState::Done::WriteImm) &&
        (rx_.hdr.flags & kFlagAckReq)) {
        // Placed in memory: acknowledge (delayed_ack), after the round (rx_progress).
        // Space was checked before reading.
        queue_ctrl(frame(kAck, 0, rx_.hdr.seq), nullptr);
    }
    rx_.done = RxState::Done::None;
    return Step::Continue;
}

}  // namespace opendat::tcp

// TcpEp: the receive state machine. Every frame header is validated before anything is
// done with it; payloads land directly in the posted receive buffer, the RDMA target
// region or the read initiator's buffer, after the access check.
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "tcp/frame_limits.hpp"
#include "tcp/tcp_ep.hpp"
#include "tcp/transport.hpp"
#include "trace/trace.hpp"
#include "util/access_guard.hpp"

namespace opendat::tcp {

namespace {
// Bytes received per call before yielding to other sockets (level-triggered epoll
// brings us back).
constexpr std::uint64_t kRxBudget = 8u << 20;
}  // namespace

void TcpEp::start_payload(RxDone done, std::uint64_t len) noexcept {
    rx_done_ = done;
    rx_left_ = len;
    rx_iov_idx_ = 0;
    rx_ = Rx::Payload;
}

// Copies staged bytes into the current payload's iovecs and moves past them.
void TcpEp::rx_place(std::size_t len) noexcept {
    const unsigned char *from = stage_ + stage_pos_;
    stage_pos_ += len;
    rx_left_ -= len;
    while (len > 0) {
        iovec &v = rx_iov_[rx_iov_idx_];
        std::size_t take = len < v.iov_len ? len : v.iov_len;
        std::memcpy(v.iov_base, from, take);
        rx_advance_iov(take);
        from += take;
        len -= take;
    }
}

void TcpEp::rx_advance_iov(std::size_t got) noexcept {
    while (got > 0) {
        iovec &v = rx_iov_[rx_iov_idx_];
        std::size_t take = got < v.iov_len ? got : v.iov_len;
        v.iov_base = static_cast<char *>(v.iov_base) + take;
        v.iov_len -= take;
        got -= take;
        if (v.iov_len == 0) ++rx_iov_idx_;
    }
}

// Reads the socket. Small frames are coalesced: one recv() into the staging buffer brings
// in several headers and small payloads, which are copied out (cheaper than a syscall
// each). A payload larger than what is staged is read straight into its destination. A
// recv() that comes back short means the socket is drained, so the loop stops without
// the extra recv() that would only say EAGAIN (epoll is level-triggered: more data brings
// us back).
void TcpEp::rx_progress() noexcept {
    std::uint64_t budget = kRxBudget;
    bool drained = false;
    // Staged bytes are always processed: the socket may hold nothing more to wake us.
    while (fd_ && !rx_blocked_ && (budget > 0 || staged() > 0)) {
        ssize_t n = 0;
        bool direct = false;
        std::size_t asked = 0;
        switch (rx_) {
            case Rx::Header: {
                if (staged() == 0) {
                    if (drained) return;
                    break;  // refill below
                }
                std::size_t take = sizeof rx_hdr_ - rx_got_;
                if (take > staged()) take = staged();
                std::memcpy(reinterpret_cast<char *>(&rx_hdr_) + rx_got_, stage_ + stage_pos_,
                            take);
                stage_pos_ += take;
                rx_got_ += take;
                if (rx_got_ == sizeof rx_hdr_) {
                    rx_got_ = 0;
                    rx_ = discard_all_ ? Rx::Discard : Rx::Dispatch;
                    if (discard_all_) rx_left_ = rx_hdr_.length;
                }
                continue;
            }
            case Rx::Dispatch: {
                Step s = rx_dispatch();
                if (s == Step::Failed) return;
                if (s == Step::Stop) {
                    rx_blocked_ = true;
                    return;
                }
                continue;
            }
            case Rx::Payload: {
                if (rx_left_ == 0) {
                    if (rx_payload_done() == Step::Failed) return;
                    continue;
                }
                if (staged() > 0) {
                    bool alive;
                    {
                        // Revocation barrier: re-check the target and copy under the hold.
                        util::AccessHold hold(ep->ia->mem);
                        alive = rx_target_alive(hold);
                        if (alive)
                            rx_place(rx_left_ < staged() ? static_cast<std::size_t>(rx_left_)
                                                         : staged());
                    }
                    if (!alive) {
                        access_revoked(true);
                        return;
                    }
                    continue;
                }
                if (drained) return;
                if (rx_left_ < kStage) break;  // small remainder: stage it with what follows
                // Large: straight into the destination, never past this frame.
                direct = true;
                for (int i = rx_iov_idx_; i < rx_niov_; ++i) asked += rx_iov_[i].iov_len;
                {
                    // Revocation barrier: re-check the target and read under the hold.
                    util::AccessHold hold(ep->ia->mem);
                    n = rx_target_alive(hold)
                            ? readv(fd_.get(), rx_iov_ + rx_iov_idx_, rx_niov_ - rx_iov_idx_)
                            : -2;
                }
                if (n == -2) {
                    access_revoked(true);
                    return;
                }
                if (n > 0) {
                    std::size_t got = static_cast<std::size_t>(n);
                    rx_left_ -= got;
                    budget = budget > got ? budget - got : 0;
                    rx_advance_iov(got);
                    drained = got < asked;
                    if (rx_left_ == 0 && rx_payload_done() == Step::Failed) return;
                }
                break;
            }
            case Rx::Discard: {
                if (rx_left_ == 0) {
                    rx_ = Rx::Header;
                    continue;
                }
                if (staged() > 0) {
                    std::size_t take =
                        rx_left_ < staged() ? static_cast<std::size_t>(rx_left_) : staged();
                    stage_pos_ += take;
                    rx_left_ -= take;
                    continue;
                }
                if (drained) return;
                break;  // refill below
            }
        }
        if (!direct) {
            // The staging buffer is empty here: refill it.
            stage_pos_ = stage_len_ = 0;
            n = recv(fd_.get(), stage_, kStage, MSG_DONTWAIT);
            if (n > 0) {
                stage_len_ = static_cast<std::size_t>(n);
                budget = budget > stage_len_ ? budget - stage_len_ : 0;
                drained = stage_len_ < kStage;
                continue;
            }
        }
        if (n == 0) {
            // Orderly close. After our DISC or their DISC this is the normal end; otherwise
            // the peer vanished without saying goodbye.
            teardown(phase_ == Phase::Closing && !discard_all_ ? DAT_CONNECTION_EVENT_DISCONNECTED
                     : phase_ == Phase::AwaitAccept ? DAT_CONNECTION_EVENT_NON_PEER_REJECTED
                                                    : DAT_CONNECTION_EVENT_BROKEN,
                     true);
            return;
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            if (errno == EINTR) continue;
            DAPL_TRC(trace::kInfo, "tcp", "EP %p recv failed: errno %d", static_cast<void *>(ep),
                     errno);
            teardown(phase_ == Phase::AwaitAccept ? DAT_CONNECTION_EVENT_NON_PEER_REJECTED
                                                  : DAT_CONNECTION_EVENT_BROKEN,
                     true);
            return;
        }
    }
}

TcpEp::Step TcpEp::rx_dispatch() noexcept {
    const FrameHeader &h = rx_hdr_;
    if (h.magic != kWireMagic || h.version != kWireVersion || h.op == 0 || h.op >= kOpLimit) {
        protocol_error("bad frame header");
        return Step::Failed;
    }
    if (const char *why = frame_too_large(h, tr_->limits())) {  // receiver's max message size
        protocol_error(why);
        return Step::Failed;
    }
    if (phase_ == Phase::AwaitAccept) {
        if (h.op != kConnAcc && h.op != kConnRej) {
            protocol_error("unexpected frame during connect");
            return Step::Failed;
        }
        if (h.length > util::kMaxPrivateData) {
            protocol_error("oversized private data");
            return Step::Failed;
        }
        rx_iov_[0] = {pdata_in_, h.length};
        rx_niov_ = 1;
        start_payload(RxDone::ConnPdata, h.length);
        return Step::Continue;
    }
    switch (h.op) {
        case kSend:
            return on_send_frame();
        case kWrite:
            return on_write_frame();
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
            teardown(DAT_CONNECTION_EVENT_DISCONNECTED, true);
            return Step::Failed;  // connection gone: stop processing
        default:
            break;
    }
    protocol_error("unexpected frame");
    return Step::Failed;
}

TcpEp::Step TcpEp::on_send_frame() noexcept {
    if (rq_head_ == rq_tail_) return Step::Stop;  // no receive posted: wait (RNR retry)
    if ((rx_hdr_.flags & kFlagAckReq) && ctrl_full()) return Step::Stop;
    std::size_t slot = rq_head_ % rq_.size();
    RecvWr &r = rq_[slot];
    if (r.status != DAT_DTO_SUCCESS || rx_hdr_.length > r.capacity) {
        // Receive buffer unusable or too small: the receive completes in error and, as
        // on an RC queue pair, the connection breaks.
        DAT_DTO_COMPLETION_STATUS st =
            r.status != DAT_DTO_SUCCESS ? r.status : DAT_DTO_ERR_LOCAL_LENGTH;
        ++rq_head_;
        util::post_dto(ep->recv_evd, ep, r.cookie, st, 0, DAT_DTO_RECEIVE);
        teardown(DAT_CONNECTION_EVENT_BROKEN, true);
        return Step::Failed;
    }
    // Scatter the message over the buffer's segments, as far as it goes.
    std::uint64_t left = rx_hdr_.length;
    rx_niov_ = 0;
    for (std::uint32_t i = 0; i < r.niov && left > 0; ++i) {
        const DAT_LMR_TRIPLET &s = rq_iov_[slot * kMaxIov + i];
        if (s.segment_length == 0) continue;
        std::uint64_t take = left < s.segment_length ? left : s.segment_length;
        rx_iov_[rx_niov_++] = {
            reinterpret_cast<void *>(static_cast<std::uintptr_t>(s.virtual_address)),
            static_cast<std::size_t>(take)};
        left -= take;
    }
    start_payload(RxDone::Recv, rx_hdr_.length);
    return Step::Continue;
}

TcpEp::Step TcpEp::on_write_frame() noexcept {
    if ((rx_hdr_.flags & kFlagAckReq) && ctrl_full()) return Step::Stop;
    // The access check comes before a single payload byte is read.
    // (AccessHold::remote: also the RMR's EP scope.)
    DAT_DTO_COMPLETION_STATUS st = util::AccessHold(ep->ia->mem)
                                       .remote(rx_hdr_.rkey, ep->pz, ep, rx_hdr_.addr,
                                               rx_hdr_.length, DAT_MEM_PRIV_REMOTE_WRITE_FLAG);
    if (st != DAT_DTO_SUCCESS) return remote_violation(st);
    rx_iov_[0] = {reinterpret_cast<void *>(static_cast<std::uintptr_t>(rx_hdr_.addr)),
                  rx_hdr_.length};
    rx_niov_ = 1;
    start_payload(RxDone::Write, rx_hdr_.length);
    return Step::Continue;
}

TcpEp::Step TcpEp::on_read_req() noexcept {
    if (rx_hdr_.length != 0) {
        protocol_error("read request with payload");
        return Step::Failed;
    }
    if (ctrl_full()) return Step::Stop;
    // (AccessHold::remote: also the RMR's EP scope.)
    DAT_DTO_COMPLETION_STATUS st = util::AccessHold(ep->ia->mem)
                                       .remote(rx_hdr_.rkey, ep->pz, ep, rx_hdr_.addr, rx_hdr_.aux,
                                               DAT_MEM_PRIV_REMOTE_READ_FLAG);
    if (st != DAT_DTO_SUCCESS) return remote_violation(st);
    FrameHeader resp = make_header(kReadResp, rx_hdr_.aux, rx_hdr_.seq);
    queue_ctrl(resp, reinterpret_cast<const void *>(static_cast<std::uintptr_t>(rx_hdr_.addr)));
    ctrl_[(ctrl_tail_ - 1) % ctrl_.size()].rkey = rx_hdr_.rkey;  // revocation barrier
    rx_ = Rx::Header;
    tx_progress();
    return fd_ ? Step::Continue : Step::Failed;
}

TcpEp::Step TcpEp::remote_violation(DAT_DTO_COMPLETION_STATUS status) noexcept {
    DAPL_TRC(trace::kInfo, "tcp", "EP %p: remote access violation (rkey 0x%x addr 0x%llx len %u)",
             static_cast<void *>(ep), rx_hdr_.rkey, static_cast<unsigned long long>(rx_hdr_.addr),
             rx_hdr_.op == kReadReq ? rx_hdr_.aux : rx_hdr_.length);
    FrameHeader nak = make_header(kNak, 0, rx_hdr_.seq);
    nak.aux = status;
    if (!queue_ctrl(nak, nullptr)) {
        teardown(DAT_CONNECTION_EVENT_BROKEN, true);
        return Step::Failed;
    }
    // Like an RC responder: nothing more is executed on this connection. Tell the
    // initiator why, then drain until it closes (closing with unread data would reset the
    // connection and could destroy the NAK in flight).
    close_after_ctrl_ = true;
    discard_all_ = true;
    rx_left_ = rx_hdr_.op == kWrite ? rx_hdr_.length : 0;
    rx_ = Rx::Discard;
    phase_ = Phase::Closing;
    arm_close_deadline(true);  // limits per peer: the drain ends in bounded time
    tx_progress();
    return fd_ ? Step::Continue : Step::Failed;
}

RequestWr *TcpEp::find_wr(std::uint32_t seq, std::uint64_t *counter) noexcept {
    // Requests awaiting replies lie in [sq_head_, sq_tx_); seq is the counter's low 32 bits.
    std::uint64_t c =
        sq_head_ + static_cast<std::uint32_t>(seq - static_cast<std::uint32_t>(sq_head_));
    if (c >= sq_tx_) return nullptr;
    *counter = c;
    return &sq_[c % sq_.size()];
}

TcpEp::Step TcpEp::on_read_resp() noexcept {
    std::uint64_t c = 0;
    RequestWr *w = find_wr(rx_hdr_.seq, &c);
    if (w == nullptr || w->dto != DAT_DTO_RDMA_READ || w->replied || rx_hdr_.length != w->total) {
        protocol_error("unmatched read response");
        return Step::Failed;
    }
    std::size_t slot = c % sq_.size();
    rx_niov_ = 0;
    for (std::uint32_t i = 0; i < w->niov; ++i) {
        const DAT_LMR_TRIPLET &s = sq_iov_[slot * kMaxIov + i];
        if (s.segment_length == 0) continue;
        rx_iov_[rx_niov_++] = {
            reinterpret_cast<void *>(static_cast<std::uintptr_t>(s.virtual_address)),
            s.segment_length};
    }
    rx_wr_ = c;
    start_payload(RxDone::ReadResp, rx_hdr_.length);
    return Step::Continue;
}

TcpEp::Step TcpEp::on_reply(bool nak) noexcept {
    std::uint64_t c = 0;
    RequestWr *w = find_wr(rx_hdr_.seq, &c);
    if (nak && rx_hdr_.length == 0 && w == nullptr) {
        // The refused request already completed (an RDMA write without delayed_ack
        // completes once TCP has the data): it cannot fail any more, so the error is
        // reported on the endpoint, which breaks as an RC queue pair would.
        DAPL_TRC(trace::kInfo, "tcp", "EP %p: peer refused completed request %u (status %u)",
                 static_cast<void *>(ep), rx_hdr_.seq, rx_hdr_.aux);
        util::post_async(ep->ia, DAT_ASYNC_ERROR_EP_BROKEN, ep);
        teardown(DAT_CONNECTION_EVENT_BROKEN, true);
        return Step::Failed;
    }
    if (rx_hdr_.length != 0 || w == nullptr ||
        (!nak && (!w->need_reply || w->dto == DAT_DTO_RDMA_READ))) {
        protocol_error("unmatched acknowledgement");
        return Step::Failed;
    }
    w->replied = true;
    rx_ = Rx::Header;
    if (!nak) return Step::Continue;
    // The target refused the access: this request fails, everything after it is flushed
    // and the connection is gone (RC semantics).
    w->status = rx_hdr_.aux == DAT_DTO_ERR_REMOTE_ACCESS ? DAT_DTO_ERR_REMOTE_ACCESS
                                                         : DAT_DTO_ERR_REMOTE_RESPONDER;
    w->need_reply = false;
    teardown(DAT_CONNECTION_EVENT_BROKEN, true);
    return Step::Failed;
}

TcpEp::Step TcpEp::rx_payload_done() noexcept {
    rx_ = Rx::Header;
    switch (rx_done_) {
        case RxDone::Recv: {
            RecvWr &r = rq_[rq_head_ % rq_.size()];
            ++rq_head_;
            util::post_dto(ep->recv_evd, ep, r.cookie, DAT_DTO_SUCCESS,
                           static_cast<DAT_COUNT>(rx_hdr_.length), DAT_DTO_RECEIVE);
            break;
        }
        case RxDone::Write:
            break;
        case RxDone::ReadResp:
            sq_[rx_wr_ % sq_.size()].replied = true;
            break;
        case RxDone::ConnPdata:
            if (rx_hdr_.op == kConnAcc) {
                phase_ = Phase::Connected;
                if (ticking_) {
                    tr_->engine().want_ticks(this, false);
                    ticking_ = false;
                }
                util::ep_established(ep, static_cast<DAT_COUNT>(rx_hdr_.length), pdata_in_);
            } else {
                // Rejected by the peer application: report it with its private data.
                teardown(DAT_CONNECTION_EVENT_PEER_REJECTED, true,
                         static_cast<DAT_COUNT>(rx_hdr_.length), pdata_in_);
                return Step::Failed;
            }
            break;
        case RxDone::None:
            break;
    }
    if ((rx_done_ == RxDone::Recv || rx_done_ == RxDone::Write) && (rx_hdr_.flags & kFlagAckReq)) {
        // Placed in memory: acknowledge (delayed_ack). Space was checked before reading.
        queue_ctrl(make_header(kAck, 0, rx_hdr_.seq), nullptr);
        tx_progress();
        if (!fd_) return Step::Failed;
    }
    rx_done_ = RxDone::None;
    return Step::Continue;
}

}  // namespace opendat::tcp

// TcpEp: the revocation barrier on the data path (util/access_guard.hpp). Every chunk of
// a payload that moves into or out of registered memory is moved under an AccessHold
// after these re-checks; a transfer whose memory was revoked meanwhile ends the connection.
#include "tcp/ep.hpp"
#include "trace/trace.hpp"
#include "util/access_guard.hpp"

namespace opendat::tcp {

[[gnu::hot]] bool TcpEp::rx_target_alive(const util::AccessHold &h) noexcept {
    switch (rx_.done) {
        case RxState::Done::Recv: {
            const RecvWr &r = rq_[rq_slot(rq_head_)];
            return h.local(r.seg, r.niov, ep->pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &recv_check_) ==
                   DAT_DTO_SUCCESS;
        }
        case RxState::Done::ReadResp: {
            std::size_t slot = sq_slot(rx_.wr);
            return h.local(&sq_iov_[slot * kMaxIov], sq_[slot].niov, ep->pz,
                           DAT_MEM_PRIV_LOCAL_WRITE_FLAG) == DAT_DTO_SUCCESS;
        }
        case RxState::Done::Write:
        case RxState::Done::WriteImm:
            return h.remote(rx_.hdr.rkey, ep->pz, ep, rx_.hdr.addr, rx_.hdr.length,
                            DAT_MEM_PRIV_REMOTE_WRITE_FLAG) == DAT_DTO_SUCCESS;
        case RxState::Done::ConnPdata:
        case RxState::Done::None:
            break;
    }
    return true;  // provider memory
}

// Called only when needs_hold(src, idx): the frame's bytes come from registered memory.
// `idx` is the frame's control-ring or request-ring counter.
[[gnu::hot]] bool TcpEp::source_alive(const util::AccessHold &h, TxSrc src,
                                      std::uint64_t idx) noexcept {
    if (src == TxSrc::Ctrl) {
        const CtrlFrame &c = ctrl_[idx % ctrl_.size()];
        return h.remote(c.rkey, ep->pz, ep, reinterpret_cast<std::uintptr_t>(c.data), c.hdr.length,
                        DAT_MEM_PRIV_REMOTE_READ_FLAG) == DAT_DTO_SUCCESS;
    }
    const std::size_t slot = sq_slot(idx);
    return h.local(&sq_iov_[slot * kMaxIov], sq_[slot].niov, ep->pz, DAT_MEM_PRIV_NONE_FLAG,
                   &request_check_) == DAT_DTO_SUCCESS;
}

// The one rule for which frames carry registered memory: a read response (a control frame
// with the key it was checked under) and a request with a payload (not READ_REQ or
// ATOMIC_REQ, whose operands travel in the header).
[[gnu::hot]] bool TcpEp::needs_hold(TxSrc src, std::uint64_t idx) const noexcept {
    switch (src) {
        case TxSrc::Ctrl: {
            const CtrlFrame &c = ctrl_[idx % ctrl_.size()];
            return c.rkey != 0 && c.hdr.length != 0;
        }
        case TxSrc::Request: {
            const std::uint8_t op = sq_[sq_slot(idx)].hdr.op;
            return op != kReadReq && op != kAtomicReq;
        }
        default:
            return false;
    }
}

void TcpEp::access_revoked(bool receiving) noexcept {
    DAPL_TRC(trace::kInfo, "tcp",
             "EP %p: the memory of a transfer %s it is not registered (never, or no longer): "
             "connection broken",
             static_cast<void *>(ep), receiving ? "into" : "from");
    if (receiving) {
        if (rx_.done == RxState::Done::Recv) {
            RecvWr &r = rq_[rq_slot(rq_head_)];
            ++rq_head_;
            util::post_dto(ep->recv_evd, ep, r.cookie, DAT_DTO_ERR_LOCAL_PROTECTION, 0,
                           DAT_DTO_RECEIVE);
            srq_recvs_done(1);  // an SRQ's receive: completed, so no longer taken
        } else if (rx_.done == RxState::Done::ReadResp) {
            sq_[sq_slot(rx_.wr)].status = DAT_DTO_ERR_LOCAL_PROTECTION;
        }
    } else if (tx_src_ == TxSrc::Request) {
        sq_[sq_slot(sq_tx_)].status = DAT_DTO_ERR_LOCAL_PROTECTION;
    }
    rx_.done = RxState::Done::None;
    // Receiving: the round's answers read other memory, each re-checked as it is sent.
    if (receiving)
        rx_teardown(DAT_CONNECTION_EVENT_BROKEN);
    else
        teardown(DAT_CONNECTION_EVENT_BROKEN, true);
}

}  // namespace opendat::tcp

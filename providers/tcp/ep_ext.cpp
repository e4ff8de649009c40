// TcpEp: the IB extensions on the wire (docs/tcp-provider.md, "IB extensions").
//
// WRITE_IMM is a WRITE that then consumes the target's next posted receive, which
// completes as DAT_IB_DTO_EVENT / DAT_IB_RDMA_WRITE_IMMED_DATA with the immediate data;
// it waits for a posted receive before its payload is read, exactly like a SEND, so it
// stays in order with the other traffic of the connection.
//
// ATOMIC_REQ is executed by the target's progress engine on the target word with
// std::atomic_ref, under the revocation barrier's hold: atomic with respect to every other
// atomic on that word (any connection, any initiator) and to the application's own atomic
// read-modify-writes of it; ATOMIC_RESP carries the original value back, which the
// initiator writes to its local 8-byte triplet before the request completes.
#include <atomic>
#include <cstring>

#include "tcp/ep.hpp"
#include "tcp/transport.hpp"
#include "trace/trace.hpp"
#include "util/access_guard.hpp"
#include "util/extension.hpp"

namespace opendat::tcp {

// The capability the request needs must have been agreed with this peer; then the
// request's own operands are recorded. False: the peer cannot execute it.
bool TcpEp::ext_request(RequestWr &w, const ExtArgs &x) noexcept {
    const std::uint32_t cap = x.immed_op ? kCapImmediate : kCapAtomics;
    if ((wire_.caps & cap) == 0) {
        DAPL_TRC(trace::kWarn, "tcp", "EP %p: the peer did not agree to %s: request refused",
                 static_cast<void *>(ep), x.immed_op ? "immediate data" : "atomics");
        return false;
    }
    w.hdr_ext[0] = x.operand[0];
    w.hdr_ext[1] = x.operand[1];
    return true;
}

[[gnu::hot]] DAT_EVENT TcpEp::request_completion(const RequestWr &w,
                                                 DAT_DTO_COMPLETION_STATUS st) noexcept {
    const auto len = static_cast<DAT_COUNT>(st == DAT_DTO_SUCCESS ? w.total : 0);
    switch (w.hdr.op) {
        case kWriteImm:
            return util::ext_dto_event(ep, w.cookie, st, len, w.dto, DAT_IB_RDMA_WRITE_IMMED);
        case kAtomicReq:
            return util::ext_dto_event(
                ep, w.cookie, st, len, w.dto,
                w.hdr.aux == kAtomicCmpSwap ? DAT_IB_CMP_AND_SWAP : DAT_IB_FETCH_AND_ADD);
        default:
            return util::dto_event(ep, w.cookie, st, len, w.dto);
    }
}

void TcpEp::post_request_completion(const RequestWr &w, DAT_DTO_COMPLETION_STATUS st) noexcept {
    // A request's completion ends a solicited-only wait only when it failed (post_dto).
    if (ep->request_evd != nullptr)
        util::post_dto_event(ep->request_evd, ep, request_completion(w, st), st != DAT_DTO_SUCCESS);
}

TcpEp::Step TcpEp::on_write_imm_frame() noexcept {
    // The immediate data needs a receive: none posted (or none left in the SRQ), wait, as
    // for a SEND.
    if (rq_head_ == rq_tail_ && (ep->srq == nullptr || !take_srq_recv())) return Step::Stop;
    return expect_remote_write(RxState::Done::WriteImm);
}

// The data of a WRITE_IMM is placed: the receive it consumes completes (its buffer is
// not written, as with an InfiniBand write with immediate).
void TcpEp::write_imm_placed() noexcept {
    RecvWr &r = rq_[rq_slot(rq_head_)];
    ++rq_head_;
    util::post_ext_dto(ep->recv_evd, ep, r.cookie, DAT_DTO_SUCCESS,
                       static_cast<DAT_COUNT>(rx_.hdr.length),
                       static_cast<DAT_DTOS>(DAT_IB_DTO_RECV_IMMED), DAT_IB_RDMA_WRITE_IMMED_DATA,
                       rx_.hdr.aux, rx_solicited());
    srq_recvs_done(1);
}

TcpEp::Step TcpEp::on_atomic_req() noexcept {
    const FrameHeader &h = rx_.hdr;
    // Hostile peer: no payload, a known operation, and the 16 operand bytes present.
    if (h.length != 0 || (h.aux != kAtomicFetchAdd && h.aux != kAtomicCmpSwap) ||
        extension_bytes(h, wire_.version) < static_cast<long>(kAtomicExtension)) {
        protocol_error("malformed atomic request");
        return Step::Failed;
    }
    if (ctrl_full()) return Step::Stop;  // the response needs a control slot
    std::uint64_t operand[2];
    std::memcpy(operand, rx_.ext, sizeof operand);
    std::uint64_t original = 0;
    DAT_DTO_COMPLETION_STATUS st;
    {
        // Checked and executed under one hold: a revocation cannot slip in between.
        util::AccessHold hold(ep->ia->mem);
        st =
            hold.remote(h.rkey, ep->pz, ep, h.addr, sizeof(std::uint64_t), util::kPrivRemoteAtomic);
        if (st == DAT_DTO_SUCCESS && h.addr % alignof(std::uint64_t) != 0)
            st = DAT_DTO_ERR_REMOTE_ACCESS;
        if (st == DAT_DTO_SUCCESS) {
            std::atomic_ref<std::uint64_t> word(
                *reinterpret_cast<std::uint64_t *>(static_cast<std::uintptr_t>(h.addr)));
            if (h.aux == kAtomicFetchAdd) {
                original = word.fetch_add(operand[0], std::memory_order_acq_rel);
            } else {
                original = operand[0];
                word.compare_exchange_strong(original, operand[1], std::memory_order_acq_rel);
            }
        }
    }
    if (st != DAT_DTO_SUCCESS) return remote_violation(st);
    FrameHeader resp = frame(kAtomicResp, 0, h.seq);
    resp.addr = original;
    queue_ctrl(resp, nullptr);
    rx_.next_frame();
    return Step::Continue;  // sent after the round (rx_progress)
}

TcpEp::Step TcpEp::on_atomic_resp() noexcept {
    std::uint64_t c = 0;
    RequestWr *w = find_wr(rx_.hdr.seq, &c);
    if (rx_.hdr.length != 0 || w == nullptr || w->hdr.op != kAtomicReq || w->replied) {
        protocol_error("unmatched atomic response");
        return Step::Failed;
    }
    const DAT_LMR_TRIPLET &local = sq_iov_[sq_slot(c) * kMaxIov];
    const std::uint64_t original = rx_.hdr.addr;
    bool alive;
    {
        // Revocation barrier: the local buffer is re-checked as it is written.
        util::AccessHold hold(ep->ia->mem);
        alive = hold.local(&local, 1, ep->pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG) == DAT_DTO_SUCCESS;
        if (alive)
            std::memcpy(
                reinterpret_cast<void *>(static_cast<std::uintptr_t>(local.virtual_address)),
                &original, sizeof original);
    }
    w->replied = true;
    rx_.next_frame();
    if (alive) return Step::Continue;
    DAPL_TRC(trace::kInfo, "tcp", "EP %p: atomic result buffer revoked: connection broken",
             static_cast<void *>(ep));
    w->status = DAT_DTO_ERR_LOCAL_PROTECTION;
    rx_teardown(DAT_CONNECTION_EVENT_BROKEN);
    return Step::Failed;
}

}  // namespace opendat::tcp

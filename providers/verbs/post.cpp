// The data path: DAT post calls become work requests on the EP's queue pair, in the
// caller's thread. Nothing here allocates or locks: the work request and its
// scatter/gather list are on the stack, lmr_context/rmr_context are the MR's lkey/rkey
// (the device checks them), and the completion context is a slot of a ring sized at
// ep_create.
#include <cerrno>

#include <dat2/dat_ib_extensions.h>

#include "util/objects.hpp"
#include "verbs/cq_evd.hpp"
#include "verbs/transport.hpp"

namespace opendat::verbs {

namespace {

DAT_RETURN post_error(util::Ep *ep, int rc) noexcept {
    if (rc == ENOMEM) return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    std::lock_guard lk(ep->mu);
    if (ep->state != DAT_EP_STATE_CONNECTED)
        return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
    return util::err(DAT_INVALID_PARAMETER);
}

// What an IB extension request adds to a work request.
struct Extension {
    DAT_IB_EXT_TYPE type;
    std::uint32_t immed = 0;        // RDMA write with immediate
    std::uint64_t compare_add = 0;  // atomics: the compare value or the addend
    std::uint64_t swap = 0;         // compare-and-swap: the new value
};

DAT_RETURN post_request(util::Ep *ep, ibv_wr_opcode opcode, DAT_DTOS op, DAT_COUNT n,
                        const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                        const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags,
                        const Extension *x = nullptr) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    ibv_qp *const qp = impl->qp.get();  // read once: a dat_ep_modify may replace it
    if (qp == nullptr) return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED);
    ibv_sge sge[kMaxSge];
    int nsge = 0;
    std::uint64_t total = 0;
    if (!build_sges(n, iov, sge, &nsge, &total)) return util::err(DAT_LENGTH_ERROR);
    WrSlot *slot = impl->sq.next();
    slot->cookie = cookie;
    slot->length = static_cast<std::uint32_t>(total);
    slot->op = op;
    // A suppressed request is posted unsignalled: the device produces no completion for
    // it unless it fails (DAT: suppressed completions are only the successful ones). The
    // next signalled request's completion retires it (sq_sig_all is 0, ep_create).
    const bool signalled =
        (flags & (DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG)) == 0;
    slot->suppress = !signalled;
    slot->rmr = nullptr;
    slot->ext = x != nullptr ? static_cast<std::int8_t>(x->type) : std::int8_t{-1};
    ibv_send_wr wr{};
    wr.wr_id = reinterpret_cast<std::uintptr_t>(slot);
    wr.sg_list = sge;
    wr.num_sge = nsge;
    wr.opcode = opcode;
    if (signalled) {
        wr.send_flags = IBV_SEND_SIGNALED;
        slot->retires = 1 + impl->sq.unsignalled.exchange(0, std::memory_order_relaxed);
    } else {
        impl->sq.unsignalled.fetch_add(1, std::memory_order_relaxed);
        slot->retires = 1;  // only if it fails: then it reports itself
    }
    if (flags & DAT_COMPLETION_BARRIER_FENCE_FLAG) wr.send_flags |= IBV_SEND_FENCE;
    if (flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) wr.send_flags |= IBV_SEND_SOLICITED;
    const bool atomic =
        opcode == IBV_WR_ATOMIC_CMP_AND_SWP || opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
    if (opcode != IBV_WR_RDMA_READ && !atomic && total <= impl->max_inline &&
        nsge > 0)  // opt-in, see ep_create
        wr.send_flags |= IBV_SEND_INLINE;
    if (atomic) {
        wr.wr.atomic.remote_addr = remote->virtual_address;
        wr.wr.atomic.rkey = remote->rmr_context;
        wr.wr.atomic.compare_add = x->compare_add;
        wr.wr.atomic.swap = x->swap;
    } else if (remote != nullptr) {
        wr.wr.rdma.remote_addr = remote->virtual_address;
        wr.wr.rdma.rkey = remote->rmr_context;
    }
    // The immediate goes into the work request as the value itself, without a byte swap,
    // as the reference's provider does (and reads it back): a peer running either sees
    // the value the sender posted.
    if (opcode == IBV_WR_RDMA_WRITE_WITH_IMM) wr.imm_data = x->immed;
    impl->sq.outstanding.fetch_add(1, std::memory_order_relaxed);
    ibv_send_wr *bad = nullptr;
    if (int rc = ibv_post_send(qp, &wr, &bad); rc != 0) {
        impl->sq.outstanding.fetch_sub(1, std::memory_order_relaxed);
        return post_error(ep, rc);
    }
    return DAT_SUCCESS;
}

}  // namespace

DAT_RETURN VerbsTransport::ep_post_send(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                        DAT_DTO_COOKIE cookie,
                                        DAT_COMPLETION_FLAGS flags) noexcept {
    return post_request(ep, IBV_WR_SEND, DAT_DTO_SEND, n, iov, cookie, nullptr, flags);
}

DAT_RETURN VerbsTransport::ep_post_rdma_write(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                              DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                              DAT_COMPLETION_FLAGS flags) noexcept {
    return post_request(ep, IBV_WR_RDMA_WRITE, DAT_DTO_RDMA_WRITE, n, iov, cookie, remote, flags);
}

DAT_RETURN VerbsTransport::ep_post_rdma_read(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                             DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                             DAT_COMPLETION_FLAGS flags) noexcept {
    return post_request(ep, IBV_WR_RDMA_READ, DAT_DTO_RDMA_READ, n, iov, cookie, remote, flags);
}

DAT_RETURN VerbsTransport::ep_post_write_immed(util::Ep *ep, DAT_COUNT n,
                                               const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                                               const DAT_RMR_TRIPLET *remote, std::uint32_t immed,
                                               DAT_COMPLETION_FLAGS flags) noexcept {
    Extension x{DAT_IB_RDMA_WRITE_IMMED};
    x.immed = immed;
    return post_request(ep, IBV_WR_RDMA_WRITE_WITH_IMM,
                        static_cast<DAT_DTOS>(DAT_IB_DTO_RDMA_WRITE_IMMED), n, iov, cookie, remote,
                        flags, &x);
}

DAT_RETURN VerbsTransport::ep_post_atomic(util::Ep *ep, util::AtomicOp op,
                                          std::uint64_t add_or_compare, std::uint64_t swap,
                                          const DAT_LMR_TRIPLET *local, DAT_DTO_COOKIE cookie,
                                          const DAT_RMR_TRIPLET *remote,
                                          DAT_COMPLETION_FLAGS flags) noexcept {
    // A device without atomics (atomic_cap NONE) has no atomic work request: util turns
    // this into DAT_NOT_IMPLEMENTED with a trace line, and the IA does not advertise them.
    if (!limits_.atomics) return util::kNotImplemented;
    const bool cas = op == util::AtomicOp::CmpSwap;
    Extension x{cas ? DAT_IB_CMP_AND_SWAP : DAT_IB_FETCH_AND_ADD};
    x.compare_add = add_or_compare;
    x.swap = swap;
    // The original value is 8 bytes: the local segment is exactly that (util checked it
    // has at least 8).
    DAT_LMR_TRIPLET eight = *local;
    eight.segment_length = sizeof(std::uint64_t);
    return post_request(ep, cas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD,
                        static_cast<DAT_DTOS>(cas ? DAT_IB_DTO_CMP_SWAP : DAT_IB_DTO_FETCH_ADD), 1,
                        &eight, cookie, remote, flags, &x);
}

DAT_RETURN VerbsTransport::ep_post_recv(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                        DAT_DTO_COOKIE cookie,
                                        DAT_COMPLETION_FLAGS flags) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    ibv_qp *const qp = impl->qp.get();  // read once: a dat_ep_modify may replace it
    if (qp == nullptr) return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED);
    ibv_sge sge[kMaxSge];
    int nsge = 0;
    std::uint64_t total = 0;
    if (!build_sges(n, iov, sge, &nsge, &total)) return util::err(DAT_LENGTH_ERROR);
    // A receive posted for solicited notification: the receive EVD's waiters then arm
    // the CQ for solicited completions only (as the EP attribute does, ep_create).
    if ((flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) && ep->recv_evd != nullptr)
        if (CqEvd *cq = as_cq_evd(ep->recv_evd); cq != nullptr) cq->set_solicited_only();
    WrSlot *slot = impl->rq.next();
    slot->cookie = cookie;
    slot->length = static_cast<std::uint32_t>(total);
    slot->op = DAT_DTO_RECEIVE;
    slot->suppress = false;
    slot->retires = 1;
    slot->ext = -1;
    ibv_recv_wr wr{};
    wr.wr_id = reinterpret_cast<std::uintptr_t>(slot);
    wr.sg_list = sge;
    wr.num_sge = nsge;
    impl->rq.outstanding.fetch_add(1, std::memory_order_relaxed);
    ibv_recv_wr *bad = nullptr;
    if (int rc = ibv_post_recv(qp, &wr, &bad); rc != 0) {
        impl->rq.outstanding.fetch_sub(1, std::memory_order_relaxed);
        return post_error(ep, rc);
    }
    return DAT_SUCCESS;
}

}  // namespace opendat::verbs

// The software shared receive queue: the ring, posting, taking and the low watermark.
#include "util/srq.hpp"

#include <algorithm>
#include <cstring>

#include "trace/trace.hpp"
#include "util/objects.hpp"

namespace opendat::util {

void SrqRing::reshape(std::size_t capacity, std::size_t max_iov) {
    if (capacity == 0) capacity = 1;
    if (max_iov == 0) max_iov = 1;
    std::vector<SrqRecv> slots(capacity);
    std::vector<DAT_LMR_TRIPLET> iov(capacity * max_iov);
    // Keep what is posted, oldest first, at the start of the new ring.
    std::uint64_t n = 0;
    for (std::uint64_t c = head_; c != tail_; ++c, ++n) {
        const std::size_t from = static_cast<std::size_t>(c % slots_.size());
        slots[n] = slots_[from];
        std::copy_n(&iov_[from * stride_], slots_[from].niov, &iov[n * max_iov]);
    }
    slots_ = std::move(slots);
    iov_ = std::move(iov);
    stride_ = max_iov;
    head_ = 0;
    tail_ = n;
}

SrqRing::Stored SrqRing::push(const SrqRecv &r, const DAT_LMR_TRIPLET *iov) noexcept {
    const std::size_t slot = static_cast<std::size_t>(tail_ % slots_.size());
    slots_[slot] = r;
    DAT_LMR_TRIPLET *mine = &iov_[slot * stride_];
    if (r.niov > 0) std::memcpy(mine, iov, sizeof(DAT_LMR_TRIPLET) * r.niov);
    ++tail_;
    return {slots_[slot], mine};
}

bool SrqRing::pop(SrqRecv *r, DAT_LMR_TRIPLET *iov) noexcept {
    if (head_ == tail_) return false;
    const std::size_t slot = static_cast<std::size_t>(head_ % slots_.size());
    *r = slots_[slot];
    if (r->niov > 0) std::memcpy(iov, &iov_[slot * stride_], sizeof(DAT_LMR_TRIPLET) * r->niov);
    ++head_;
    return true;
}

DAT_RETURN srq_post_locked(Srq *srq, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                           DAT_DTO_COOKIE cookie) noexcept {
    if (srq->state != DAT_SRQ_STATE_OPERATIONAL)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_ERROR);
    if (srq->ring.full()) return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
    SrqRecv r;
    r.cookie = cookie;
    r.niov = static_cast<std::uint32_t>(n);
    // Stored first, and the stored copy checked: what a message lands in is what passed.
    SrqRing::Stored s = srq->ring.push(r, iov);
    s.recv.status =
        srq->ia->mem.check_iov(s.iov, n, srq->pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &s.recv.capacity);
    return DAT_SUCCESS;
}

bool srq_take_locked(Srq *srq, SrqRecv *r, DAT_LMR_TRIPLET *iov) noexcept {
    if (!srq->ring.pop(r, iov)) return false;
    srq->taken.fetch_add(1, std::memory_order_relaxed);
    const auto available = static_cast<DAT_COUNT>(srq->ring.size());
    if (srq->lw_armed && available < srq->low_watermark) {
        // The DAT 2.0 event numbers have no SRQ-specific one: the SRQ's asynchronous event
        // is the generic asynchronous error carrying the SRQ handle and the reason
        // DAT_SRQ_LOW_WATERMARK_EVENT (docs/provider-guide.md, "Shared receive queues").
        srq->lw_armed = false;
        DAPL_TRC(trace::kInfo, "srq", "SRQ %p: %d receives left, below the low watermark %d",
                 static_cast<void *>(srq), available, srq->low_watermark);
        post_async(srq->ia, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, srq,
                   DAT_SRQ_LOW_WATERMARK_EVENT);
    }
    return true;
}

void srq_completed(Srq *srq, DAT_COUNT n) noexcept {
    srq->taken.fetch_sub(n, std::memory_order_relaxed);
}

DAT_RETURN Transport::srq_post_recv(Srq *srq, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                    DAT_DTO_COOKIE cookie) noexcept {
    std::lock_guard lk(srq->mu);
    return srq_post_locked(srq, n, iov, cookie);
}

}  // namespace opendat::util

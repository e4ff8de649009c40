// A shared receive queue: one ring of posted receives that several endpoints draw from.
//
// util owns the DAT side (handle, PZ, attributes, the use count of the EPs attached, the
// low watermark and its asynchronous event) and a software ring that is the default
// receive queue (what the tcp provider uses). Every ring operation runs under Srq::mu; an
// endpoint takes a receive when a message arrives (srq_take_locked) and gives the slot
// back when the receive completes (srq_completed), so the SRQ can report what is still
// available and what is outstanding. The ring is sized by dat_srq_create/dat_srq_resize;
// posting and taking never allocate.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "util/memory.hpp"
#include "util/object.hpp"
#include "util/use_count.hpp"

namespace opendat::util {

// One posted receive: the consumer's cookie and where its segments are (the segments
// themselves live in SrqRing's segment array, `niov` of them at the slot's stride).
struct SrqRecv {
    DAT_DTO_COOKIE cookie{};
    std::uint32_t niov = 0;
    std::uint64_t capacity = 0;  // bytes the segments cover
    // Checked against the SRQ's PZ when posted: a bad buffer completes in error when an
    // endpoint takes it, as an EP's own receive does.
    DAT_DTO_COMPLETION_STATUS status = DAT_DTO_SUCCESS;
};

// FIFO of posted receives with a fixed capacity; not thread-safe (Srq::mu guards it).
class SrqRing {
  public:
    // (Re)sizes for `capacity` receives of up to `max_iov` segments, keeping what is
    // posted (the caller checked that it fits). May throw bad_alloc.
    void reshape(std::size_t capacity, std::size_t max_iov);
    std::size_t size() const noexcept { return static_cast<std::size_t>(tail_ - head_); }
    std::size_t capacity() const noexcept { return slots_.size(); }
    bool full() const noexcept { return size() == capacity(); }
    // Appends (the caller checked !full() and n <= max_iov). Returns the stored receive and
    // its stored IOV: a post checks that copy, not the caller's array, which may change
    // once it is read.
    struct Stored {
        SrqRecv &recv;
        const DAT_LMR_TRIPLET *iov;
    };
    Stored push(const SrqRecv &r, const DAT_LMR_TRIPLET *iov) noexcept;
    // Removes the oldest into *r and iov (room for r->niov segments); false when empty.
    bool pop(SrqRecv *r, DAT_LMR_TRIPLET *iov) noexcept;

  private:
    std::vector<SrqRecv> slots_;
    std::vector<DAT_LMR_TRIPLET> iov_;  // stride_ segments per slot
    std::size_t stride_ = 1;
    std::uint64_t head_ = 0, tail_ = 0;  // counters grow forever; slot = counter % capacity
};

struct Srq : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_SRQ;
    Srq(const DAT_PROVIDER *p, Ia *ia) : Header(p, kType, ia) {}

    Pz *pz = nullptr;
    UseCount users;  // endpoints created with this SRQ and not yet freed

    std::mutex mu;  // guards everything below (and the transport's waiter list, if any)
    DAT_SRQ_STATE state = DAT_SRQ_STATE_OPERATIONAL;
    DAT_COUNT max_recv_dtos = 0;
    DAT_COUNT max_recv_iov = 0;
    DAT_COUNT low_watermark = 0;  // 0 (DAT_SRQ_LW_DEFAULT): no event
    bool lw_armed = false;        // the event fires once per dat_srq_set_lw
    SrqRing ring;
    // Taken by endpoints, not yet completed. Atomic: a completion gives its receive back
    // without the lock (srq_completed runs on the receive path), queries read it under it.
    std::atomic<DAT_COUNT> taken{0};

    void *impl = nullptr;  // the transport's per-SRQ state
};

// --- The software ring, for a transport that uses it (tcp) ---------------------------
// dat_srq_post_recv's work with srq->mu held: checks the buffer against the SRQ's PZ and
// appends it. DAT_INSUFFICIENT_RESOURCES | DAT_RESOURCE_SRQ when the ring is full.
DAT_RETURN srq_post_locked(Srq *srq, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                           DAT_DTO_COOKIE cookie) noexcept;
// An endpoint needs a receive (srq->mu held): the oldest posted one, or false when none is
// posted. Leaving fewer than the armed low watermark available posts the SRQ's
// low-watermark asynchronous event (see srq.cpp) and disarms it.
bool srq_take_locked(Srq *srq, SrqRecv *r, DAT_LMR_TRIPLET *iov) noexcept;
// `n` receives an endpoint took have completed (successfully, in error or flushed).
void srq_completed(Srq *srq, DAT_COUNT n) noexcept;

}  // namespace opendat::util

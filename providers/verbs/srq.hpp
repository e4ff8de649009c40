// Shared receive queues on the verbs provider: an ibv_srq per DAT SRQ.
//
// The device holds the posted receives and hands them to whichever queue pair a message
// arrives on; the work completion comes on that EP's receive CQ and names its queue pair
// by number only, so the SRQ keeps which of its EPs has which qp_num. util's software
// ring (util/srq.hpp) mirrors the receives that are posted and not yet completed: it
// refuses a post beyond max_recv_dtos, answers dat_srq_query's counts, and raises the
// low-watermark event when a completion leaves fewer than the watermark (util's own
// rule, so both providers report it alike).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "util/srq.hpp"
#include "verbs/ep_impl.hpp"

namespace opendat::verbs {

struct SrqImpl {
    // util's SRQ, until dat_srq_free: this SrqImpl outlives it (completions still in a CQ
    // name its slots) and must not touch it after. Guarded by live_mu.
    std::mutex live_mu;
    util::Srq *srq = nullptr;
    ibv_srq *dev = nullptr;
    std::uint32_t max_wr = 0;         // what the device queue holds now
    std::unique_ptr<WrSlot[]> slots;  // twice max_wr, used round-robin, as SlotRing
    std::uint32_t mask = 0;
    std::uint32_t head = 0;  // under srq->mu
    // Rings replaced by a resize: receives posted before it still name their slots.
    std::vector<std::unique_ptr<WrSlot[]>> old_slots;

    std::mutex eps_mu;  // the EPs attached, by queue pair number
    std::unordered_map<std::uint32_t, EpImpl *> eps;

    EpImpl *owner_of(std::uint32_t qp_num) noexcept;
    // (Re)makes the slot ring for `max_wr` receives; false when out of memory.
    bool size_slots(std::uint32_t max_wr) noexcept;
};

inline SrqImpl *srq_impl(const util::Srq *s) noexcept {
    return static_cast<SrqImpl *>(s->impl);
}

// An SRQ receive completed on one of its EPs (cq_evd.cpp): util's mirror gives the slot
// back (and may raise the low-watermark event).
void srq_receive_done(SrqImpl *s) noexcept;

}  // namespace opendat::verbs

// Per-object state the verbs transport keeps behind util's EP, PSP/RSP and CR objects.
//
// Every rdma_cm id carries one of these as its context; `kind` says which, so the CM
// thread can dispatch an event without a lookup table.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "util/objects.hpp"
#include "verbs/raii.hpp"

namespace opendat::verbs {

class VerbsTransport;
struct EpImpl;
struct SrqImpl;

// Scatter/gather entries per work request we build on the stack (post paths allocate nothing).
constexpr int kMaxSge = 32;

// Builds the SGE list; zero-length segments carry no memory and are skipped.
inline bool build_sges(DAT_COUNT n, const DAT_LMR_TRIPLET *iov, ibv_sge *sge, int *nsge,
                       std::uint64_t *total) noexcept {
    if (n > kMaxSge) return false;
    int k = 0;
    std::uint64_t sum = 0;
    for (DAT_COUNT i = 0; i < n; ++i) {
        if (iov[i].segment_length == 0) continue;
        sge[k].addr = iov[i].virtual_address;
        sge[k].length = iov[i].segment_length;
        sge[k].lkey = iov[i].lmr_context;
        sum += iov[i].segment_length;
        ++k;
    }
    *nsge = k;
    *total = sum;
    return true;
}

enum class CmKind : std::uint8_t { Ep, Sp, Cr };

struct CmCtx {
    explicit CmCtx(CmKind k) : kind(k) {}
    const CmKind kind;
};

// What a work completion must be turned back into: wr_id points at one of these. They
// live in fixed rings sized at ep_create, so posting allocates nothing.
struct WrSlot {
    EpImpl *owner = nullptr;
    DAT_DTO_COOKIE cookie{};
    std::uint32_t length = 0;    // bytes posted (work completions give it only for receives)
    DAT_DTOS op = DAT_DTO_SEND;  // or a DAT_IB_DTOS value (IB extension requests)
    // IB extension requests: their DAT_IB_EXT_TYPE (the completion is a DAT_IB_DTO_EVENT);
    // -1 for the base operations.
    std::int8_t ext = -1;
    bool suppress = false;  // DAT_COMPLETION_SUPPRESS_FLAG: no event on success
    // Send queue: how many requests this one's completion retires, itself and the
    // unsignalled ones posted before it since the previous signalled one (their
    // completions never appear: a signalled completion means all before it are done).
    std::uint32_t retires = 1;
    bool recv = false;            // in the receive ring (for the outstanding count)
    util::Header *rmr = nullptr;  // DAT_DTO_BIND_MW: the RMR being bound
    // A receive posted to a shared receive queue (srq.hpp): `owner` is unknown until the
    // completion names the queue pair that took it.
    SrqImpl *srq = nullptr;
    // Which connection of its EP the request was posted on (EpImpl::connection): a
    // failure of one that has ended is not the current connection's.
    std::uint32_t connection = 0;
};

// A ring of slots used round-robin. It is twice the queue pair's capacity so that a slot
// is reused only long after its completion was generated (DAT forbids more than
// max_*_dtos outstanding, so its completion has been dequeued by then).
struct SlotRing {
    std::unique_ptr<WrSlot[]> slots;
    std::uint32_t mask = 0;
    std::atomic<std::uint32_t> head{0};
    std::atomic<int> outstanding{0};  // posted, completion not yet polled (dat_ep_get_status)
    // Send queue: unsignalled requests posted since the last signalled one.
    std::atomic<std::uint32_t> unsignalled{0};

    void init(EpImpl *owner, std::uint32_t capacity, bool recv);
    // The next slot, stamped with its EP's current connection (EpImpl::connection).
    WrSlot *next() noexcept;
};

struct EpImpl : CmCtx {
    EpImpl(VerbsTransport *t, util::Ep *e) : CmCtx(CmKind::Ep), tr(t), ep(e) {}

    VerbsTransport *const tr;
    util::Ep *const ep;
    // Order matters: the id (if any) goes after the queue pair it drives.
    IdPtr id;  // the connection's rdma_cm id (active: ours; passive: the request's)
    QpPtr qp;  // created with ibv_create_qp; rdma_cm never owns it, we move its states
    SlotRing sq, rq;
    SrqImpl *srq = nullptr;  // dat_ep_create_with_srq: its receives come from there
    std::uint32_t max_inline = 0;
    std::atomic<bool> dead{false};  // dat_ep_free'd: completions still in a CQ are dropped
    // Counts the connections the queue pair has served: dat_ep_reset starts the next. A
    // request's slot keeps the count it was posted under, so a failed completion of an
    // ended connection, polled after the EP connected again, does not break the new one.
    std::atomic<std::uint32_t> connection{0};
    // When the pending dat_ep_connect gives up (steady clock, ms); 0 = never. Written by
    // ep_connect under ep->mu; the CM thread compares it with the deadline it queued, so a
    // deadline of an earlier attempt never ends a later one (connect_timer.cpp).
    std::atomic<std::int64_t> deadline_ms{0};

    // Guarded by ep->mu.
    bool active = false;
    bool disconnect_sent = false;
    int timeout_ms = 2000;
    std::uint8_t pdata_len = 0;
    unsigned char
        pdata[56]{};  // connect private data (with our header) until the route is resolved
};

inline WrSlot *SlotRing::next() noexcept {
    WrSlot *slot = &slots[head.fetch_add(1, std::memory_order_relaxed) & mask];
    slot->connection = slot->owner->connection.load(std::memory_order_relaxed);
    return slot;
}

struct SpImpl : CmCtx {
    SpImpl() : CmCtx(CmKind::Sp) {}
    util::Sp *sp = nullptr;  // util's PSP or RSP: read only under mu_ while !dead
    IdPtr listen;
    std::atomic<bool> dead{false};
};

struct CrImpl : CmCtx {
    CrImpl() : CmCtx(CmKind::Cr) {}
    util::Cr *cr = nullptr;
    IdPtr id;  // the request's id until accept hands it to the EP
    // The request's read depths as the IB CM reports them, from the receiver's side (it
    // swaps the REQ's fields): responder_resources is how many reads the requester will
    // issue (its initiator depth), initiator_depth how many it answers (its responder
    // resources). librdmacm's own rdma_accept bounds ours the same way.
    std::uint8_t responder_resources = 0;
    std::uint8_t initiator_depth = 0;
};

}  // namespace opendat::verbs

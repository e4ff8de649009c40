// DTO event dispatchers backed by a completion queue.
//
// Every EVD created with DAT_EVD_DTO_FLAG gets a CqEvd as its util::EvdBackend
// (VerbsTransport::evd_create_dto): a CQ with its own completion channel. util's EVD
// entry points check the handle and arguments and dispatch dequeue/wait/resize here.
// Dequeue polls the CQ directly (no lock of ours, nothing allocated); a waiter arms the
// CQ and blocks in the kernel on the channel's fd, never spinning. Work completions
// become DAT_EVENTs only when they are taken (see convert()).
//
// The util::Evd keeps its software ring for the non-DTO events an EVD with mixed flags
// may also receive (connection events, software events); such an EVD is "mixed". Its
// waiter blocks in poll(2) on the CQ's channel and an eventfd that a post to the ring
// writes (ring_posted), so either kind of event ends the wait at once. An EVD with only
// DTO (and RMR bind) flags never touches the ring.
//
// A CNO fed by CQ-backed EVDs is waited on by blocking on all their channels and the
// CNO's own wake-up fd (see cno_wait.cpp); its proxy agent is not called for their
// completions (that would need a thread watching every CQ).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "util/evd.hpp"
#include "verbs/raii.hpp"

namespace opendat::verbs {

class CqEvd final : public util::EvdBackend {
  public:
    explicit CqEvd(util::Evd *evd);
    // Creates the channel, the CQ (`qlen` entries) and the wake-up eventfd.
    DAT_RETURN open(ibv_context *ctx, DAT_COUNT qlen) noexcept;

    util::Evd *evd() const noexcept { return evd_; }  // the handle the consumer holds
    ibv_cq *cq() const noexcept { return cq_.get(); }

    DAT_RETURN dequeue(DAT_EVENT *out) noexcept override;
    DAT_RETURN wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT *out,
                    DAT_COUNT *nmore) noexcept override;
    DAT_RETURN resize(DAT_COUNT qlen) noexcept override;
    // Releases a waiter so it re-checks the EVD state (dat_evd_set_unwaitable).
    void unwaitable() noexcept override;
    // An event was queued on the ring (mixed EVDs): wakes the waiter, if there is one.
    void ring_posted() noexcept override;
    // Keeps cno_wait.cpp's record of which CQs feed which CNO.
    void cno_changed(util::Cno *from, util::Cno *to) noexcept override;

    // For dat_cno_wait (cno_wait.cpp): whether an event is ready (completions are moved
    // into the staging ring to find out), arming the CQ, and the channel to block on.
    bool has_event() noexcept;
    // Solicited-only EVDs (see set_solicited_only) ask for solicited completions only.
    int arm() noexcept {
        return ibv_req_notify_cq(cq_.get(), solicited_only_.load(std::memory_order_relaxed));
    }
    // An EP feeding this EVD asked for DAT_COMPLETION_SOLICITED_WAIT_FLAG on its receives
    // (EP attribute or post_recv flag): from now on a waiter is woken only by a solicited
    // completion (or an error), as the reference arms with IB_NOTIFY_ON_SOLIC_COMP. The
    // completions are all delivered; it is only the wake-up that waits.
    void set_solicited_only() noexcept { solicited_only_.store(1, std::memory_order_relaxed); }
    int channel_fd() const noexcept { return ch_->fd; }
    // Whether there was a channel event (it is acknowledged). Taken by anyone but this
    // EVD's own dat_evd_wait, it also wakes that waiter, if there is one.
    bool take_channel_event(bool by_waiter = false) noexcept;
    // For CNO agents (cq_agent.cpp): completions moved out of the CQ so far, and whether a
    // dat_evd_wait blocks on this EVD.
    std::uint64_t arrived() const noexcept { return arrived_.load(std::memory_order_acquire); }
    bool waited_on() const noexcept { return waiters_.load() > 0; }
    // dat_cno_wait rounds (cno_wait.cpp) that hold this EVD; guarded by that file's lock.
    // cno_detach waits for it to drop to 0: the EVD may be freed once it returns.
    int cno_rounds = 0;

    const bool mixed;

  private:
    bool convert(const ibv_wc &wc, DAT_EVENT *out) noexcept;
    // Moves completions from the CQ into the staging ring; with stage_mu_ held.
    void drain_locked() noexcept;
    bool pop_staged_locked(DAT_EVENT *out) noexcept;

    util::Evd *const evd_;
    CompChannelPtr ch_;
    CqPtr cq_;  // after ch_: destroyed first
    UniqueFd wake_;
    // Events taken from the CQ but not yet consumed: dat_evd_wait with a threshold above
    // 1 must see that many before returning. Only ever used when a waiter needs it, so
    // dequeue checks the atomic count and takes the lock only when something is staged.
    std::mutex stage_mu_;
    std::unique_ptr<DAT_EVENT[]> stage_;
    std::size_t stage_cap_ = 0;
    std::size_t stage_head_ = 0;
    std::atomic<std::size_t> staged_{0};
    std::atomic<int> waiters_{0};
    std::atomic<int> solicited_only_{0};
    std::atomic<std::uint64_t> arrived_{0};  // events staged, ever
};

// The CqEvd behind `evd`, or nullptr if it has none (not a DTO EVD). Every backend the
// verbs transport creates is a CqEvd.
inline CqEvd *as_cq_evd(util::Evd *evd) noexcept {
    return evd != nullptr ? static_cast<CqEvd *>(evd->backend()) : nullptr;
}

// Which CQ-backed EVDs feed which CNO (cno_wait.cpp); control path only.
void cno_attach(util::Cno *cno, CqEvd *evd) noexcept;
void cno_detach(util::Cno *cno, CqEvd *evd) noexcept;
// The CQ EVDs of `ia` that feed a CNO with a proxy agent, and that CNO (cq_agent.cpp).
std::vector<std::pair<util::Cno *, CqEvd *>> cno_feeds_with_agent(util::Ia *ia);  // may throw

}  // namespace opendat::verbs

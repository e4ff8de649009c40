// The tcp side of a shared receive queue: which endpoints wait for a receive, and the
// wake-up that resumes them when the consumer posts one.
//
// The receives themselves are util's software ring (util/srq.hpp); an endpoint takes one
// when a SEND arrives (TcpEp::take_srq_recv). When the ring is empty the endpoint stops
// reading its socket, as it does without a posted receive of its own, and registers here.
// dat_srq_post_recv runs on a consumer thread that must not take an endpoint's lock while
// holding the SRQ's (the receive path takes them the other way round), so it only signals
// an eventfd; the progress engine dispatches that to on_events(), which resumes the
// waiting endpoints one by one under their own locks. Dispatch runs under the engine's
// dispatch lock, so an endpoint freed meanwhile is still allocated (dead) when it is
// looked at.
#pragma once

#include <mutex>
#include <vector>

#include "tcp/engine.hpp"
#include "tcp/net.hpp"

namespace opendat::util {
struct Srq;
}

namespace opendat::tcp {

class TcpEp;

class TcpSrq final : public Pollable {
  public:
    // May throw bad_alloc; ok() is false when the eventfd could not be made.
    TcpSrq();
    bool ok() const noexcept { return static_cast<bool>(efd_); }
    int fd() const noexcept { return efd_.get(); }

    // An endpoint created with this SRQ (dat_ep_create_with_srq) / freed. Reserves its
    // place in the waiter list, so waiting never allocates. attach may throw bad_alloc.
    void attach();
    void detach(TcpEp *t) noexcept;

    // With util::Srq::mu held, after the ring was found empty: `t` wants a wake-up.
    void wait(TcpEp *t) noexcept;
    // With util::Srq::mu held, after a receive was posted: true when someone waits (the
    // caller then calls signal() once the locks are released).
    bool has_waiters() noexcept;
    void signal() noexcept;

    void on_events(std::uint32_t events) noexcept override;

  private:
    Fd efd_;
    std::mutex mu_;                 // guards waiters_ and attached_
    std::vector<TcpEp *> waiters_;  // capacity: every attached endpoint
    std::size_t attached_ = 0;
    std::vector<TcpEp *> waking_;  // dispatch only
};

}  // namespace opendat::tcp

// TcpEp: limits per peer on the way out (tcp/peer_limits.hpp). A graceful disconnect and
// the drain after a remote access violation both wait for the peer to close its end; a
// peer that never does must not keep the endpoint (and its application) waiting.
#include "tcp/peer_limits.hpp"
#include "tcp/ep.hpp"
#include "tcp/transport.hpp"
#include "trace/trace.hpp"

namespace opendat::tcp {

void TcpEp::arm_close_deadline(bool after_violation) noexcept {
    const PeerLimits &lim = tr_->params().limits;
    deadline_ = std::chrono::steady_clock::now() + (after_violation ? lim.drain : lim.close);
    if (!ticking_) {
        ticking_ = true;
        tr_->engine().want_ticks(this, true);
    }
}

bool TcpEp::close_deadline_tick(std::chrono::steady_clock::time_point now) noexcept {
    if (phase_ != Phase::Closing) return false;
    if (now < deadline_) return true;
    if (rx_.ended) {
        // The peer ended its stream but did not take the answers it asked for.
        DAPL_TRC(trace::kInfo, "tcp",
                 "EP %p: peer did not take its answers in time (%llu left): closing",
                 static_cast<void *>(ep), static_cast<unsigned long long>(ctrl_tail_ - ctrl_head_));
        teardown(end_event_, true);
        return true;
    }
    DAPL_TRC(trace::kInfo, "tcp", "EP %p: peer did not close its end in time (%s): closing",
             static_cast<void *>(ep),
             rx_.discard_all ? "drain after a violation" : "graceful close");
    teardown(rx_.discard_all ? DAT_CONNECTION_EVENT_BROKEN : DAT_CONNECTION_EVENT_DISCONNECTED,
             true);
    return true;
}

}  // namespace opendat::tcp

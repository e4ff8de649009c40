#include "tcp/peer_limits.hpp"

#include "tunables/tunables.hpp"

namespace opendat::tcp {

// The limits, read through their declarations (common/tunables: range-checked, a bad
// value is traced and the default kept).
PeerLimits peer_limits_from_env() noexcept {
    namespace tun = opendat::tunables;
    PeerLimits d;
    d.handshake = std::chrono::milliseconds(tun::read_int(tun::kTcpHandshakeMs));
    d.max_pending = static_cast<std::size_t>(tun::read_int(tun::kTcpMaxPending));
    d.close = std::chrono::milliseconds(tun::read_int(tun::kTcpCloseMs));
    d.connect_answer = std::chrono::milliseconds(tun::read_int(tun::kTcpConnectAnswerMs));
    d.drain = std::chrono::milliseconds(tun::read_int(tun::kTcpDrainMs));
    d.accept_backoff = std::chrono::milliseconds(tun::read_int(tun::kTcpAcceptBackoffMs));
    return d;
}

void PendingSet::add(Member *m) noexcept {
    std::lock_guard lk(mu_);
    if (m->linked_[s_]) return;
    if (!m->linked_[1 - s_]) m->admitted_ = std::chrono::steady_clock::now();
    m->prev_[s_] = head_.prev_[s_];
    m->next_[s_] = &head_;
    head_.prev_[s_]->next_[s_] = m;
    head_.prev_[s_] = m;
    m->linked_[s_] = true;
    ++n_;
}

void PendingSet::unlink(Member *m) noexcept {
    m->prev_[s_]->next_[s_] = m->next_[s_];
    m->next_[s_]->prev_[s_] = m->prev_[s_];
    m->prev_[s_] = m->next_[s_] = nullptr;
    m->linked_[s_] = false;
    --n_;
}

void PendingSet::remove(Member *m) noexcept {
    std::lock_guard lk(mu_);
    if (m->linked_[s_]) unlink(m);
}

PendingSet::Member *PendingSet::pop_oldest(std::chrono::steady_clock::time_point cutoff) noexcept {
    std::lock_guard lk(mu_);
    if (n_ == 0) return nullptr;
    Member *m = head_.next_[s_];
    if (m->admitted_ >= cutoff) return nullptr;
    unlink(m);
    return m;
}

std::size_t PendingSet::size() const noexcept {
    std::lock_guard lk(mu_);
    return n_;
}

}  // namespace opendat::tcp

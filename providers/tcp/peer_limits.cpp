#include "tcp/peer_limits.hpp"

#include <cerrno>
#include <cstdlib>

namespace opendat::tcp {

namespace {
// A non-negative integer from the environment, or `fallback`.
long env_number(const char *name, long fallback, long min, long max) noexcept {
    const char *v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    char *end = nullptr;
    errno = 0;
    long n = std::strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || n < min || n > max) return fallback;
    return n;
}
}  // namespace

PeerLimits peer_limits_from_env() noexcept {
    PeerLimits d;
    constexpr long kHour = 3'600'000;
    d.handshake = std::chrono::milliseconds(
        env_number("DAT_TCP_HANDSHAKE_MS", d.handshake.count(), 1, kHour));
    d.max_pending = static_cast<std::size_t>(
        env_number("DAT_TCP_MAX_PENDING", static_cast<long>(d.max_pending), 1, 65536));
    d.close = std::chrono::milliseconds(env_number("DAT_TCP_CLOSE_MS", d.close.count(), 1, kHour));
    d.drain = std::chrono::milliseconds(env_number("DAT_TCP_DRAIN_MS", d.drain.count(), 1, kHour));
    d.accept_backoff = std::chrono::milliseconds(
        env_number("DAT_TCP_ACCEPT_BACKOFF_MS", d.accept_backoff.count(), 1, 60'000));
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

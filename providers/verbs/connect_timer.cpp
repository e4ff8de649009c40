// dat_ep_connect's timeout. rdma_cm bounds address and route resolution itself, but once
// the connect request is out it waits as long as the CM's own retries last (a minute and
// more) for a peer that never answers. The DAT consumer asked for its timeout: the CM
// thread keeps the deadlines of pending connects, sleeps no longer than the nearest one,
// and ends an attempt still pending at its deadline with DAT_CONNECTION_EVENT_TIMED_OUT
// (the id is destroyed, which tells the peer's CM with a reject).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "trace/trace.hpp"
#include "verbs/transport.hpp"

namespace opendat::verbs {

std::int64_t steady_now_ms() noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void VerbsTransport::queue_connect_deadline(EpImpl *impl, std::int64_t deadline_ms) noexcept {
    {
        std::lock_guard lk(mu_);
        try {
            deadlines_.push_back({impl, deadline_ms});
        } catch (...) {
            DAPL_TRC(trace::kError, "verbs",
                     "no memory to queue a connect timeout: it waits for the CM");
            return;
        }
    }
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

int VerbsTransport::expire_connect_deadlines() noexcept {
    Deadline due[16];
    int ndue = 0;
    std::int64_t next = std::numeric_limits<std::int64_t>::max();
    {
        std::lock_guard lk(mu_);
        const std::int64_t now = steady_now_ms();
        auto keep = deadlines_.begin();
        for (auto &d : deadlines_) {
            // Another attempt's deadline by now, or none: nothing to do for this entry.
            if (d.impl->deadline_ms.load(std::memory_order_relaxed) != d.at_ms) continue;
            if (d.at_ms <= now && ndue < static_cast<int>(std::size(due))) {
                due[ndue++] = d;
                continue;
            }
            next = std::min(next, d.at_ms);
            *keep++ = d;
        }
        deadlines_.erase(keep, deadlines_.end());
    }
    for (int i = 0; i < ndue; ++i) expire_connect(due[i].impl, due[i].at_ms);
    if (ndue == static_cast<int>(std::size(due))) return 0;  // more may be due: come back now
    if (next == std::numeric_limits<std::int64_t>::max()) return -1;
    return static_cast<int>(std::clamp<std::int64_t>(next - steady_now_ms(), 0, 60'000));
}

void VerbsTransport::expire_connect(EpImpl *impl, std::int64_t deadline_ms) noexcept {
    IdPtr abandoned;
    {
        util::Ep *ep = impl->ep;
        std::lock_guard lk(ep->mu);
        if (impl->dead.load() || impl->deadline_ms.load() != deadline_ms ||
            ep->state != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
            return;  // the attempt ended (or was freed) in time
        DAPL_TRC(trace::kInfo, "verbs", "connect of EP %p: no answer by its timeout", (void *)ep);
        impl->deadline_ms.store(0);
        qp_to_error(impl);
        abandoned = std::move(impl->id);  // its late events are never seen
        util::ep_connection_ended(ep, DAT_CONNECTION_EVENT_TIMED_OUT);
    }
    // `abandoned` is destroyed here, outside ep->mu: this thread acknowledged all its
    // events already, so rdma_destroy_id does not wait.
}

}  // namespace opendat::verbs

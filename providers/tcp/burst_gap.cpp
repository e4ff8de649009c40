#include "tcp/burst_gap.hpp"
#include "util/sys_io.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace opendat::tcp {

// The cheapest of kRounds rounds of kCalls empty receives: the minimum drops the rounds a
// preemption or an interrupt stretched. The receive is the call a dequeue makes.
std::chrono::nanoseconds empty_recv_cost() noexcept {
    using Clock = std::chrono::steady_clock;
    constexpr int kRounds = 5, kCalls = 16;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        return std::chrono::nanoseconds{0};
    auto best = std::chrono::nanoseconds::max();
    char byte;
    for (int r = 0; r < kRounds; ++r) {
        const auto t0 = Clock::now();
        for (int i = 0; i < kCalls; ++i) (void)sys::recv(sv[0], &byte, 1, MSG_DONTWAIT);
        best = std::min(best, (Clock::now() - t0) / kCalls);
    }
    sys::close(sv[0]);
    sys::close(sv[1]);
    return best;
}

std::chrono::nanoseconds measured_burst_gap() noexcept {
    // Measured once; a measurement that could not be made (no socket pair: out of file
    // descriptors) is not kept, so the next IA measures again.
    static std::atomic<std::int64_t> cached{0};
    if (const std::int64_t g = cached.load(std::memory_order_relaxed); g != 0)
        return std::chrono::nanoseconds{g};
    const auto cost = empty_recv_cost();
    const auto gap = burst_gap_for(cost);
    if (cost.count() > 0) cached.store(gap.count(), std::memory_order_relaxed);
    return gap;
}

}  // namespace opendat::tcp

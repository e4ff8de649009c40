// How close two posts must be to count as a burst (batched transmit, ep_tx.cpp defer_tx).
//
// The gap has to exceed what a consumer's own pipeline loop spends between two posts (one
// dat_evd_dequeue, which is mostly one system call), or batching never starts: each post
// then goes alone, its completion comes alone, and the loop stays too slow to count as a
// burst. A fixed 1 us held on a machine where a system call costs 0.3 us and failed on a
// virtual machine where it costs 1.2 us (message rate 0.18 M/s instead of 2.2 M/s). So the
// default is measured (once per load of the provider): kSyscallsPerGap empty system
// calls' worth. DAT_TCP_TX_BURST_GAP_NS sets it instead.
#pragma once

#include <chrono>

namespace opendat::tcp {

inline constexpr long kSyscallsPerGap = 3;
inline constexpr std::chrono::nanoseconds kMinBurstGap{1000};
inline constexpr std::chrono::nanoseconds kMaxBurstGap{20000};

// kSyscallsPerGap x the cheapest of a few empty non-blocking recv() calls, within
// [kMinBurstGap, kMaxBurstGap]; measured on the first call (about 0.1 ms), then kept
// (two IAs opening at once may both measure; either result is kept).
std::chrono::nanoseconds measured_burst_gap() noexcept;

// The cheapest of a few rounds of empty non-blocking recv() calls on a socket pair; 0 if
// no socket pair could be made (the gap is then kMinBurstGap).
std::chrono::nanoseconds empty_recv_cost() noexcept;

// The rule, for a given cost of one empty system call (tests).
constexpr std::chrono::nanoseconds burst_gap_for(std::chrono::nanoseconds syscall) noexcept {
    const auto gap = syscall * kSyscallsPerGap;
    return gap < kMinBurstGap ? kMinBurstGap : gap > kMaxBurstGap ? kMaxBurstGap : gap;
}

}  // namespace opendat::tcp

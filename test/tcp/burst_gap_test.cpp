// The burst gap of batched transmit (providers/tcp/burst_gap.hpp): how close two posts must
// be to leave together. It follows this machine's system call cost, within fixed bounds, so
// that a consumer's pipeline loop (a dequeue, mostly one system call, between posts) counts
// as a burst on a slow virtual machine as on a fast host.
#include <gtest/gtest.h>

#include <chrono>

#include "tcp/burst_gap.hpp"

namespace {

using std::chrono::nanoseconds;
using namespace opendat::tcp;

TEST(BurstGap, IsAFewSystemCallsWithinItsBounds) {
    EXPECT_EQ(burst_gap_for(nanoseconds{0}), kMinBurstGap);          // no measurement
    EXPECT_EQ(burst_gap_for(nanoseconds{200}), kMinBurstGap);        // a fast host
    EXPECT_EQ(burst_gap_for(nanoseconds{1200}), nanoseconds{3600});  // this VM
    EXPECT_EQ(burst_gap_for(nanoseconds{1000000}), kMaxBurstGap);    // a stalled measurement
}

TEST(BurstGap, MeasuredGapFollowsTheMeasuredCost) {
    const nanoseconds cost = empty_recv_cost();
    // A system call takes some time, and far less than a millisecond, on any machine
    // these tests run on.
    EXPECT_GT(cost.count(), 0);
    EXPECT_LT(cost, nanoseconds{1000000});
    const nanoseconds gap = measured_burst_gap();
    EXPECT_GE(gap, kMinBurstGap);
    EXPECT_LE(gap, kMaxBurstGap);
    EXPECT_EQ(measured_burst_gap(), gap) << "measured once, then kept";
    // Within the bounds, the gap is kSyscallsPerGap calls: allow for this run's measurement
    // differing from the cached one (each is the cheapest of five rounds, so they differ
    // little), by a factor of two either way.
    const nanoseconds expect = burst_gap_for(cost);
    EXPECT_LE(gap, expect * 2);
    EXPECT_GE(gap * 2, expect);
}

}  // namespace

// The burst gap of batched transmit (providers/tcp/burst_gap.hpp): how close two posts must
// be to leave together. It follows this machine's system call cost, within fixed bounds, so
// that a consumer's pipeline loop (a dequeue, mostly one system call, between posts) counts
// as a burst on a slow virtual machine as on a fast host.
#include <gtest/gtest.h>

#include <algorithm>
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
    const nanoseconds gap = measured_burst_gap();
    EXPECT_GE(gap, kMinBurstGap);
    EXPECT_LE(gap, kMaxBurstGap);
    EXPECT_EQ(measured_burst_gap(), gap) << "measured once, then kept";
    // The kept gap came from a measurement like these. Each is the cheapest of five rounds,
    // yet the machine's speed may move between them: the gap must lie within the rule's
    // answers for the cheapest and the dearest of three new ones, with a factor of two of
    // slack either way.
    nanoseconds lo = nanoseconds::max(), hi{0};
    for (int i = 0; i < 3; ++i) {
        const nanoseconds cost = empty_recv_cost();
        // A system call takes some time, and far less than a millisecond, on any machine
        // these tests run on.
        ASSERT_GT(cost.count(), 0);
        ASSERT_LT(cost, nanoseconds{1000000});
        lo = std::min(lo, cost);
        hi = std::max(hi, cost);
    }
    EXPECT_GE(gap * 2, burst_gap_for(lo));
    EXPECT_LE(gap, burst_gap_for(hi) * 2);
}

}  // namespace

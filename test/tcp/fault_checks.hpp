// What the fault tests check of a stream's two reports (fault_stream.hpp), and the line each
// case prints: shared by the host relay matrix and the netem matrix in the VM.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "fault_stream.hpp"

namespace faults {

inline constexpr std::size_t MiB = 1024 * 1024;

inline std::string mib(std::uint64_t b) {
    char s[32];
    std::snprintf(s, sizeof s, "%.2f MiB", static_cast<double>(b) / MiB);
    return s;
}

inline double ms_between(std::int64_t from_ns, std::int64_t to_ns) {
    return static_cast<double>(to_ns - from_ns) / 1e6;
}

struct Totals {
    std::uint32_t sends = 0, writes = 0, reads = 0;
};
inline Totals totals(const StreamPlan &p) {
    Totals t;
    for (const Step &s : schedule(p)) {
        if (s.op == Op::Send) ++t.sends;
        if (s.op == Op::Write) ++t.writes;
        if (s.op == Op::Read) ++t.reads;
    }
    return t;
}

// Holds for every run: each side's own checks passed, and every operation the initiator
// posted completed, one way or the other (none was lost).
inline void expect_sound(const SideReport &ini, const SideReport &tgt) {
    EXPECT_EQ(ini.status, 0) << ini.why;
    EXPECT_EQ(tgt.status, 0) << tgt.why;
    EXPECT_EQ(ini.completed, ini.posted);
}

// A fault the stream must ride out: every step arrived, nothing failed, and the connection
// ended with the initiator's graceful disconnect.
inline void expect_complete(const StreamPlan &plan, const SideReport &ini, const SideReport &tgt) {
    const Totals tot = totals(plan);
    EXPECT_EQ(tgt.sends_verified, tot.sends);
    EXPECT_EQ(tgt.writes_verified, tot.writes);
    EXPECT_EQ(ini.reads_ok, tot.reads);
    EXPECT_EQ(ini.sends_ok, tot.sends);
    EXPECT_EQ(ini.writes_ok, tot.writes);
    EXPECT_EQ(ini.failed, 0u) << "first error: " << dto_status_name(ini.first_error);
    EXPECT_EQ(ini.end_event, DAT_CONNECTION_EVENT_DISCONNECTED) << event_name(ini.end_event);
    EXPECT_EQ(tgt.end_event, DAT_CONNECTION_EVENT_DISCONNECTED) << event_name(tgt.end_event);
}

// A fault that ends the connection: the stream did not finish, both sides got BROKEN, and
// nothing completed with success at the initiator that the target did not verify (the
// streams that break run with delayed_ack).
inline void expect_broken(const SideReport &ini, const SideReport &tgt) {
    EXPECT_GT(ini.failed, 0u);
    EXPECT_GT(tgt.msgs_verified, 0u) << "nothing got through before the fault";
    EXPECT_EQ(ini.end_event, DAT_CONNECTION_EVENT_BROKEN) << event_name(ini.end_event);
    EXPECT_EQ(tgt.end_event, DAT_CONNECTION_EVENT_BROKEN) << event_name(tgt.end_event);
    EXPECT_LE(ini.msgs_ok, tgt.msgs_verified);
    EXPECT_LE(ini.sends_ok, tgt.sends_verified);
    EXPECT_LE(ini.writes_ok, tgt.writes_placed);
}

inline double seconds(const SideReport &ini, const SideReport &tgt) {
    return ms_between(ini.start_ns, std::max(ini.finish_ns, tgt.finish_ns)) / 1e3;
}

// "[fault] <fault>  <what was verified>"
inline std::string complete_line(const std::string &fault, const StreamPlan &plan,
                                 const SideReport &ini, const SideReport &tgt) {
    const Totals tot = totals(plan);
    char s[640];
    std::snprintf(s, sizeof s,
                  "[fault] %-36s %d ops (%u sends, %u writes, %u reads, 1 B..%u B): %u messages "
                  "and %u writes verified byte for byte at the target (%s), %u reads checked "
                  "(%s); nothing lost, corrupted or duplicated; delayed_ack %s; end %s/%s; %.2f s",
                  fault.c_str(), plan.ops, tot.sends, tot.writes, tot.reads, plan.max_size,
                  tgt.msgs_verified, tgt.writes_verified, mib(tgt.bytes_verified).c_str(),
                  ini.reads_ok, mib(ini.bytes_read_ok).c_str(), plan.delayed_ack ? "on" : "off",
                  event_name(ini.end_event), event_name(tgt.end_event), seconds(ini, tgt));
    return s;
}

// For a fault that ended the connection at `fault_ns` (CLOCK_MONOTONIC).
inline std::string broken_line(const std::string &fault, const SideReport &ini,
                               const SideReport &tgt, std::int64_t fault_ns, int ini_bound_ms,
                               int tgt_bound_ms) {
    char s[768];
    std::snprintf(s, sizeof s,
                  "[fault] %-36s verified at the target: %u messages, %u writes (%s), at the "
                  "initiator: %u reads; completed with success: %u messages, %u writes, %u "
                  "reads, all of which arrived; %u of %u requests completed in error (first %s); "
                  "events: initiator %s +%.0f ms (bound %d), target %s +%.0f ms (bound %d); "
                  "%.2f s",
                  fault.c_str(), tgt.msgs_verified, tgt.writes_verified,
                  mib(tgt.bytes_verified).c_str(), ini.reads_ok, ini.msgs_ok, ini.writes_ok,
                  ini.reads_ok, ini.failed, ini.posted, dto_status_name(ini.first_error),
                  event_name(ini.end_event), ms_between(fault_ns, ini.end_ns), ini_bound_ms,
                  event_name(tgt.end_event), ms_between(fault_ns, tgt.end_ns), tgt_bound_ms,
                  seconds(ini, tgt));
    return s;
}

}  // namespace faults

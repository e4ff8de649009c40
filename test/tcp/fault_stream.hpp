// A verified stream of DAT operations between two processes, for the fault tests (issue 9
// "Faults on the path"): the relay matrix on the host (fault_matrix_test.cpp) and the netem
// matrix in the VM (netem_test.cpp).
//
// The initiator runs a schedule of sends, RDMA writes and RDMA reads of mixed sizes that
// both sides derive from one seed, so each side knows what every byte must be:
//  - a send of schedule step i carries step i's content (a header with i, the length and a
//    checksum of the rest, when it is long enough for one);
//  - an RDMA write puts step i's content into a slot of the target's window, then a small
//    "notify" send names the slot: the target checks the slot against step i's content
//    (the send is ordered behind the write) and returns a credit, after which the slot may
//    be written again;
//  - an RDMA read fetches a range of the target's read source (fixed content) and the
//    initiator checks it, and that no byte past it was written.
// The target checks every message in order, byte for byte: nothing lost, corrupted or
// duplicated. After the last step the initiator sends END (with its counts), the target
// answers DONE, and the initiator disconnects gracefully.
//
// If the connection breaks instead, both sides record the connection event and its time,
// let every outstanding operation complete (in error), and report what completed with
// success; the test checks that nothing completed with success that did not arrive
// (with delayed_ack, a send or write succeeds only once the target placed it).
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dat_fixture.hpp"

namespace faults {

struct StreamPlan {
    std::uint64_t seed = 1;
    int ops = 300;
    std::uint32_t max_size = 1u << 20;  // sizes are log-uniform in [1, max_size]
    std::uint32_t min_size = 1;         // ... and raised to at least this
    bool delayed_ack = true;            // sends and writes complete once placed
    int run_ms = 40000;                 // the whole run's deadline (a hang is a failure)
};

enum class Op : std::uint8_t { Send, Write, Read };
struct Step {
    Op op;
    std::uint32_t size;
    std::uint32_t offset;  // Read: where in the target's read source
};
std::vector<Step> schedule(const StreamPlan &plan);

// What one side saw; a POD, sent to the test process through a pipe.
struct SideReport {
    int status = 0;  // 0: every check of this side held; else `why` says what failed
    char why[240] = {};
    // Initiator.
    std::uint32_t posted = 0;     // requests posted (sends, writes, notifies, reads, END)
    std::uint32_t completed = 0;  // ... and their completions, success or not
    std::uint32_t failed = 0;     // completions in error (the first one's status below)
    std::uint32_t first_error = 0;
    std::uint32_t sends_ok = 0;   // data sends completed with success
    std::uint32_t writes_ok = 0;  // RDMA writes completed with success
    std::uint32_t reads_ok = 0;   // RDMA reads completed with success (and checked)
    std::uint32_t msgs_ok = 0;    // sends + notifies completed with success
    std::uint64_t bytes_sent_ok = 0, bytes_read_ok = 0;
    // Target.
    std::uint32_t msgs_verified = 0;  // messages received in order and checked
    std::uint32_t sends_verified = 0;
    std::uint32_t writes_verified = 0;  // through their notify
    std::uint32_t writes_placed = 0;    // verified + found intact in their slot at the end
    std::uint64_t bytes_verified = 0;
    // Both.
    std::int32_t end_event = 0;  // the connection event that ended the connection
    std::int64_t end_ns = 0;     // CLOCK_MONOTONIC when it was seen
    std::int64_t start_ns = 0, finish_ns = 0;

    void fail(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
};

std::int64_t mono_ns();
const char *event_name(std::int32_t ev);
const char *dto_status_name(std::uint32_t status);

// The passive side: an IA, the memory the initiator works on, a listener.
class Target {
  public:
    Target(const StreamPlan &plan, SideReport *rep);
    ~Target();
    bool open(const char *ia);              // false: rep->why says why
    DAT_RETURN listen(DAT_CONN_QUAL qual);  // dat_psp_create on this qualifier
    void serve();                           // accept one connection and run it
    // Called once the connection is established, before the stream starts.
    void on_established(std::function<void()> f);
    // Called once, when the n-th message (send or write) has been verified: a fault
    // injected then meets a stream under way, however fast the machine runs it.
    void on_verified(std::uint32_t n, std::function<void()> f);

  private:
    struct Impl;
    Impl *impl_;
};

// The active side.
class Initiator {
  public:
    Initiator(const StreamPlan &plan, SideReport *rep);
    ~Initiator();
    bool open(const char *ia);
    void run(in_addr addr, DAT_CONN_QUAL qual);

  private:
    struct Impl;
    Impl *impl_;
};

}  // namespace faults

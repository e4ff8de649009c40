// TcpEp: write, then notify. An application that wants its peer to learn of an RDMA write
// posts a SEND right after it (the peer's receive completes; a one-sided write tells it
// nothing). Over TCP the two frames went out with two system calls, and the peer's waiting
// consumer woke for the first only to find nothing to report: on a machine whose send() costs
// 7 us, the waiting RDMA-write ping-pong ran 1.34x a raw blocking one (docs/benchmarks.md,
// "Write, then notify").
//
// When this connection's last writes each had a post follow at once (kCorkRun of them in a
// row: no progress call in between, within kCorkLate), the next small write is sent with
// MSG_MORE: the kernel keeps it in the
// socket, and the post that follows pushes both out in one segment. A held write no post
// followed goes anyway:
//  - at the application's next progress call on the IA (a dequeue, a dat_evd_wait: the
//    engine's consumer rounds, Engine::push_corked), which counts it as a miss;
//  - or, if the application makes no such call, from the progress thread once it has been
//    held for DAT_TCP_CORK_HOLD_MS (2 ms; Engine::push_stale_hold), a miss too; with 0 there,
//    when the kernel's probe timer pushes it (about 200 ms: TCP_RTO_MIN), counted as a
//    miss by the next post.
// Each miss doubles the run a hold needs, and after kCorkMissesMax of them this endpoint
// never holds a write again: a pattern that changed costs at most that many late writes.
// DAT_TCP_CORK_WRITES=off turns it off; so does a dat_evd_wait that sleeps on its EVD
// (DAT_TCP_WAIT_SLEEP=cv or busy progress), which makes no progress call.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "tcp/engine.hpp"
#include "tcp/ep.hpp"
#include "tcp/transport.hpp"
#include "trace/trace.hpp"

namespace opendat::tcp {

[[gnu::hot]] bool TcpEp::cork_write(const RequestWr &w) noexcept {
    // A write that waits for a reply (delayed ACK) has its completion to wait for: the
    // consumer's wait pushes it at once, a miss every time. The run says the rest: it only
    // grows where note_write records writes (the policy allows it, misses below the limit),
    // and every miss empties it.
    if (w.need_reply || cork_run_ < (kCorkRun << cork_misses_)) return false;
    if (!tr_->engine().cork(this)) return false;  // another connection holds one
    corked_ = true;
    return true;
}

// send_alone's send() failed: nothing is held after all.
void TcpEp::cork_failed() noexcept {
    corked_ = false;
    tr_->engine().uncorked(this);
}

[[gnu::hot]] void TcpEp::note_write() noexcept {
    const Engine &e = tr_->engine();
    if (cork_misses_ >= kCorkMissesMax || !e.policy().cork_writes) return;
    write_last_ = true;
    write_polls_ = e.inline_polls();
    write_at_ = std::chrono::steady_clock::now();
}

// Called once the post after a write passed its checks, before it is sent: a held write
// leaves with it. A post that `notifies` (anything but another RDMA write) with no
// progress call since the write (no dequeue, no wait: the application did not wait for the
// peer in between) counts towards the run; a post after a progress call (a polled
// ping-pong's next write) ends it. A write after a write neither counts nor ends it: a
// burst of writes says nothing of what follows its last one (a message-rate run's last
// write, followed by nothing the peer could see). Not a clock: a thread that shares its
// CPU may be preempted between the two posts.
[[gnu::hot]] void TcpEp::follow_write(bool notifies) noexcept {
    write_last_ = false;
    const bool quiet = tr_->engine().inline_polls() == write_polls_;
    if (!corked_ && !quiet) {  // a polled ping-pong's every write: no clock read
        cork_run_ = 0;
        return;
    }
    const bool late = std::chrono::steady_clock::now() - write_at_ > kCorkLate;
    if (corked_) {
        corked_ = false;
        tr_->engine().uncorked(this);
        // Held for long: the kernel may have sent it already (after some 200 ms), and a
        // peer that waited for the write itself waited that long.
        if (late) {
            cork_missed("the next post came late");
            return;
        }
    }
    if (late || !quiet)
        cork_run_ = 0;
    else if (notifies && cork_run_ < UINT8_MAX)
        ++cork_run_;
}

void TcpEp::cork_missed(const char *how) noexcept {
    cork_run_ = 0;
    if (cork_misses_ < kCorkMissesMax) ++cork_misses_;
    DAPL_TRC(trace::kDetail, "tcp",
             "EP %p: a held RDMA write had no post follow (%s): miss %u of %u",
             static_cast<void *>(ep), how, static_cast<unsigned>(cork_misses_),
             static_cast<unsigned>(kCorkMissesMax));
}

void TcpEp::uncork() noexcept {
    std::lock_guard lk(ep->mu);
    // Its own post got there first (nothing held), or got there and then held its next
    // write (in the engine's slot again, since the round took it out): that one is not the
    // write the round found, and its own post, or a later round, sends it.
    if (!corked_ || tr_->engine().corked_is(this)) return;
    push_held("the application progressed instead");
}

void TcpEp::push_if_stale(std::chrono::milliseconds hold) noexcept {
    // A post under way holds the lock: it is about to send (the hold is not stale), or it
    // is the post that just held its write (and woke us). The next round looks again.
    std::unique_lock lk(ep->mu, std::try_to_lock);
    if (!lk.owns_lock()) return;
    // Still held, and by the slot: under ep->mu, so write_at_ is this hold's (note_write
    // runs before the post lets the lock go).
    if (!corked_ || !tr_->engine().corked_is(this)) return;
    if (std::chrono::steady_clock::now() - write_at_ < hold) return;
    tr_->engine().uncorked(this);
    push_held("nothing followed it, nor any DAT call");
}

void TcpEp::push_held(const char *how) noexcept {
    corked_ = false;
    write_last_ = false;
    if (fd_) {
        // Setting TCP_NODELAY (set already) pushes what the socket holds (tcp(7)).
        const int one = 1;
        if (setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
            DAPL_TRC(trace::kError, "tcp", "EP %p: TCP_NODELAY failed: errno %d",
                     static_cast<void *>(ep), errno);
    }
    cork_missed(how);
}

void TcpEp::drop_cork() noexcept {
    // Closing the socket sends what it holds; a new stream starts a new run. The misses
    // stay: they are the application's habits, not the stream's.
    if (corked_) tr_->engine().uncorked(this);
    corked_ = false;
    write_last_ = false;
    cork_run_ = 0;
}

}  // namespace opendat::tcp

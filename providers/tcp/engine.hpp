// The progress engine: one epoll set and one progress thread per IA.
//
// Sockets (endpoints, listeners, half-open passive connections) register a Pollable. The
// thread waits in epoll_wait and calls on_events(); an eventfd wakes it for shutdown or
// for a new deadline. Objects are never deleted while the thread may still hold a pointer
// from its last epoll_wait: retire() parks the object in a util::DeferredFree, and the
// thread drains it at the top of its next iteration. util's EP objects wait there too
// (defer), behind the TcpEp that refers to them.
//
// Adaptive progress (see ProgressPolicy): after activity the thread keeps looking with
// epoll_wait(timeout 0) for a bounded time before it sleeps, so a message that follows
// soon after the last one (the next request of a ping-pong, the next RDMA read at a
// passive target) is found without a wake-up. While it polls, it reads the busy
// connection's socket directly in most rounds (spin, hot_round): a message then costs the
// recv() that brings it, not an epoll_wait first.
//
// A consumer blocked in dat_evd_wait may own the progress instead (begin_inline_wait):
// it sleeps in this engine's epoll_wait itself and dispatches what arrives on its own
// thread, so the message it waits for wakes it directly, one wake-up as with a blocking
// recv(), instead of waking the progress thread, which then wakes the consumer. Meanwhile
// the thread stands aside (it sleeps on its eventfd, still running ticks), and takes over
// again once the consumer gives the progress back.
//
// A connection a consumer keeps polling leaves the epoll set (poll_inline, detach_hot): a
// socket in an epoll set costs every arriving segment a wake-up callback in the kernel,
// measurable on a polled ping-pong (docs/benchmarks.md, "A polled socket out of epoll").
// The consumer reads it directly anyway. Whoever next needs epoll to see it puts it back
// first: the progress thread before it looks, an inline wait before it sleeps, a poller
// whose hot connection changed. While it is out and epoll has nothing else, the poller
// stops asking epoll every few rounds (each such round is blind to the busy socket) and the
// progress thread watches the rest of the set instead (rounds_off_, watch()).
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "util/deferred_free.hpp"
#include "util/futex_mutex.hpp"

namespace opendat::tcp {

class Pollable {
  public:
    virtual ~Pollable() = default;
    virtual void on_events(std::uint32_t events) noexcept = 0;
    // Called about every 50 ms while the object asked for it (connect timeouts).
    virtual void on_tick(std::chrono::steady_clock::time_point) noexcept {}
    // A busy connection's socket, read without asking epoll first (Engine::poll_inline,
    // Engine::spin): an object that can be read and written that way says so, and
    // poll_hot() does one round of both. Gone once it is no longer worth it (not
    // connected, perhaps since this round); Busy if the round did anything (it may have
    // posted events); Quiet if it found nothing to do, or, unless `may_wait`, found the
    // object busy on another thread (the engine's own spinners never wait for an
    // application's call while they hold the dispatch lock).
    enum class HotRound { Gone, Quiet, Busy };
    virtual bool hot_capable() const noexcept { return false; }
    virtual HotRound poll_hot(bool /*may_wait*/) noexcept { return HotRound::Gone; }
    // A hot object polled for long leaves the epoll set (Engine::poll_inline): leave_poll_set()
    // takes its socket out (true if it is out now), rejoin_poll_set() puts it back. Called with
    // the engine's dispatch lock held or from the progress thread, never on a freed object.
    virtual bool leave_poll_set() noexcept { return false; }
    virtual void rejoin_poll_set() noexcept {}
    // The object holds bytes back in its socket for a post to come (Engine::cork), and a
    // consumer's round found it still holding them: the application went on without that
    // post, so they go now. Called with the engine's dispatch lock held, never on a freed
    // object.
    virtual void uncork() noexcept {}
    // The same from the progress thread (Engine::push_stale_hold), only if the bytes have been
    // held for longer than `hold`: nothing followed them and the application made no call.
    // Never on a freed object: only the progress thread frees retired ones.
    virtual void push_if_stale(std::chrono::milliseconds /*hold*/) noexcept {}

  private:
    friend class Engine;
    // Set by Engine::retire: read by a dispatcher, which holds the dispatch lock, so the
    // object is not freed meanwhile (Engine::detach_hot).
    std::atomic<bool> retired_{false};
};

// How the progress thread waits; read once per engine from the environment (see
// docs/configuration.md, "Progress"):
//   DAT_TCP_PROGRESS      adaptive (default) | busy | sleep
//   DAT_TCP_SPIN_US       adaptive: microseconds of polling after the last event (50, 0..1000000)
//   DAT_TCP_WAIT_SPIN_US  dat_evd_wait: microseconds the consumer progresses inline before it
//                         sleeps (50, 0..1000000)
//   DAT_TCP_WAIT_SLEEP    dat_evd_wait, then: epoll (default; the consumer sleeps in the
//                         engine's epoll_wait) | cv (on the EVD; never under busy progress)
//   DAT_TCP_TX_BATCH      frames per sendmsg when several are queued (64, 1..128)
//   DAT_TCP_TX_BURST_GAP_NS  how close posts must be to be batched (0: measured, burst_gap.hpp)
//   DAT_TCP_CORK_WRITES   on (default) | off: an RDMA write waits in its socket for the post
//                         that usually follows it (ep_cork.cpp); never without inline waits
//   DAT_TCP_CORK_HOLD_MS  how long at most, if nothing follows it and the application makes
//                         no call (2, 0..1000; 0: until a call, or the kernel's ~200 ms)
struct ProgressPolicy {
    enum class Mode { Adaptive, Busy, Sleep };
    Mode mode = Mode::Adaptive;
    std::uint32_t spin_us = 50;
    std::uint32_t wait_spin_us = 50;
    bool wait_in_epoll = true;
    std::uint32_t tx_batch = 64;  // not progress, but read with it: once per IA, per engine
    std::chrono::nanoseconds burst_gap{1000};  // likewise (defer_tx)
    bool cork_writes = true;                   // likewise (TcpEp::cork_write)
    std::uint32_t cork_hold_ms = 2;            // likewise (Engine::sleep_ms)
    static ProgressPolicy from_env() noexcept;
};

class Engine {
  public:
    explicit Engine(const ProgressPolicy &policy = ProgressPolicy::from_env());
    ~Engine();  // stops the thread and deletes every object still registered or parked
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    bool ok() const noexcept { return ok_; }
    bool add(int fd, Pollable *p, std::uint32_t events) noexcept;
    bool modify(int fd, Pollable *p, std::uint32_t events) noexcept;
    void remove_fd(int fd) noexcept;
    // Takes ownership of an object the engine knows (adopt) or will delete (retire).
    void adopt(Pollable *p);
    void retire(Pollable *p) noexcept;
    // Anything else the thread may still reach (util's EP behind a retired TcpEp): freed
    // at the same point, after what was retired before it.
    void defer(util::Deferred d) noexcept { parked_.park(d); }
    void want_ticks(Pollable *p, bool on) noexcept;
    // Dispatches ready events on the calling thread without waiting; skipped when the
    // progress thread is dispatching (it will handle them). While a consumer keeps doing
    // this, the progress thread stays out of epoll_wait (see run()).
    void poll_inline() noexcept;
    // A consumer that progressed inline is about to sleep: the thread takes over at once
    // instead of after its back-off (a polling consumer's completions would otherwise wait
    // up to that long).
    void hand_back() noexcept;
    const ProgressPolicy &policy() const noexcept { return policy_; }
    // Write, then notify (ep_cork.cpp): p may hold its write back in its socket for the post
    // it expects, if no other object holds one (false: it sends at once). uncorked(p): p's
    // own post has sent it. Until then, a consumer's round (poll_inline, wait_inline) that
    // finds it held calls p->uncork(): the application moved on without that post.
    bool cork(Pollable *p) noexcept;
    // Consumer progress calls so far (poll_inline, inline waits): a write and the post
    // after it with none in between are one step of the application's (ep_cork.cpp).
    std::uint64_t inline_polls() const noexcept {
        return inline_polls_.load(std::memory_order_relaxed);
    }
    void uncorked(Pollable *p) noexcept {
        Pollable *q = p;
        corked_.compare_exchange_strong(q, nullptr);
    }
    // Whether p's hold is the one recorded (compared, never dereferenced).
    bool corked_is(const Pollable *p) const noexcept { return corked_.load() == p; }
    // Whether the record of the object out of the epoll set names p (tests: compared,
    // never dereferenced).
    bool detached_is(const Pollable *p) const noexcept { return detached_.load() == p; }
    // A round, under the dispatch lock, left an endpoint to a thread waiting for its lock
    // (TcpEp::leave_to_waiter): the progress thread gives its CPU away once, after it let
    // go of the dispatch lock (progress_dispatch, hot_round), and not in Busy mode. A
    // consumer's inline round leaves the yield to the thread's next round: the consumer
    // thread itself never pays for it.
    void owe_yield() noexcept { yield_owed_ = true; }

    // A consumer about to block in dat_evd_wait: true if its thread now owns the progress
    // (one thread at a time, and only under the wait_in_epoll policy). Then
    // wait_inline(us, seen) sleeps in epoll_wait for at most `us` microseconds (UINT32_MAX:
    // no limit) and dispatches what arrives; it returns false when the progress thread is
    // wanted (its eventfd fired): the consumer must give the progress back and wait the
    // ordinary way. end_inline_wait() gives it back. wake_inline(), from any thread, ends
    // the owner's current wait_inline (an event was posted for it elsewhere); a
    // wait_inline whose `seen` (inline_wakes(), read before the owner last looked at its
    // condition) is older returns at once: a poller may have drained that wake's eventfd
    // before the owner went to sleep.
    bool begin_inline_wait() noexcept;
    std::uint64_t inline_wakes() const noexcept { return inline_wakes_.load(); }
    bool wait_inline(std::uint32_t timeout_us, std::uint64_t seen) noexcept;
    void end_inline_wait() noexcept;
    void wake_inline() noexcept;

  private:
    // The eventfd wake_inline() writes; in the epoll set, so that the owner's epoll_wait
    // returns; whoever dispatches it drains it.
    class InlineWake final : public Pollable {
      public:
        int fd = -1;
        void on_events(std::uint32_t) noexcept override;
    };

    void run() noexcept;
    void run_ticks(std::vector<Pollable *> &ticks) noexcept;
    void dispatch(epoll_event *events, int n, bool progress_thread) noexcept;
    // The progress thread's dispatch: under the dispatch lock, then the yield owed.
    void progress_dispatch(epoll_event *events, int n) noexcept;
    // Under the dispatch lock: whether a round owed a yield (owe_yield), cleared. Read
    // first: a spin round that owes nothing writes nothing.
    bool take_owed_yield() noexcept {
        if (!yield_owed_) return false;
        yield_owed_ = false;
        return true;
    }
    // After the dispatch lock was let go: the yield a round owed, if any.
    void pay_yield(bool owed) noexcept;
    // Whether epoll reported an object's socket (not one of the engine's eventfds).
    bool others_ready(const epoll_event *events, int n) const noexcept;
    void poll_epoll(Pollable *h) noexcept;  // poll_inline's epoll round (dispatch_mu_ held)
    // poll_inline: the poller stops asking epoll; the thread watches the set (rounds_off_).
    void stop_rounds() noexcept;
    // run(), backing off while rounds_off_: sleeps in epoll_wait on the rest of the set for
    // at most wait_ms and dispatches what comes.
    void watch(epoll_event *events, int wait_ms) noexcept;
    void wake() noexcept;
    // The polled connection out of the epoll set (see the top of this file).
    void detach_hot(Pollable *h) noexcept;
    void reattach_detached() noexcept;

    // Adaptive/busy: looks until something turns up or the spin time is over, at the busy
    // connection's socket directly (hot_round) in most rounds and with epoll_wait(0) in the
    // others. Found nothing: the spin ended quietly, go to sleep.
    struct Found {
        int events = 0;    // epoll's results, to dispatch
        bool hot = false;  // a round on the busy connection did something (handled already)
    };
    Found spin(epoll_event *events, std::uint64_t polls_at_start, std::uint32_t us) noexcept;
    // A spinner's choice for this round: the busy connection directly (most rounds), or
    // epoll (every kHotEvery-th, counted in *rounds across calls, and when there is none).
    bool hot_turn(unsigned *rounds) const noexcept;
    // One round on hot_ (poll_hot) if the dispatch lock is free: true unless it was quiet
    // (Busy, or Gone: the round may have ended the connection and posted its events).
    bool hot_round() noexcept;
    bool poll_hot_locked() noexcept;  // the same, dispatch_mu_ held
    // A consumer's round, dispatch_mu_ held: a write still held back goes (Pollable::uncork).
    void push_corked() noexcept {
        if (corked_.load(std::memory_order_relaxed) != nullptr) push_corked_now();
    }
    void push_corked_now() noexcept;
    // The progress thread, about to sleep for at most wait_ms (-1: no limit), in the epoll
    // set or on its eventfds (standby): how long it may, so that a held write that nothing
    // follows goes after about cork_hold_ms (cork_seen_, sleeps_long_). after_sleep() ends
    // what sleep_ms said; push_stale_hold(), every round, sends a hold that old.
    int sleep_ms(int wait_ms, bool standby) noexcept;
    void after_sleep() noexcept;
    void push_stale_hold() noexcept;

    const ProgressPolicy policy_;
    int epfd_ = -1;
    int evfd_ = -1;
    bool ok_ = false;
    std::atomic<bool> stop_{false};
    // Bumped by every poll_inline(). The progress thread compares it with what it saw last:
    // while it moves, a consumer drives progress and the thread must not compete with it
    // for the same events. (A counter, not a timestamp: no clock read per poll.)
    std::atomic<std::uint64_t> inline_polls_{0};
    // poll_inline's misses of dispatch_mu_ in a row (any poller's; reset by a success).
    std::atomic<unsigned> dispatch_misses_{0};
    // The object whose socket last had data for a dispatcher. A polling consumer, and the
    // progress thread while it spins, read it directly (poll_hot) and ask epoll only every
    // kHotEvery-th round: a busy connection's
    // message then costs its recv() alone, as a busy-polled socket does, instead of an
    // epoll_wait and a recv(). Cleared by retire(); read and used under dispatch_mu_, which
    // keeps a retired object from being freed meanwhile.
    std::atomic<Pollable *> hot_{nullptr};
    // The object holding a write back in its socket (cork), if any: at most one. Next to
    // hot_: every consumer round reads both. Cleared by its own next post (uncorked), by a
    // consumer's round (push_corked) and by retire(), so it never names a parked object.
    std::atomic<Pollable *> corked_{nullptr};
    // A write was held since the progress thread last decided how long to sleep (cork),
    // and whether it now sleeps long, and where (sleep_ms): then the next hold wakes it.
    // While holds come, and for kCorkSlices after, it sleeps in slices of cork_hold_ms; a
    // run's first hold costs a wake-up, the others nothing. Next to corked_: cork() writes
    // them together.
    enum : std::uint8_t { kAwake, kLongInSet, kLongStandby };
    static constexpr int kCorkSlices = 50;
    std::atomic<bool> cork_seen_{false};
    std::atomic<std::uint8_t> sleeps_long_{kAwake};
    int cork_slices_ = 0;    // progress thread only
    int cork_wake_fd_ = -1;  // cork()'s wake of the thread on standby (not in the set)
    // wait_inline's last round dispatched events: its next one polls for spin_us before it
    // sleeps. The inline owner's, under dispatch_mu_.
    bool inline_active_ = false;
    unsigned hot_rounds_ = 0;   // under dispatch_mu_ (poll_inline, wait_inline)
    unsigned spin_rounds_ = 0;  // progress thread only (spin)
    // The object poll_inline has polled directly in a row, and how many rounds (under
    // dispatch_mu_); compared, never dereferenced.
    Pollable *streak_of_ = nullptr;
    unsigned streak_ = 0;
    // poll_inline's epoll turns in a row that found nothing (under dispatch_mu_), and
    // whether it has stopped asking epoll: set once the hot socket is out of the set and
    // the turns stay quiet, so that its rounds all read the socket; the progress thread then
    // watches the rest of the set while it backs off (watch()). Cleared when the socket goes
    // back (reattach_detached) and when the thread's watch finds something.
    unsigned quiet_turns_ = 0;
    std::atomic<bool> rounds_off_{false};
    // The object whose socket is out of the epoll set (detach_hot), if any: at most one.
    // Whoever takes it out of here puts the socket back (reattach_detached). Cleared by
    // retire(), or by a detach_hot that raced it, so it never names a parked object.
    std::atomic<Pollable *> detached_{nullptr};
    std::uint64_t seen_polls_ = 0;          // progress thread only
    int backoff_ms_ = 1;                    // progress thread only: its next look (run())
    std::atomic<bool> handed_back_{false};  // hand_back() since the thread last looked
    std::atomic<bool> backing_off_{false};  // the thread sleeps on the eventfd only
    // Inline waits (begin_inline_wait): a consumer owns the progress; the progress thread
    // is in epoll_wait or dispatching its results (the owner waits until it is not, so the
    // two never sleep on the same set); the thread stands aside for a long wait (the
    // owner wakes it when it gives the progress back).
    std::atomic<bool> inline_owner_{false};
    std::atomic<std::uint64_t> inline_wakes_{0};  // wake_inline() calls (inline_wakes())
    std::atomic<bool> in_epoll_{false};
    std::atomic<bool> standby_long_{false};
    InlineWake inline_wake_;
    std::mutex mu_;
    // Held while events are dispatched and while parked objects are deleted, so an inline
    // poller never dispatches to an object being freed.
    util::FutexMutex dispatch_mu_;  // inline: taken by every poll round (futex_mutex.hpp)
    bool yield_owed_ = false;       // under dispatch_mu_ (owe_yield)
    std::unordered_set<Pollable *> live_;
    util::DeferredFree parked_;
    std::unordered_set<Pollable *> ticking_;
    std::thread thread_;
};

}  // namespace opendat::tcp

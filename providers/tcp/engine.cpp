#include "tcp/engine.hpp"
#include "util/grace.hpp"
#include "util/sys_io.hpp"
#include "tcp/burst_gap.hpp"
#include "tunables/tunables.hpp"

#include <sys/epoll.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trace/trace.hpp"

namespace opendat::tcp {

namespace {
constexpr int kTickMs = 50;
constexpr int kBatch = 64;
// While consumers poll, the thread looks again this often whether they still do: first
// after kBackoffMs, then twice as long each time they still do, up to kBackoffMaxMs. Each
// look is a wake-up on a CPU a poller may be using: 1 ms apart, the looks were the polled
// ping-pong's p99 tail (docs/benchmarks.md, "Progress"). A poller that stops to wait hands
// the progress back at once (hand_back); one that stops to do something else leaves it to
// the thread within two looks (2 x kBackoffMaxMs).
constexpr int kBackoffMs = 1;
constexpr int kBackoffMaxMs = 4;
// poll_inline: epoll's turn every this many rounds while a connection is hot.
constexpr unsigned kHotEvery = 4;
// poll_inline: after this many epoll turns in a row that found nothing while the hot
// socket is out of the set, the poller stops asking epoll and the progress thread watches
// the rest of the set instead (rounds_off_).
constexpr unsigned kQuietTurns = 4;
// poll_inline: after this many direct rounds in a row on one connection, its socket
// leaves the epoll set (detach_hot). Enough that a connection polled once in a while
// stays in; few enough that a ping-pong is out after its first round trips.
constexpr unsigned kDetachAfter = 64;
// spin: the thread yields its CPU on its first empty round after activity, then every this
// many rounds.
constexpr unsigned kYieldEvery = 16;
// poll_inline: after this many misses of the dispatch lock in a row a poller yields its
// CPU, and after this many it naps for kMissNap (see there).
constexpr unsigned kYieldAfterMisses = 64;
constexpr unsigned kNapAfterMisses = 4096;
constexpr timespec kMissNap{0, 20 * 1000};

}  // namespace

// The progress tunables, read through their declarations (common/tunables).
ProgressPolicy ProgressPolicy::from_env() noexcept {
    namespace tun = opendat::tunables;
    ProgressPolicy p;
    switch (tun::read_choice(tun::kTcpProgress)) {  // "adaptive,busy,sleep"
        case 1:
            p.mode = Mode::Busy;
            break;
        case 2:
            p.mode = Mode::Sleep;
            break;
        default:
            break;
    }
    p.spin_us = static_cast<std::uint32_t>(tun::read_int(tun::kTcpSpinUs));
    p.wait_spin_us = static_cast<std::uint32_t>(tun::read_int(tun::kTcpWaitSpinUs));
    p.tx_batch = static_cast<std::uint32_t>(tun::read_int(tun::kTcpTxBatch));
    const long gap = tun::read_int(tun::kTcpTxBurstGapNs);
    p.burst_gap = gap > 0 ? std::chrono::nanoseconds{gap} : measured_burst_gap();
    DAPL_TRC(trace::kInfo, "tcp.batch", "posts closer than %lld ns form a burst (%s)",
             static_cast<long long>(p.burst_gap.count()),
             gap > 0 ? "DAT_TCP_TX_BURST_GAP_NS" : "measured: three empty recv() calls");
    if (p.mode == Mode::Sleep) p.spin_us = p.wait_spin_us = 0;
    // Busy progress never sleeps, so a consumer's epoll_wait would only compete with it.
    p.wait_in_epoll = tun::read_choice(tun::kTcpWaitSleep) == 0 && p.mode != Mode::Busy;
    // A held write goes at the consumer's next progress call: a dat_evd_wait that sleeps
    // on its EVD (not in the engine) makes none, and would leave it to the kernel.
    p.cork_writes = tun::read_choice(tun::kTcpCorkWrites) == 0 && p.wait_in_epoll;
    p.cork_hold_ms = static_cast<std::uint32_t>(tun::read_int(tun::kTcpCorkHoldMs));
    return p;
}

Engine::Engine(const ProgressPolicy &policy) : policy_(policy) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    evfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    cork_wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // -1: poll() skips it
    if (epfd_ < 0 || evfd_ < 0) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;  // nullptr = the wakeup eventfd
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, evfd_, &ev) != 0) return;
    if (policy_.wait_in_epoll) {
        inline_wake_.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        // Without it, inline waits are off: consumers sleep on their EVDs.
        if (inline_wake_.fd >= 0 && !add(inline_wake_.fd, &inline_wake_, EPOLLIN)) {
            close(inline_wake_.fd);
            inline_wake_.fd = -1;
        }
    }
    thread_ = std::thread([this] { run(); });
    ok_ = true;
}

Engine::~Engine() {
    stop_.store(true);
    wake();
    if (thread_.joinable()) thread_.join();
    // What the thread parked since its last drain, and what its drains retired, go once
    // every call that may have checked them has returned (grace::synchronize deletes
    // them): before the objects still live, which may not outlive the engine.
    parked_.drain();
    util::grace::synchronize();
    for (Pollable *p : live_) delete p;
    if (inline_wake_.fd >= 0) close(inline_wake_.fd);
    if (evfd_ >= 0) close(evfd_);
    if (cork_wake_fd_ >= 0) close(cork_wake_fd_);
    if (epfd_ >= 0) close(epfd_);
}

bool Engine::add(int fd, Pollable *p, std::uint32_t events) noexcept {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = p;
    return epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

bool Engine::modify(int fd, Pollable *p, std::uint32_t events) noexcept {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = p;
    return epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) == 0;
}

void Engine::remove_fd(int fd) noexcept {
    epoll_event ev{};
    epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, &ev);
}

void Engine::adopt(Pollable *p) {
    std::lock_guard lk(mu_);
    live_.insert(p);
}

void Engine::retire(Pollable *p) noexcept {
    Pollable *was = p;
    hot_.compare_exchange_strong(was, nullptr);
    // Marked before detached_ is cleared: a detach_hot that records p too late for this
    // clear then finds the mark, and clears it itself (both sequentially consistent).
    p->retired_.store(true);
    was = p;
    detached_.compare_exchange_strong(was, nullptr);  // its socket is closed, not put back
    uncorked(p);                                      // likewise, after the mark (cork)
    {
        std::lock_guard lk(mu_);
        live_.erase(p);
        ticking_.erase(p);
    }
    parked_.park(p);  // cannot park: leaked rather than risk a use-after-free
}

bool Engine::cork(Pollable *p) noexcept {
    // Without the inline waker a dat_evd_wait sleeps on its EVD: no consumer round would
    // ever send a held write.
    if (inline_wake_.fd < 0) return false;
    Pollable *none = nullptr;
    if (!corked_.compare_exchange_strong(none, p)) return false;
    // As detach_hot: retire() marks p before it clears corked_, so either it clears what we
    // recorded, or we find the mark (both sequentially consistent).
    if (p->retired_.load()) {
        uncorked(p);
        return false;
    }
    // The progress thread sends a hold that nothing follows (push_stale_hold): it must not
    // be asleep for long. Pairs with sleep_ms (sequentially consistent): either it sees
    // corked_ set, or we see that it sleeps long, and wake it where it sleeps: in the
    // epoll set (no consumer sleeps there then), or on its own eventfds while a consumer
    // owns the progress (evfd_ would end that consumer's inline wait: cork_wake_fd_).
    if (policy_.cork_hold_ms > 0) {
        if (!cork_seen_.load(std::memory_order_relaxed)) cork_seen_.store(true);
        switch (sleeps_long_.load()) {
            case kLongInSet:
                wake();
                break;
            case kLongStandby:
                sys::signal_eventfd(cork_wake_fd_);
                break;
            default:
                break;
        }
    }
    return true;
}

int Engine::sleep_ms(int wait_ms, bool standby) noexcept {
    const int hold = static_cast<int>(policy_.cork_hold_ms);
    if (!policy_.cork_writes || hold == 0) return wait_ms;
    const auto slice = [&] {
        if (cork_slices_ > 0) --cork_slices_;
        return wait_ms >= 0 && wait_ms < hold ? wait_ms : hold;
    };
    // Holds came lately: slices, for kCorkSlices more (a run of holds spaced wider than a
    // slice then costs its posters no wake-up each).
    if (cork_seen_.exchange(false)) cork_slices_ = kCorkSlices;
    if (cork_slices_ > 0 || corked_.load() != nullptr) return slice();
    if (wait_ms >= 0 && wait_ms <= kBackoffMaxMs) return wait_ms;  // short anyway
    sleeps_long_.store(standby ? kLongStandby : kLongInSet);
    if (cork_seen_.exchange(false) || corked_.load() != nullptr) {
        sleeps_long_.store(kAwake);
        cork_slices_ = kCorkSlices;
        return slice();
    }
    return wait_ms;
}

void Engine::after_sleep() noexcept {
    if (sleeps_long_.load(std::memory_order_relaxed) != kAwake)
        sleeps_long_.store(kAwake, std::memory_order_relaxed);
}

void Engine::push_stale_hold() noexcept {
    if (!policy_.cork_writes || policy_.cork_hold_ms == 0) return;
    // No dispatch lock (a consumer may sleep holding it): p, read after this thread's last
    // drain of parked objects, is freed only by its next one (retire() clears corked_
    // before it parks p).
    if (Pollable *p = corked_.load())
        p->push_if_stale(std::chrono::milliseconds(policy_.cork_hold_ms));
}

void Engine::push_corked_now() noexcept {
    // Under dispatch_mu_: p, recorded before any retire() could clear it, is not freed
    // meanwhile (that takes the dispatch lock).
    if (Pollable *p = corked_.exchange(nullptr)) p->uncork();
}

void Engine::want_ticks(Pollable *p, bool on) noexcept {
    bool first = false;
    {
        std::lock_guard lk(mu_);
        try {
            if (on) {
                // A retired object never ticks again: it is parked for deletion, and a tick
                // list that still named it would call into freed memory (a listener can
                // admit a pending connection that another path has just retired).
                if (live_.count(p) == 0) return;
                first = ticking_.empty();
                ticking_.insert(p);
            } else {
                ticking_.erase(p);
            }
        } catch (...) {
        }
    }
    if (first) wake();  // the thread may be sleeping without a timeout
}

void Engine::wake() noexcept {
    sys::signal_eventfd(evfd_);
}

[[gnu::hot]] void Engine::dispatch(epoll_event *events, int n, bool progress_thread) noexcept {
    for (int i = 0; i < n; ++i) {
        auto *p = static_cast<Pollable *>(events[i].data.ptr);
        if (p == nullptr) {
            // The wakeup is for the progress thread (e.g. to start ticking): only it
            // drains the eventfd.
            if (progress_thread) {
                std::uint64_t v;
                [[maybe_unused]] ssize_t r = sys::read(evfd_, &v, sizeof v);
            }
            continue;
        }
        if ((events[i].events & EPOLLIN) && p->hot_capable())
            hot_.store(p, std::memory_order_release);
        p->on_events(events[i].events);
    }
}

[[gnu::hot]] void Engine::poll_inline() noexcept {
    // Not a read-modify-write: concurrent pollers may lose a count, the value still moves.
    inline_polls_.store(inline_polls_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    std::unique_lock dlk(dispatch_mu_, std::try_to_lock);
    if (!dlk.owns_lock()) {
        // Another thread dispatches, and it may be waiting for a lock this consumer has
        // just let go (its endpoint's, after a post). Where nothing preempts a thread that
        // spins, it must give way, or that thread may not run again for long: valgrind runs
        // one thread at a time and by default hands its lock back to the thread that
        // released it (docs/tcp-provider.md, "Under valgrind": a polled datbench run under
        // lackey stopped for good, 4 runs of 4). Yields alone did not hold, the lock is
        // taken back before the other thread, on the other CPU, has woken up; a short
        // sleep gives it the time. It comes only after thousands of misses in a row, when
        // the lock has been held for long (a big receive round, on a real kernel), and
        // never while a consumer waits in wait_inline: that one holds the lock for as long
        // as it sleeps in epoll_wait, and dispatches what this poller looks for. The count
        // is a read-modify-write (on this path only), so that a reset by a poller that got
        // the lock is never overwritten by an older count.
        const unsigned m = dispatch_misses_.fetch_add(1, std::memory_order_relaxed) + 1;
        if (m % kNapAfterMisses == 0 && !inline_owner_.load(std::memory_order_relaxed))
            sys::nanosleep(&kMissNap);  // not a cancellation point (sys_io.hpp)
        else if (m % kYieldAfterMisses == 0)
            sched_yield();
        return;
    }
    if (dispatch_misses_.load(std::memory_order_relaxed) != 0)
        dispatch_misses_.store(0, std::memory_order_relaxed);
    push_corked();
    Pollable *h = hot_.load(std::memory_order_acquire);
    if (h != streak_of_) {
        // Another connection is the busy one now (or none): the one out of the set goes
        // back, or nobody would read it.
        reattach_detached();
        streak_of_ = h;
        streak_ = 0;
    }
    // The busy connection first, straight from its socket; every kHotEvery-th round (and
    // whenever there is none) epoll, for everything else, unless the progress thread
    // watches the rest of the set (rounds_off_): an epoll round is blind to the busy
    // socket for a whole system call (docs/benchmarks.md, "The rest of the round trip").
    if (h != nullptr &&
        (rounds_off_.load(std::memory_order_relaxed) || ++hot_rounds_ % kHotEvery != 0)) {
        if (h->poll_hot(true) == Pollable::HotRound::Gone)
            hot_.compare_exchange_strong(h, nullptr);
        else if (++streak_ % kDetachAfter == 0)
            detach_hot(h);  // again every kDetachAfter rounds: a send may have put it back
        return;
    }
    poll_epoll(h);
}

// poll_inline's epoll round, a call of its own: its event array (kBatch events) in
// poll_inline's frame put the busy connection's every round (poll_hot and what it calls)
// that much deeper in the stack, on lines that the dequeue and the posts around it do not
// touch (docs/benchmarks.md).
[[gnu::hot, gnu::noinline]] void Engine::poll_epoll(Pollable *h) noexcept {
    epoll_event events[kBatch];
    int n = sys::epoll_wait(epfd_, events, kBatch, 0);
    if (n > 0) dispatch(events, n, false);
    if (h == nullptr) return;
    if (others_ready(events, n))
        quiet_turns_ = 0;
    else if (++quiet_turns_ >= kQuietTurns && detached_.load() == h)
        stop_rounds();
}

[[gnu::hot]] bool Engine::others_ready(const epoll_event *events, int n) const noexcept {
    for (int i = 0; i < n; ++i) {
        const void *p = events[i].data.ptr;
        if (p != nullptr && p != &inline_wake_) return true;
    }
    return false;
}

void Engine::stop_rounds() noexcept {
    quiet_turns_ = 0;
    // Pairs with run(): either the thread sees the flag before it chooses how to back off,
    // or we see it backing off and wake it, so that it watches the set from now on (both
    // sequentially consistent).
    rounds_off_.store(true);
    if (backing_off_.load()) wake();
}

[[gnu::hot]] void Engine::detach_hot(Pollable *h) noexcept {
    if (!h->leave_poll_set()) return;
    Pollable *was = detached_.exchange(h);
    // The application may have freed h on another thread since leave_poll_set let go of
    // h's lock (dat_ep_free: its destroy, then retire). A retire before the exchange had
    // nothing to clear, and h goes at the thread's next drain: detached_ must not name it
    // then. retire() marks h before it clears detached_, so either it clears what we
    // recorded, or we find the mark here and clear it ourselves. h is not freed while we
    // look: that takes the dispatch lock, which every caller of ours holds.
    if (h->retired_.load()) {
        Pollable *gone = h;
        detached_.compare_exchange_strong(gone, nullptr);
    }
    // Already recorded (the periodic detach, after a send may have put the socket back):
    // the thread was told when h first left, and has not put it back since (it would have
    // cleared detached_). No wake-up: it may be watching the set (watch()), every
    // kDetachAfter polls.
    if (was == h) return;
    if (was != nullptr) was->rejoin_poll_set();
    // Pairs with run(): either the thread finds h here before it looks, or we find it
    // looking (both sequentially consistent) and wake it, so that it never sleeps without
    // h's socket in the set while nobody polls h.
    if (in_epoll_.load()) wake();
}

[[gnu::hot]] void Engine::reattach_detached() noexcept {
    if (detached_.load(std::memory_order_relaxed) == nullptr) return;  // the common case
    // The socket is back in the set: the poller asks epoll again (the thread stops watching
    // at its next look, or it would be woken by every message of the busy connection).
    rounds_off_.store(false);
    if (Pollable *p = detached_.exchange(nullptr)) p->rejoin_poll_set();
}

void Engine::hand_back() noexcept {
    // Pairs with run(): either the thread sees the flag before it backs off, or we see it
    // backing off and wake it (both sequentially consistent).
    handed_back_.store(true);
    if (backing_off_.load()) wake();
}

void Engine::InlineWake::on_events(std::uint32_t) noexcept {
    std::uint64_t v;
    [[maybe_unused]] ssize_t r = sys::read(fd, &v, sizeof v);
}

[[gnu::hot]] bool Engine::begin_inline_wait() noexcept {
    if (inline_wake_.fd < 0 || inline_owner_.exchange(true)) return false;
    // The thread backs off from here on (run()), and must be out of epoll_wait before we
    // go in: two sleepers on one set would both wake for every arrival. Either it sees
    // the owner before it goes in, or we see it in there (both sequentially consistent).
    inline_polls_.fetch_add(1, std::memory_order_relaxed);
    if (in_epoll_.load()) {
        wake();
        using Clock = std::chrono::steady_clock;
        const auto give_up = Clock::now() + std::chrono::milliseconds(2);
        while (in_epoll_.load()) {
            if (Clock::now() >= give_up) {  // descheduled for long: wait the ordinary way
                end_inline_wait();
                return false;
            }
            sched_yield();  // it may share our CPU
        }
    }
    return true;
}

[[gnu::hot]] bool Engine::wait_inline(std::uint32_t timeout_us, std::uint64_t seen) noexcept {
    const int ms =
        timeout_us == UINT32_MAX
            ? -1
            : static_cast<int>((std::uint64_t{timeout_us} + 999) / 1000);  // never returns early
    // Held from epoll_wait until the events are dispatched, as for every dispatcher: no
    // object in the results is freed meanwhile (the thread drains parked objects only
    // when it gets this lock).
    std::lock_guard dlk(dispatch_mu_);
    // A wake since the owner last looked at its condition: its eventfd may be drained
    // already, by a poller's epoll round (poll_inline) between that look and this lock.
    // Looked at under the lock that every drain holds: a later wake's eventfd is still
    // full when epoll_wait below looks (wake_inline counts before it writes).
    push_corked();  // before it looks or sleeps: the peer may wait for that write
    if (inline_wakes_.load() != seen) return true;
    reattach_detached();  // this thread sleeps in the set now: everything must be in it
    streak_ = 0;
    epoll_event events[kBatch];
    int n = 0;
    // Adaptive, as the progress thread: after activity, look without sleeping for
    // DAT_TCP_SPIN_US first. The next request of a one-sided exchange (an RDMA read at a
    // passive target whose application waits for something else) comes within that time
    // and is answered without a wake-up. (A wait may end up to that much late, never early.)
    // It reads the busy connection's socket directly in most rounds, as the thread's spin.
    if (inline_active_ && policy_.spin_us > 0) {
        using Clock = std::chrono::steady_clock;
        const auto until =
            Clock::now() + std::chrono::microseconds(std::min(policy_.spin_us, timeout_us));
        for (unsigned i = 1;; ++i) {
            if (hot_turn(&hot_rounds_)) {
                // Something happened (maybe an event for this consumer, posted on its own
                // thread, which wakes nobody): the caller looks, as after a dispatch.
                if (poll_hot_locked()) {  // inline_active_ stays set
                    inline_polls_.fetch_add(1, std::memory_order_relaxed);
                    return true;
                }
            } else {
                n = sys::epoll_wait(epfd_, events, kBatch, 0);
                if (n != 0) break;
            }
            if (i % 16 == 0 && Clock::now() >= until) break;
        }
    }
    if (n == 0) n = sys::epoll_wait(epfd_, events, kBatch, ms);
    inline_active_ = n > 0;
    if (n <= 0) return true;  // timed out or interrupted: the caller looks at its clock
    bool thread_wanted = false;
    for (int i = 0; i < n; ++i) thread_wanted |= events[i].data.ptr == nullptr;
    dispatch(events, n, false);
    inline_polls_.fetch_add(1, std::memory_order_relaxed);
    return !thread_wanted;
}

[[gnu::hot]] void Engine::end_inline_wait() noexcept {
    inline_owner_.store(false);
    // Pairs with run()'s long stand-by: a thread that saw us own the progress for long
    // sleeps until told; otherwise it takes over within kBackoffMs by itself.
    if (standby_long_.load()) wake();
}

void Engine::wake_inline() noexcept {
    inline_wakes_.fetch_add(1);  // before the write: see wait_inline
    sys::signal_eventfd(inline_wake_.fd);
}

[[gnu::hot]] Engine::Found Engine::spin(epoll_event *events, std::uint64_t polls_at_start,
                                        std::uint32_t us) noexcept {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::microseconds(us);
    for (std::uint32_t i = 1;; ++i) {
        // The busy connection straight from its socket, as a polling consumer does
        // (poll_inline): a request that nobody on this side waits for (an RDMA read at a
        // passive target) then costs its recv() alone, not an epoll_wait and a recv()
        // (docs/benchmarks.md, "The passive side's busy connection").
        if (hot_turn(&spin_rounds_)) {
            if (hot_round()) return {0, true};
        } else {
            int n = sys::epoll_wait(epfd_, events, kBatch, 0);
            if (n != 0) return {n, false};
        }
        if (stop_.load(std::memory_order_relaxed)) return {};
        // A consumer polls now: leave the events to it (run() backs off).
        if (inline_polls_.load(std::memory_order_relaxed) != polls_at_start) return {};
        if (i % 16 == 0 && Clock::now() >= deadline) return {};
        // Adaptive: the consumer this thread just woke may share our CPU; let it run first:
        // right after the events that woke it were dispatched (the first round), then every
        // kYieldEvery-th round. Not every round: a yield is a system call (1 us on a VM),
        // and a round twice as long is noticed twice as late. The next request of a
        // one-sided exchange (an RDMA read at a target whose application is away) waited
        // for it: RDMA read 1.32x -> 1.22x raw (8 alternated pairs, docs/benchmarks.md).
        if (policy_.mode != ProgressPolicy::Mode::Busy && (i == 1 || i % kYieldEvery == 0))
            sched_yield();
    }
}

[[gnu::hot]] bool Engine::hot_turn(unsigned *rounds) const noexcept {
    // The count goes on across calls: a connection busy in every round ends each call
    // with that round, and must not keep the epoll round from ever coming.
    return ++*rounds % kHotEvery != 0 && hot_.load(std::memory_order_relaxed) != nullptr;
}

[[gnu::hot]] bool Engine::hot_round() noexcept {
    bool moved, owed;
    {
        std::unique_lock dlk(dispatch_mu_, std::try_to_lock);
        if (!dlk.owns_lock()) return false;
        moved = poll_hot_locked();
        owed = take_owed_yield();
    }
    pay_yield(owed);
    return moved;
}

void Engine::progress_dispatch(epoll_event *events, int n) noexcept {
    bool owed;
    {
        std::unique_lock dlk(dispatch_mu_);
        dispatch(events, n, true);
        owed = take_owed_yield();
    }
    pay_yield(owed);
}

[[gnu::hot]] void Engine::pay_yield(bool owed) noexcept {
    // Not under the dispatch lock: off the CPU with it, this thread would hold up every
    // other connection and every inline poller until it runs again.
    if (owed && policy_.mode != ProgressPolicy::Mode::Busy) [[unlikely]]
        sched_yield();
}

[[gnu::hot]] bool Engine::poll_hot_locked() noexcept {
    // hot_ is read under dispatch_mu_, as in poll_inline: a retired object it may still
    // name is freed only under that lock, after hot_ is cleared (run()).
    Pollable *h = hot_.load(std::memory_order_acquire);
    if (h == nullptr) return false;
    const Pollable::HotRound r = h->poll_hot(false);
    if (r == Pollable::HotRound::Gone) hot_.compare_exchange_strong(h, nullptr);
    return r != Pollable::HotRound::Quiet;
}

[[gnu::hot]] void Engine::run() noexcept {
    epoll_event events[kBatch];
    std::vector<Pollable *> ticks;
    const bool busy = policy_.mode == ProgressPolicy::Mode::Busy;
    bool active = false;  // the last round found events: adaptive mode polls before sleeping
    while (!stop_.load()) {
        bool ticking;
        {
            // Everything parked before this epoll_wait cannot appear in its results, nor
            // in an inline poller's (it holds dispatch_mu_ from its epoll_wait on). A
            // consumer may hold it for as long as its dat_evd_wait sleeps in epoll_wait:
            // then the parked objects wait for a later round.
            std::unique_lock dlk(dispatch_mu_, std::try_to_lock);
            // hot_ may name a parked object: retire() clears it, but a dispatch of events
            // fetched before the retirement sets it again. Every dispatch holds
            // dispatch_mu_, so once we have it, forgetting hot_ before the objects go
            // leaves an inline poller no freed connection to poll.
            // (A socket out of the set stays out: with hot_ forgotten, the next poller puts
            // it back, seeing the busy connection changed, or else we do, before we look.)
            if (dlk.owns_lock())
                parked_.drain([this] { hot_.store(nullptr, std::memory_order_release); });
            std::lock_guard lk(mu_);
            ticking = !ticking_.empty();
        }
        // Every round, not only after a sleep: a thread that spins from event to event
        // never sleeps.
        push_stale_hold();
        std::uint64_t polls = inline_polls_.load(std::memory_order_relaxed);
        const bool owned = inline_owner_.load();
        bool back_off = polls != seen_polls_ || owned;
        if (back_off) {
            backing_off_.store(true);
            // The polling consumer went to sleep (a consumer that owns the progress has not).
            if (!owned && handed_back_.exchange(false)) back_off = false;
        }
        if (back_off) {
            // A consumer is polling and making progress itself, or sleeps in our
            // epoll_wait (an inline wait). Were this thread in epoll_wait too, every
            // arrival would wake it as well: a context switch and a contended lock per
            // message, and on a small machine a core taken from the poller. Sleep on the
            // wakeup eventfd only, and look again shortly; once the count stops moving and
            // nobody owns the progress, the thread takes over again.
            int wait_ms = kBackoffMs;
            if (!owned) {
                wait_ms = backoff_ms_;
                backoff_ms_ = std::min(backoff_ms_ * 2, kBackoffMaxMs);
            } else {
                backoff_ms_ = kBackoffMs;  // end_inline_wait relies on kBackoffMs
            }
            if (owned && polls == seen_polls_) {
                // One inline wait that has found nothing for a while: no need to look
                // every millisecond; its end wakes us (end_inline_wait).
                standby_long_.store(true);
                if (inline_owner_.load()) wait_ms = ticking ? kTickMs : -1;
            }
            seen_polls_ = polls;
            if (!owned && rounds_off_.load()) {
                watch(events, sleep_ms(wait_ms, false));
            } else {
                pollfd p[2] = {{evfd_, POLLIN, 0}, {cork_wake_fd_, POLLIN, 0}};
                if (poll(p, 2, sleep_ms(wait_ms, true)) > 0) {
                    for (const pollfd &f : p) {
                        if (!(f.revents & POLLIN)) continue;
                        std::uint64_t v;
                        [[maybe_unused]] ssize_t r = sys::read(f.fd, &v, sizeof v);
                    }
                }
            }
            after_sleep();
            standby_long_.store(false);
            backing_off_.store(false);
            if (ticking) run_ticks(ticks);
            active = false;
            continue;
        }
        backing_off_.store(false);
        backoff_ms_ = kBackoffMs;
        seen_polls_ = polls;
        // From here until the results are dispatched the thread counts as in epoll_wait
        // (begin_inline_wait waits for it to leave; pairs with its owner check).
        in_epoll_.store(true);
        if (inline_owner_.load()) {
            in_epoll_.store(false);
            continue;
        }
        // Nobody polls now (or we would have backed off): the polled connection's socket
        // goes back into the set before we look (detach_hot pairs with in_epoll_).
        reattach_detached();
        Found found;
        if (busy)  // never sleeps; returns now and then for ticks and shutdown
            found = spin(events, polls, kTickMs * 1000u);
        else if (active && policy_.spin_us > 0)
            found = spin(events, polls, policy_.spin_us);
        int n = found.events;
        // Sleep only if the spin ended quietly and no consumer has started polling.
        if (n == 0 && !found.hot && !busy &&
            inline_polls_.load(std::memory_order_relaxed) == polls) {
            // Going to sleep in epoll_wait: a hand-back from before is served by it. (Cleared
            // only here: a hand-back must survive a round that ends in a back-off, or the
            // sleeping consumer's next arrival waits out the back-off.)
            handed_back_.store(false);
            n = sys::epoll_wait(epfd_, events, kBatch, sleep_ms(ticking ? kTickMs : -1, false));
            after_sleep();
        }
        active = n > 0 || found.hot;
        if (n < 0 && errno != EINTR) {
            in_epoll_.store(false);
            DAPL_TRC(trace::kError, "engine", "epoll_wait failed: errno %d", errno);
            break;
        }
        if (n > 0) progress_dispatch(events, n);
        in_epoll_.store(false);
        if (ticking) run_ticks(ticks);
    }
}

void Engine::watch(epoll_event *events, int wait_ms) noexcept {
    // As the ordinary round below: counted as in epoll_wait until the results are
    // dispatched, and never while a consumer owns the progress (begin_inline_wait).
    in_epoll_.store(true);
    if (inline_owner_.load()) {
        in_epoll_.store(false);
        return;
    }
    int n = sys::epoll_wait(epfd_, events, kBatch, wait_ms);
    if (n > 0) {
        // Something besides the busy connection: the poller asks epoll again from its next
        // turn (another busy connection is better served there than by our wake-ups). A
        // connection with data becomes the hot one, as when the poller finds it: the
        // consumer may be about to poll it.
        if (others_ready(events, n)) rounds_off_.store(false);
        progress_dispatch(events, n);
    }
    in_epoll_.store(false);
}

void Engine::run_ticks(std::vector<Pollable *> &ticks) noexcept {
    try {
        std::lock_guard lk(mu_);
        ticks.assign(ticking_.begin(), ticking_.end());
    } catch (...) {
        return;
    }
    auto now = std::chrono::steady_clock::now();
    // A ticking object is only parked by retire(), which also un-ticks it, and parked
    // objects are deleted only at the top of the loop: safe to call.
    for (Pollable *p : ticks) p->on_tick(now);
}

}  // namespace opendat::tcp

#include "util/grace.hpp"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "trace/trace.hpp"

namespace opendat::util::grace {

namespace detail {
bool g_asymmetric = false;
std::atomic<bool> g_pending{false};
std::atomic<std::uint64_t> g_unslotted{0};
}  // namespace detail

namespace {

using namespace detail;

std::atomic<Slot *> g_slots{nullptr};
// The first slots, for the first threads: static, so that a provider library unloaded
// while its threads live leaves no heap block behind (LeakSanitizer). More come from the
// heap and are never freed either (a thread that exits gives its slot to the next).
constexpr std::size_t kPool = 256;
Slot g_pool[kPool];
std::atomic<std::size_t> g_pool_used{0};
pthread_key_t g_key;
bool g_key_made = false;

// What a retired object waits for: `slot` to move on from the odd count `seq`; for
// slot == nullptr, the threads without a slot to be at most `seq` (the retiring one).
struct Wait {
    Slot *slot;
    std::uint64_t seq;
};
struct Retired {
    Retired() = default;
    // Takes the vectors over only when emplace_back constructs it, once the list has room:
    // if growing the list throws, the caller's batch is still whole. (A constructor, not
    // an aggregate: clang before 16 cannot emplace an aggregate.)
    Retired(std::vector<Deferred> &&b, std::vector<Wait> &&w) noexcept
        : batch(std::move(b)), waits(std::move(w)) {}
    std::vector<Deferred> batch;  // deleted in this order
    std::vector<Wait> waits;
};

std::mutex g_mu;  // guards g_retired, g_exiting and the counts below (trivially destroyed)
// The list itself is never destroyed (its storage is this library's own): a progress
// thread of an IA the program left open may still retire or delete while this library's
// static destructors run at exit. What it holds is let go then (ReleaseAtExit).
alignas(std::vector<Retired>) unsigned char g_retired_storage[sizeof(std::vector<Retired>)];
std::vector<Retired> &g_retired = *new (g_retired_storage) std::vector<Retired>;
// The list is g_retired[g_head..], oldest first: taken from the front without moving the
// rest (a backlog behind a long call costs no quadratic time), compacted now and then.
std::size_t g_head = 0;
bool list_empty() noexcept {
    return g_head == g_retired.size();
}
Retired take_front() noexcept {
    Retired r = std::move(g_retired[g_head++]);
    if (g_head == g_retired.size()) {
        g_retired.clear();  // keeps its memory
        g_head = 0;
    } else if (g_head >= 64 && 2 * g_head >= g_retired.size()) {
        g_retired.erase(g_retired.begin(), g_retired.begin() + static_cast<long>(g_head));
        g_head = 0;
    }
    return r;
}
// Batches ever retired (run at once or put on the list), and of those, how many have been
// deleted (or let go at exit or in a fork's child). They run one at a time in order, so
// batch n has gone once g_finished > n (synchronize).
std::uint64_t g_listed = 0, g_finished = 0;
bool g_exiting = false;
// At exit (or when the provider is unloaded): the list's memory goes, so that
// LeakSanitizer finds nothing of ours; objects still waiting for their grace period, and
// any retired from now on, are leaked, never freed under a call in flight.
struct ReleaseAtExit {
    ~ReleaseAtExit() {
        std::lock_guard lk(g_mu);
        g_exiting = true;
        std::vector<Retired>().swap(g_retired);
        g_head = 0;
        g_finished = g_listed;
        g_pending.store(false, std::memory_order_relaxed);
    }
} g_release_at_exit;
bool g_runner = false;  // a thread is running deletions (run_due); guarded by g_mu

void on_thread_exit(void *p) noexcept {
    auto *s = static_cast<Slot *>(p);
    t_state.slot = nullptr;
    t_state.depth = 0;
    // A thread that ended inside a call (pthread_exit from an agent, a cancellation):
    // its call is over.
    const std::uint64_t v = s->seq.load(std::memory_order_relaxed);
    if (v & 1u) s->seq.store(v + 1, std::memory_order_release);
    s->owned.store(false, std::memory_order_release);  // for the next thread to take
    // As leave(): what waited for that call is due now, and nobody else may come by soon.
    if (v & 1u) {
        detail::full_fence();
        if (g_pending.load(std::memory_order_relaxed)) detail::poll();
    }
}

// In a fork's child only the forking thread lives: the others' calls ended with them.
// The child is a new memory map, which membarrier knows nothing of yet: registered again
// (or readers fence from now on; no other thread is inside a call to mind the change).
// (While the fork is under way g_mu is held: an atfork handler of the application's that
// called a DAT entry point then, with a deletion pending, would wait for it for ever.)
void on_fork_prepare() noexcept {
    g_mu.lock();  // the list of retired objects is whole in the child
}

void on_fork_parent() noexcept {
    g_mu.unlock();
}

void on_fork_child() noexcept {
    g_mu.unlock();
    if (g_asymmetric)
        g_asymmetric =
            syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    for (Slot *s = g_slots.load(std::memory_order_acquire); s != nullptr; s = s->next) {
        if (s == t_state.slot) continue;
        const std::uint64_t v = s->seq.load(std::memory_order_relaxed);
        if (v & 1u) s->seq.store(v + 1, std::memory_order_relaxed);
        s->owned.store(false, std::memory_order_relaxed);
    }
    g_unslotted.store(t_state.slot == nullptr && t_state.depth > 0 ? 1 : 0);
    // What the parent's threads retired names the parent's objects, and their
    // destructors may take locks those threads held: left undone (leaked) here, as the
    // deletions they were running at the fork.
    g_retired.clear();
    g_head = 0;
    g_finished = g_listed;
    g_pending.store(false);
    g_runner = false;
}

bool init() noexcept {
    // Registered once for the process; afterwards MEMBARRIER_CMD_PRIVATE_EXPEDITED makes
    // every running thread of ours execute a full barrier.
    g_asymmetric = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    g_key_made = pthread_key_create(&g_key, on_thread_exit) == 0;
    pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
    DAPL_TRC(trace::kDetail, "util", "grace periods: %s",
             g_asymmetric ? "membarrier" : "fenced entries (membarrier refused)");
    return true;
}

// A provider library unloaded while threads that called it live: no destructor of ours
// may run at their exit.
__attribute__((destructor)) void forget_thread_exits() {
    if (g_key_made) pthread_key_delete(g_key);
}

// Pairs with each entry's barrier (or fence): after it, a thread that is not seen inside
// a call sees every claim made before.
void heavy_fence() noexcept {
    full_fence();
    if (g_asymmetric && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        DAPL_TRC(trace::kError, "util", "membarrier failed: a call in flight may be missed");
}

std::uint64_t own_unslotted() noexcept {
    return t_state.slot == nullptr && t_state.depth > 0 ? 1 : 0;
}

bool passed(const Wait &w) noexcept {
    if (w.slot == nullptr) return g_unslotted.load(std::memory_order_acquire) <= w.seq;
    return w.slot->seq.load(std::memory_order_acquire) != w.seq;
}

// Calls f(wait) for each call in flight on another thread, after the barrier that pairs
// with the entries': what retire() waits for, and synchronize().
template <class F>
void each_call_in_flight(F f) {
    heavy_fence();
    for (Slot *s = g_slots.load(std::memory_order_acquire); s != nullptr; s = s->next) {
        if (s == t_state.slot) continue;
        const std::uint64_t v = s->seq.load(std::memory_order_acquire);
        if (v & 1u) f(Wait{s, v});
    }
    const std::uint64_t own = own_unslotted();
    if (g_unslotted.load(std::memory_order_acquire) > own) f(Wait{nullptr, own});
}

bool elapsed(const std::vector<Wait> &waits) noexcept {
    for (const Wait &w : waits)
        if (!passed(w)) return false;
    return true;
}

// Deletes the batches at the front of the list whose grace period is over, oldest first,
// one at a time and outside the lock (a destructor may retire more). Only one thread runs
// deletions at a time (g_runner), and never a batch before an older one: a free may
// depend on an earlier one (a device's protection domain goes only after the queue pairs
// that use it). Another thread that finds the runner busy leaves its batch to it: the
// runner looks again before it stops. Called with g_mu held.
void run_due(std::unique_lock<std::mutex> &lk) noexcept {
    if (g_runner) return;
    g_runner = true;
    while (!list_empty() && elapsed(g_retired[g_head].waits)) {
        Retired r = take_front();
        lk.unlock();
        for (const Deferred &d : r.batch) d();
        r = Retired{};  // its memory goes outside the lock too
        lk.lock();
        ++g_finished;
    }
    g_runner = false;
    g_pending.store(!list_empty(), std::memory_order_relaxed);
}

}  // namespace

namespace detail {

Slot *register_thread() noexcept {
    static const bool ready = init();
    (void)ready;
    Slot *s = nullptr;
    for (Slot *p = g_slots.load(std::memory_order_acquire); p != nullptr; p = p->next) {
        bool free = false;
        if (!p->owned.load(std::memory_order_relaxed) &&
            p->owned.compare_exchange_strong(free, true, std::memory_order_acquire)) {
            s = p;
            break;
        }
    }
    if (s == nullptr) {
        if (std::size_t i = g_pool_used.fetch_add(1); i < kPool)
            s = &g_pool[i];
        else
            s = new (std::nothrow) Slot;
        if (s == nullptr) {
            g_unslotted.fetch_add(1, std::memory_order_seq_cst);
            full_fence();  // as below: counted before the caller's handle check
            DAPL_TRC(trace::kError, "util", "no memory for a thread's call slot");
            return nullptr;
        }
        s->owned.store(true, std::memory_order_relaxed);
        s->seq.store(1, std::memory_order_relaxed);
        Slot *head = g_slots.load(std::memory_order_relaxed);
        do {
            s->next = head;
        } while (!g_slots.compare_exchange_weak(head, s, std::memory_order_release,
                                                std::memory_order_relaxed));
    } else {
        // The next odd count, whatever the slot's last owner left (even on exit).
        const std::uint64_t v = s->seq.load(std::memory_order_relaxed);
        s->seq.store(v & 1u ? v + 2 : v + 1, std::memory_order_relaxed);
    }
    // Inside (odd) and listed before the caller's handle check, whatever the freeing side's
    // barrier is: this once per thread.
    full_fence();
    t_state.slot = s;
    if (g_key_made) pthread_setspecific(g_key, s);
    return s;
}

void leave_unslotted() noexcept {
    g_unslotted.fetch_sub(1, std::memory_order_release);
    full_fence();  // the count before the look, as leave() (the store-buffer case)
    if (g_pending.load(std::memory_order_relaxed)) poll();
}

// Takes the lock, not just tries it: a thread that gave up because another held it (a
// retire looking at the list, which read our slot before we left) would leave the batch
// that waited for it, and with deletions in order every later one, to some later call.
// The lock is held only for looks at the list (run_due lets go of it while deleting), and
// this runs only while something waits (g_pending).
void poll() noexcept {
    std::unique_lock lk(g_mu);
    run_due(lk);
}

}  // namespace detail

void retire(std::vector<Deferred> batch) noexcept {
    if (batch.empty()) return;
    std::vector<Wait> waits;
    try {
        each_call_in_flight([&](const Wait &w) { waits.push_back(w); });
        std::unique_lock lk(g_mu);
        if (waits.empty() && list_empty() && !g_runner) {
            // No call in flight elsewhere and nothing older waiting to go: at once, as the
            // runner (a batch retired meanwhile waits for this one). The common case.
            g_runner = true;
            ++g_listed;
            lk.unlock();
            for (const Deferred &d : batch) d();
            lk.lock();
            ++g_finished;
            g_runner = false;
            run_due(lk);  // what other threads retired meanwhile
            return;
        }
        if (g_exiting) return;  // at exit: leaked (ReleaseAtExit)
        const bool waiting = !waits.empty();
        // Built in place once there is room: if that throws, the batch is still whole.
        g_retired.emplace_back(std::move(batch), std::move(waits));
        ++g_listed;
        g_pending.store(true, std::memory_order_relaxed);
        if (waiting) {
            lk.unlock();
            // Either a thread leaving its call from now on sees g_pending (and deletes on
            // its way out), or its leaving is seen by the look below.
            heavy_fence();
            lk.lock();
        }
        run_due(lk);  // those calls may have returned meanwhile; an older batch may be due
    } catch (...) {
        // Never freed early: without memory to note what they wait for, leaked.
        DAPL_TRC(trace::kError, "util", "no memory to retire %zu freed objects: leaked",
                 batch.size());
    }
}

void retire(Deferred d) noexcept {
    if (d.obj == nullptr) return;
    std::vector<Deferred> one;
    try {
        one.push_back(d);
    } catch (...) {
        DAPL_TRC(trace::kError, "util", "no memory to retire freed object %p: leaked", d.obj);
        return;
    }
    retire(std::move(one));
}

void retire_after_call(Deferred d) noexcept {
    if (d.obj == nullptr) return;
    try {
        std::vector<Deferred> one{d};
        std::vector<Wait> waits;
        each_call_in_flight([&](const Wait &w) { waits.push_back(w); });
        // And for the caller's own call: a runner on another thread must not run it while
        // the caller still holds what the deletion may need.
        if (t_state.depth > 0)
            waits.push_back(
                t_state.slot != nullptr
                    ? Wait{t_state.slot, t_state.slot->seq.load(std::memory_order_relaxed)}
                    : Wait{nullptr, 0});
        std::unique_lock lk(g_mu);
        if (g_exiting) return;  // at exit: leaked (ReleaseAtExit)
        g_retired.emplace_back(std::move(one), std::move(waits));
        ++g_listed;
        g_pending.store(true, std::memory_order_relaxed);  // the caller's leave() polls
        lk.unlock();
        heavy_fence();  // as in retire(): a thread leaving from now on sees g_pending
    } catch (...) {
        DAPL_TRC(trace::kError, "util", "no memory to retire freed object %p: leaked", d.obj);
    }
}

void synchronize() noexcept {
    Pause waiting;  // another thread in synchronize() waits for nobody who waits for it
    each_call_in_flight([](const Wait &w) {
        while (!passed(w)) std::this_thread::yield();
    });
    // Everything retired before now has passed its grace period, and so has what the calls
    // just waited for retired on their way out (a free racing a dat_ia_close): all of it
    // goes before this returns, so that a teardown that follows (the device closed, an
    // EpImpl deleted) comes after every deletion that may use it. Such a late batch may
    // still wait for calls that began after the look above: looked at again until it went.
    std::unique_lock lk(g_mu);
    const std::uint64_t target = g_listed;
    for (;;) {
        run_due(lk);  // returns at once while another thread runs deletions
        if (g_finished >= target) return;
        lk.unlock();
        each_call_in_flight([](const Wait &w) {
            while (!passed(w)) std::this_thread::yield();
        });
        std::this_thread::yield();
        lk.lock();
    }
}

std::size_t waiting() noexcept {
    std::lock_guard lk(g_mu);
    std::size_t n = 0;
    for (std::size_t i = g_head; i < g_retired.size(); ++i) n += g_retired[i].batch.size();
    return n;
}

std::size_t slots() noexcept {
    std::size_t n = 0;
    for (Slot *s = g_slots.load(std::memory_order_acquire); s != nullptr; s = s->next) ++n;
    return n;
}

}  // namespace opendat::util::grace

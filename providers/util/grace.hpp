// Grace periods: an object freed by one thread is deleted only once every call that was
// running on another thread at the time has returned.
//
// A handle check (util::as<T>) is a look at the object's magic. It holds for the moment
// it is made: a dat_ep_post_send that passed it can be overtaken by a dat_ep_free on
// another thread, and goes on to follow the EP's pointers into memory the free deleted
// (the transport's endpoint, an EVD's ring, an SRQ's receive slots, the IA's transport).
// Misuse by the application, but the peer of a check is "the memory it names stays
// reachable": the handle arena keeps the object's own bytes readable forever, and this
// keeps what they point to alive for as long as a call that checked them runs.
//
// Every entry point runs inside a Guard (util/no_cancel.hpp): the thread's slot says
// "inside a call" (an odd count) for its duration. A free claims the object first (its
// magic dies: no call that starts later gets past the check), then hands the deletion to
// retire(), which notes the slots of the other threads inside a call at that moment and
// deletes once each has moved on. That is usually at once (no other thread in a call);
// else a thread that returns later deletes it on its way out, once every batch retired
// before it has gone (deletions run one at a time, in retire order).
//
// Cost on the hot path: two plain stores to the thread's own slot. The ordering that a
// reader would otherwise pay a full fence for is paid by the freeing side, rarely, with
// one membarrier(2) (every running thread of the process executes a barrier); where the
// kernel refuses membarrier, readers fence themselves on the way in and out.
//
// Rules: a thread must not block for long inside a Guard (dat_evd_wait and dat_cno_wait
// sleep in a Pause, protected by their own wait counts); retire() is for objects the
// calling thread no longer uses; and a deletion may run on any thread that finds it due
// (in a call's way out, or a retire made under a lock): it takes no lock a retiring
// thread may hold, and never calls synchronize().
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "util/deferred_free.hpp"

namespace opendat::util::grace {

// One thread's count: odd while the thread is inside an entry point. A cache line of its
// own: written by its thread on every call, read by others only when they free.
struct alignas(64) Slot {
    std::atomic<std::uint64_t> seq{0};
    std::atomic<bool> owned{false};
    Slot *next = nullptr;  // the list of every slot ever made (never shortened)
};

namespace detail {
// The calling thread's slot and how deep it is in entry points (an entry may call another).
// One variable: one look-up of its place in the static TLS block per call. Initial-exec:
// in that block even in a dlopen'ed provider (as util/revocation_lock.hpp's debug count;
// a few bytes of glibc's reserve).
struct ThreadState {
    Slot *slot = nullptr;
    unsigned depth = 0;
};
__attribute__((tls_model("initial-exec"))) inline thread_local ThreadState t_state;
extern bool g_asymmetric;            // membarrier(2) registered: readers need no fence
extern std::atomic<bool> g_pending;  // some retired object waits for its grace period
// Threads inside a call that have no slot (no memory for one): counted together.
extern std::atomic<std::uint64_t> g_unslotted;
// This thread's slot, made on its first call and counted inside (odd); nullptr when
// there is no memory for one (the thread is then counted in g_unslotted).
Slot *register_thread() noexcept;
void leave_unslotted() noexcept;
void poll() noexcept;  // deletes what has waited long enough
// A full fence: leave()'s where there is no membarrier, and the freeing side's
// (ThreadSanitizer takes no fences: an atomic read-modify-write there).
inline void full_fence() noexcept {
#if defined(__SANITIZE_THREAD__)
    static std::atomic<int> word{0};
    word.fetch_add(0, std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}
}  // namespace detail

// Marks the calling thread inside an entry point (nests).
inline void enter() noexcept {
    using namespace detail;
    if (t_state.depth++ != 0) return;
    Slot *s = t_state.slot;
    if (s == nullptr) [[unlikely]] {
        register_thread();  // counts the thread inside, slot or no slot
        return;
    }
    const std::uint64_t v = s->seq.load(std::memory_order_relaxed) + 1;
    if (g_asymmetric) {
        s->seq.store(v, std::memory_order_relaxed);
        // The store before the handle check's load: the freeing side's membarrier pairs
        // with this compiler barrier.
        std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
        // A full fence between the store and the handle check's (acquire) load; a
        // sequentially consistent exchange alone does not order that load on every
        // architecture. ThreadSanitizer takes no fences (and models no reordering).
#if defined(__SANITIZE_THREAD__)
        s->seq.exchange(v, std::memory_order_seq_cst);
#else
        s->seq.store(v, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
    }
}

// The matching exit; the outermost one deletes what waited for this thread.
inline void leave() noexcept {
    using namespace detail;
    if (--t_state.depth != 0) return;
    Slot *s = t_state.slot;
    if (s == nullptr) [[unlikely]]
        return leave_unslotted();
    s->seq.store(s->seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    // The store before the load, in the code the compiler emits (a release store does not
    // keep a later load after it): the freeing side's membarrier orders them for the CPU.
    // Without membarrier, a fence does: else a retire that looks at our slot while our
    // store waits in the store buffer, and our look at g_pending that misses its batch,
    // would leave the batch (and every later one) for some later call to run.
    if (g_asymmetric) [[likely]]
        std::atomic_signal_fence(std::memory_order_seq_cst);
    else
        detail::full_fence();
    if (g_pending.load(std::memory_order_relaxed)) [[unlikely]]
        poll();
}

class Guard {
  public:
    Guard() noexcept { enter(); }
    ~Guard() { leave(); }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;
};

// Inside entry points (at any depth): the thread counts as outside while it blocks. A
// wait that may last for ever must not hold back every deletion of the process, nor may
// a thread that waits for another (joining a CNO's agent, grace::synchronize) be waited
// for by it. What the thread uses meanwhile must be held alive by other means
// (Evd::enter_wait), or be its own to free (a claimed object).
class Pause {
  public:
    Pause() noexcept : depth_(detail::t_state.depth) {
        if (depth_ == 0) return;
        detail::t_state.depth = 1;
        leave();
    }
    ~Pause() {
        if (depth_ == 0) return;
        enter();
        detail::t_state.depth = depth_;
    }
    Pause(const Pause &) = delete;
    Pause &operator=(const Pause &) = delete;

  private:
    unsigned depth_;
};

// Runs d (deletes the object) once every other thread that is inside an entry point now
// has returned from it: at once when there is none and nothing retired earlier still
// waits. The object must be claimed (dead to as<T>) already, and unused by the caller
// from here on. Deletions run one at a time, in the order they were retired, so a free
// that depends on an earlier one (a verbs protection domain after the queue pairs made
// in it) never overtakes it; they may run on another thread than the retiring one.
void retire(Deferred d) noexcept;
// The same for several, with one look at the calls in flight; deleted in their order.
void retire(std::vector<Deferred> batch) noexcept;
template <class T>
void retire(T *p) noexcept {
    retire(Deferred::of(p));
}
// The same, for a caller inside an entry point that holds a lock some deletion may need
// (the verbs dat_ep_modify holds the EP's lock, and destroying a queue pair may wait for
// the connection thread, which may wait for that lock): never run here, but on the way
// out of the calling thread's outermost entry point at the earliest, in order with every
// other. Outside an entry point, by the next thread that leaves one (or retires). The
// caller must not Pause (nor synchronize) later in the same call: a Pause ends the call
// as far as the wait is concerned, and its leave() could run the deletion right there.
void retire_after_call(Deferred d) noexcept;

// Returns once every other thread that is inside an entry point now has returned from
// it, and every object retired before has been deleted. For a teardown (dat_ia_close)
// that frees what calls in flight may still use. The caller counts as outside while it
// waits (a Pause: two closes at once must not wait for each other), so it must hold
// nothing another thread may free.
void synchronize() noexcept;

// For tests: objects waiting for their grace period; slots made so far.
std::size_t waiting() noexcept;
std::size_t slots() noexcept;

}  // namespace opendat::util::grace

// Event dispatchers and consumer notification objects.
//
// An EVD is a bounded ring of DAT_EVENTs sized at create/resize time, so posting an event
// (done by the transport's progress thread or inline by a post call) never allocates.
// Waiting uses a condition variable; an EVD attached to a CNO triggers it when an event
// arrives and nobody is waiting on the EVD itself.
//
// A transport whose completions do not pass through util (verbs: a completion queue)
// gives a DTO EVD an EvdBackend at create (Transport::evd_create_dto); dequeue, wait and
// resize then go to the backend, and the ring only carries the EVD's other streams.
#pragma once

#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "util/agent_calls.hpp"
#include "util/object.hpp"
#include "util/use_count.hpp"

namespace opendat::util {

struct Cno;
class Transport;

// The device side of a DTO EVD. A separate polymorphic object rather than a virtual Evd:
// handles are object addresses and the Header (the dispatch word) must sit at offset 0,
// where a vtable pointer would go. Owned by its EVD; called with no EVD lock held.
class EvdBackend {
  public:
    virtual ~EvdBackend() = default;
    // The dat_evd_* semantics, after util checked the handle and the output pointer (and,
    // for wait, the threshold and that the EVD is waitable and enabled).
    virtual DAT_RETURN dequeue(DAT_EVENT *out) noexcept = 0;
    virtual DAT_RETURN wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT *out,
                            DAT_COUNT *nmore) noexcept = 0;
    virtual DAT_RETURN resize(DAT_COUNT qlen) noexcept = 0;
    // dat_evd_set_unwaitable was called: release a waiter blocked outside util.
    virtual void unwaitable() noexcept {}
    // The EVD's CNO changed (create with a CNO, dat_evd_modify_cno, free). Either may be
    // nullptr.
    virtual void cno_changed(Cno * /*from*/, Cno * /*to*/) noexcept {}
    // An event was queued on the EVD's software ring (a connection, asynchronous or
    // software event of an EVD with mixed flags): wake a waiter blocked outside util.
    // Called with no EVD lock held.
    virtual void ring_posted() noexcept {}
};

struct Evd : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_EVD;

    // Made without a CNO: set_cno attaches one (it can refuse a CNO being freed).
    Evd(const DAT_PROVIDER *p, Ia *ia, DAT_COUNT qlen, DAT_EVD_FLAGS flags);

    // Queues one event (evd_handle is filled in here). False when the queue is full: the
    // event is dropped and the caller reports an overflow. `solicited`: whether the event
    // ends a solicited-only wait (below); only a successful receive of a message its sender
    // did not mark solicited, or a successful request, does not.
    bool post(const DAT_EVENT &ev, bool solicited = true) noexcept;

    // A run of events from one completion loop (a transport reaping what one sendmsg
    // finished), posted under one lock instead of one lock per event: the hot path of the
    // message rate. add() notifies a waiter on the condition variable as post() does
    // (under the lock, per event: the waiter takes the lock only when the batch ends);
    // the rest (an inline waiter's epoll, the CNO, the backend) happens when the batch
    // ends, after the lock is released, so that no callback runs with the EVD's lock held.
    // Nothing else may be done with this EVD while a batch holds it.
    class Batch {
      public:
        explicit Batch(Evd *evd) noexcept : evd_(evd) {}
        Batch(const Batch &) = delete;
        Batch &operator=(const Batch &) = delete;
        ~Batch() { finish(); }
        // As post(): false when the queue is full (the caller reports the overflow, after
        // finish(): reporting it posts on the async EVD, which may be this one).
        bool add(const DAT_EVENT &ev, bool solicited) noexcept;
        void finish() noexcept;

      private:
        Evd *evd_;
        std::unique_lock<std::mutex> lk_;
        Cno *cno_ = nullptr;  // the CNO the triggers are owed to
        int triggers_ = 0;    // CNO triggers owed: one per event, as post() does
        bool wake_inline_ = false;
        bool posted_ = false;
    };

    // DAT_COMPLETION_SOLICITED_WAIT_FLAG on a receive (or in the EP's
    // recv_completion_flags) of an EP whose receive EVD this is: from then on a
    // dat_evd_wait that has to block wakes only for an event posted as solicited (a
    // solicited message, an error, a non-DTO event), as a verbs CQ armed with
    // solicited_only; the other events are queued all the same and handed over with it,
    // or to a dequeue. A wait that finds its threshold met at once returns at once.
    void set_solicited_only() noexcept;

    // dat_evd_dequeue/wait/resize: the backend's if there is one, else the ring's.
    DAT_RETURN dequeue(DAT_EVENT *out) noexcept {
        return backend_ != nullptr ? backend_->dequeue(out) : ring_dequeue(out);
    }
    DAT_RETURN wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT *out,
                    DAT_COUNT *nmore) noexcept;
    DAT_RETURN resize(DAT_COUNT qlen) noexcept;

    // The software ring itself (a backend uses it for the EVD's non-DTO streams).
    // Dequeue: exactly DAT_QUEUE_EMPTY (no class bit) for an empty DTO EVD, as the
    // reference's CQ path does (dtest -p compares with the bare enumerator); other EVDs
    // answer DAT_CLASS_ERROR|DAT_QUEUE_EMPTY like the reference's software queues.
    DAT_RETURN ring_dequeue(DAT_EVENT *out) noexcept;
    DAT_RETURN ring_resize(DAT_COUNT qlen) noexcept;

    DAT_RETURN set_waitable(bool waitable) noexcept;
    DAT_RETURN set_enabled(bool enabled) noexcept;
    DAT_RETURN set_cno(Cno *cno) noexcept;
    DAT_COUNT qlen() const noexcept;
    DAT_EVD_STATE state() const noexcept;
    Cno *cno() const noexcept;
    DAT_COUNT pending() const noexcept;
    // Whether events wait to be dequeued, without the lock: a hint only (a transport's
    // guess that its consumer is busy with a burst), never a decision about an event.
    bool has_events_hint() const noexcept { return queued_.load(std::memory_order_relaxed) != 0; }

    const DAT_EVD_FLAGS flags;
    UseCount users;  // EPs/PSPs/RSPs naming this EVD: freeing it is refused
    // Other IAs opened with this EVD as their async EVD (counted in users too): its own IA
    // may not close, even abruptly, while they post there (entry::ia_close).
    std::atomic<int> lent_as_async{0};

    // dat_evd_wait calls inside this EVD (entry::evd_wait): a thread blocked in one must
    // not find the EVD destroyed under it. enter_wait() counts the caller in and is false
    // (counted out again) when the EVD is being freed; leave_wait() counts it out.
    bool enter_wait() noexcept;
    void leave_wait() noexcept { in_wait_.fetch_sub(1, std::memory_order_release); }
    bool has_waiter() const noexcept { return in_wait_.load(std::memory_order_acquire) != 0; }
    // Before the EVD is deleted (dat_evd_free, dat_ia_close): kills the handle, releases
    // every waiter (as dat_evd_set_unwaitable does) and returns once none is left inside.
    // False, doing nothing: another free claimed it first (util::claim).
    [[nodiscard]] bool retire() noexcept;
    // Set at create: whom an empty polling dequeue asks for inline progress.
    void set_progress(Transport *t) noexcept { progress_ = t; }
    // Set at create, before the handle is returned; told about the EVD's current CNO.
    void set_backend(std::unique_ptr<EvdBackend> b) noexcept;
    EvdBackend *backend() const noexcept { return backend_.get(); }

  private:
    // post()'s queueing, mu_ held: false when full. *wake_inline / *notify: what the
    // caller must do once the lock is released.
    bool post_locked(const DAT_EVENT &ev, bool solicited, bool *wake_inline, Cno **notify) noexcept;
    // A polling dequeue on this thread found the ring empty and runs the transport's
    // progress (ring_dequeue): the first event that progress posts here goes straight to
    // that dequeue's DAT_EVENT, not through the ring (a lock and a copy at each end, about
    // a sixth of a polled ping-pong's turnaround). Only while nothing is queued: seen
    // between two of the ring's critical sections, the hand-off is exactly a post followed
    // at once by this dequeue's pop, so no event can pass one queued before it. And only
    // with no CNO attached (it would miss the trigger that event owes it). True: handed
    // over.
    bool hand_off(const DAT_EVENT &ev) noexcept;
    bool pop_locked(DAT_EVENT *out) noexcept;
    // dat_evd_wait's checks of the EVD itself, for the ring and the backend alike.
    DAT_RETURN wait_checks_locked(DAT_COUNT threshold) const noexcept;
    // Progress inline until threshold events are queued, the EVD turns unwaitable, or the
    // transport's wait_spin_us() is over.
    enum class Spin { NotTried, Met, Spun };  // Met: the wait can end at once
    Spin spin_until(DAT_TIMEOUT timeout_us, DAT_COUNT threshold) noexcept;
    // Sleeps in the transport's progress (Transport::wait_inline) until the wait's
    // condition holds or *timeout_us passes; false if the transport would not have it.
    // True: *timeout_us is what the ordinary wait after it has left (0 once the condition
    // held or the time is up, so that it reports either at once).
    bool wait_in_progress(DAT_TIMEOUT *timeout_us, DAT_COUNT threshold, bool solicited_only,
                          std::uint64_t solicited_before) noexcept;
    DAT_RETURN ring_wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT *out,
                         DAT_COUNT *nmore) noexcept;

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<DAT_EVENT> ring_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    std::atomic<std::size_t> queued_{0};  // count_, for has_events_hint() and ring_dequeue
    bool enabled_ = true;
    bool waitable_ = true;
    bool solicited_only_ = false;
    std::uint64_t solicited_ = 0;  // events posted as solicited, ever (a waiter compares)
    int waiters_ = 0;
    // The waiter sleeps in the transport's progress (wait_in_progress), not on cv_: an
    // event posted from another thread than its own wakes it through the transport.
    bool inline_waiting_ = false;
    std::thread::id inline_tid_;
    Cno *cno_ = nullptr;
    std::atomic<bool> has_cno_{false};  // cno_ != nullptr, for hand_off (no lock there)
    Transport *progress_ = nullptr;
    std::atomic<int> in_wait_{0};          // see enter_wait()
    std::unique_ptr<EvdBackend> backend_;  // last: destroyed first, it may use the ring
};

struct Cno : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_CNO;

    Cno(const DAT_PROVIDER *p, Ia *ia, DAT_OS_WAIT_PROXY_AGENT agent);
    ~Cno();

    // An attached EVD got an event nobody waits for: wake a cno_wait and have the agent
    // called on the CNO's agent thread (util/agent_calls.hpp), never under the caller's
    // locks.
    void trigger(Evd *evd) noexcept;
    DAT_RETURN wait(DAT_TIMEOUT timeout_us, DAT_EVD_HANDLE *evd) noexcept;
    // False once dat_cno_free has begun (retire()): the agent stays stopped.
    [[nodiscard]] bool set_agent(DAT_OS_WAIT_PROXY_AGENT agent) noexcept;
    DAT_OS_WAIT_PROXY_AGENT agent() const noexcept;
    // An eventfd that every trigger() makes readable, for a transport that blocks
    // dat_cno_wait outside util (verbs: poll(2) on completion channels and this fd).
    // Made on first use and owned by the CNO; -1 if it cannot be made.
    int wake_fd() noexcept;

    UseCount users;  // attached EVDs
    // Triggers under way: an EVD picks its CNO under its own lock and triggers it after
    // the unlock (trigger may queue an agent call), so dat_evd_modify_cno can detach the
    // CNO in between. The EVD owes the trigger under its lock (owe_trigger) and pays it
    // after (pay_triggers: trigger, then settle); dat_cno_free calls wait_triggers() once
    // no EVD names the CNO (users == 0, so no debt can start), then frees it.
    std::atomic<int> triggering{0};
    void owe_trigger() noexcept { triggering.fetch_add(1, std::memory_order_relaxed); }
    void pay_triggers(Evd *evd, int n) noexcept;
    void wait_triggers() const noexcept;

    // dat_cno_wait calls inside this CNO, as for an EVD (Evd::enter_wait): retire() kills
    // the handle, ends every wait with DAT_INTERRUPTED_CALL and returns once none is left.
    bool enter_wait() noexcept;
    void leave_wait() noexcept { in_wait_.fetch_sub(1, std::memory_order_release); }
    [[nodiscard]] bool retire() noexcept;  // false: another free claimed it first
    // Ends the agent's thread (joins it, unless called from it); owed calls are dropped.
    void stop_agent() noexcept;

  private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    Evd *pending_ = nullptr;
    DAT_OS_WAIT_PROXY_AGENT agent_;
    std::shared_ptr<AgentCalls> calls_;  // started with the first agent; guarded by mu_
    int wake_fd_ = -1;                   // see wake_fd(); guarded by mu_
    bool closing_ = false;               // retire() was called; guarded by mu_
    std::atomic<int> in_wait_{0};
};

}  // namespace opendat::util

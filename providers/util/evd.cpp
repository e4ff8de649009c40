#include "util/evd.hpp"
#include "util/sys_io.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <type_traits>

#include "trace/trace.hpp"
#include "util/objects.hpp"  // Transport
#include "util/revocation_lock.hpp"

namespace opendat::util {

// A handle is the object's address and libdat2 reads the table pointer at offset 0: no
// vtable pointer may go there (a backend is a separate object, see EvdBackend).
static_assert(!std::is_polymorphic_v<Evd>);

namespace {
// A condition-variable wait with DAT's microsecond timeout (INFINITE = forever).
template <class Pred>
bool wait_for_us(std::condition_variable &cv, std::unique_lock<std::mutex> &lk,
                 DAT_TIMEOUT timeout_us, Pred pred) {
    if (timeout_us == DAT_TIMEOUT_INFINITE) {
        cv.wait(lk, pred);
        return true;
    }
    return cv.wait_for(lk, std::chrono::microseconds(timeout_us), pred);
}

// The dequeue this thread is in while it runs the transport's progress (Evd::hand_off):
// which EVD, where its caller wants the event, and whether an event went there. On the
// thread's own stack and seen by that thread only, so it needs no lock.
struct InlineSink {
    const Evd *evd;
    DAT_EVENT *out;
    bool filled;
};
// Initial-exec: one fs-relative load on every dequeue and post, where the default model
// in a dlopen'ed provider calls __tls_get_addr; a pointer of glibc's static TLS reserve,
// as util/revocation_lock.hpp's debug count takes (which also keeps LeakSanitizer's exit
// scan off a dynamic TLS block of an unloaded provider).
__attribute__((tls_model("initial-exec"))) thread_local InlineSink *t_sink = nullptr;
}  // namespace

Evd::Evd(const DAT_PROVIDER *p, Ia *ia, DAT_COUNT qlen, DAT_EVD_FLAGS f)
    : Header(p, kType, ia), flags(f), ring_(static_cast<std::size_t>(qlen)) {}

[[gnu::hot]] bool Evd::hand_off(const DAT_EVENT &ev) noexcept {
    InlineSink *s = t_sink;
    if (s == nullptr || s->evd != this || s->filled) return false;
    if (queued_.load(std::memory_order_acquire) != 0 || has_cno_.load(std::memory_order_relaxed))
        return false;
    *s->out = ev;
    s->out->evd_handle = this;
    s->filled = true;
    return true;
}

// Its callers (post, Batch::add) have checked the revocation-hold rule, before a hand-off.
[[gnu::hot]] bool Evd::post_locked(const DAT_EVENT &ev, bool solicited, bool *wake_inline,
                                   Cno **notify) noexcept {
    if (count_ == ring_.size()) {
        // dat_evd_post_se tells its caller (DAT_QUEUE_FULL), who may simply retry: no error
        // line for each try. Anything else is an event lost: an error, but rate-limited, as
        // a consumer that stopped dequeuing loses many in a burst.
        if (ev.event_number == DAT_SOFTWARE_EVENT)
            DAPL_TRC(trace::kInfo, "evd", "EVD %p full: software event refused (DAT_QUEUE_FULL)",
                     static_cast<void *>(this));
        else
            DAPL_TRC_RL(trace::kError, "evd", 10, "EVD %p overflow, event 0x%x dropped",
                        static_cast<void *>(this), ev.event_number);
        return false;
    }
    std::size_t at = head_ + count_;  // no division on the hot path
    if (at >= ring_.size()) at -= ring_.size();
    DAT_EVENT &slot = ring_[at];
    slot = ev;
    slot.evd_handle = this;
    ++count_;
    queued_.store(count_, std::memory_order_release);
    if (solicited) ++solicited_;
    if (waiters_ > 0) {
        if (!(solicited || !solicited_only_)) {
            // a solicited-only waiter sleeps on
        } else if (!inline_waiting_) {
            cv_.notify_all();
        } else {
            // The waiter sleeps in the transport's progress: it sees what it posts
            // itself; an event from another thread must end its epoll_wait.
            *wake_inline = *wake_inline || inline_tid_ != std::this_thread::get_id();
        }
    } else if (enabled_ && cno_ != nullptr) {
        cno_->owe_trigger();  // under our lock: see Cno::triggering
        *notify = cno_;
    }
    return true;
}

[[gnu::hot]] bool Evd::post(const DAT_EVENT &ev, bool solicited) noexcept {
    RevocationLock::assert_not_held("an event posted");  // Debug builds; before any path
    if (hand_off(ev)) return true;
    Cno *notify = nullptr;
    bool wake_inline = false;
    {
        std::lock_guard lk(mu_);
        if (!post_locked(ev, solicited, &wake_inline, &notify)) return false;
    }
    if (wake_inline) progress_->wait_inline_wake();
    if (notify != nullptr) notify->pay_triggers(this, 1);
    if (backend_ != nullptr) backend_->ring_posted();
    return true;
}

[[gnu::hot]] bool Evd::Batch::add(const DAT_EVENT &ev, bool solicited) noexcept {
    if (!lk_.owns_lock()) {
        RevocationLock::assert_not_held("an event posted");  // as post()
        if (evd_->hand_off(ev)) return true;  // the first of the batch, the ring empty
        lk_ = std::unique_lock(evd_->mu_);
    }
    Cno *notify = nullptr;
    if (!evd_->post_locked(ev, solicited, &wake_inline_, &notify)) return false;
    posted_ = true;
    if (notify != nullptr) {
        cno_ = notify;  // the same CNO for the whole batch: our lock is held throughout
        ++triggers_;
    }
    return true;
}

[[gnu::hot]] void Evd::Batch::finish() noexcept {
    // The CNO is triggered after the unlock, as post() does.
    if (lk_.owns_lock()) lk_.unlock();
    if (wake_inline_) evd_->progress_->wait_inline_wake();
    if (cno_ != nullptr) cno_->pay_triggers(evd_, triggers_);
    if (posted_ && evd_->backend_ != nullptr) evd_->backend_->ring_posted();
    wake_inline_ = false;
    posted_ = false;
    cno_ = nullptr;
    triggers_ = 0;
}

[[gnu::hot]] bool Evd::pop_locked(DAT_EVENT *out) noexcept {
    if (count_ == 0) return false;
    *out = ring_[head_];
    if (++head_ == ring_.size()) head_ = 0;
    --count_;
    queued_.store(count_, std::memory_order_release);
    return true;
}

[[gnu::hot]] DAT_RETURN Evd::ring_dequeue(DAT_EVENT *out) noexcept {
    // A polling consumer finds the ring empty far more often than not: look at the count
    // without the lock first (an event posted before whatever told the consumer to look
    // is seen here: its post stored the count before that signal, release/acquire).
    if (queued_.load(std::memory_order_acquire) != 0) {
        std::lock_guard lk(mu_);
        if (pop_locked(out)) return DAT_SUCCESS;
    }
    if (!(flags & DAT_EVD_DTO_FLAG)) return err(DAT_QUEUE_EMPTY);
    // No inline progress (a CQ-backed EVD): nothing new to look for.
    if (progress_ == nullptr) return DAT_QUEUE_EMPTY;
    // A polling consumer: let the transport receive on this thread (outside our lock:
    // progress posts events here), then look again. The first event it posts here comes
    // straight to `out` (hand_off). A dequeue nested in the progress (none is expected)
    // would have its own sink, and this one is put back after it.
    InlineSink sink{this, out, false};
    InlineSink *const outer = t_sink;
    t_sink = &sink;
    progress_->progress_inline();
    t_sink = outer;
    if (sink.filled) return DAT_SUCCESS;
    if (queued_.load(std::memory_order_acquire) == 0) return DAT_QUEUE_EMPTY;
    std::lock_guard lk(mu_);
    if (pop_locked(out)) return DAT_SUCCESS;
    // See the header: the bare code is what a polling dtest compares against.
    return DAT_QUEUE_EMPTY;
}

[[gnu::hot]] DAT_RETURN Evd::wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT *out,
                                  DAT_COUNT *nmore) noexcept {
    if (backend_ != nullptr) {
        {
            std::lock_guard lk(mu_);
            if (DAT_RETURN rc = wait_checks_locked(threshold); rc != DAT_SUCCESS) return rc;
        }
        return backend_->wait(timeout_us, threshold, out, nmore);
    }
    return ring_wait(timeout_us, threshold, out, nmore);
}

[[gnu::hot]] DAT_RETURN Evd::wait_checks_locked(DAT_COUNT threshold) const noexcept {
    if (threshold <= 0 || static_cast<std::size_t>(threshold) > ring_.size()) return bad_arg(3);
    if (!waitable_) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE);
    if (!enabled_) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_DISABLED);
    return DAT_SUCCESS;
}

[[gnu::hot]] Evd::Spin Evd::spin_until(DAT_TIMEOUT timeout_us, DAT_COUNT threshold) noexcept {
    if (progress_ == nullptr || !(flags & DAT_EVD_DTO_FLAG) || timeout_us == 0)
        return Spin::NotTried;
    std::uint32_t us = progress_->wait_spin_us();
    if (us == 0) return Spin::NotTried;
    if (timeout_us != DAT_TIMEOUT_INFINITE && timeout_us < us) us = timeout_us;
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::microseconds(us);
    for (std::uint32_t i = 1;; ++i) {
        {
            std::lock_guard lk(mu_);
            if (count_ >= static_cast<std::size_t>(threshold) || !waitable_) return Spin::Met;
        }
        progress_->progress_inline();
        if (i % 8 == 0 && Clock::now() >= deadline) break;
    }
    return Spin::Spun;
}

[[gnu::hot]] bool Evd::wait_in_progress(DAT_TIMEOUT *timeout_us, DAT_COUNT threshold,
                                        bool solicited_only,
                                        std::uint64_t solicited_before) noexcept {
    if (!progress_->wait_inline_begin()) return false;
    {
        std::lock_guard lk(mu_);
        if (waiters_ > 0 || wait_checks_locked(threshold) != DAT_SUCCESS) {
            progress_->wait_inline_end();
            return false;  // the ordinary path reports it
        }
        ++waiters_;
        inline_waiting_ = true;
        inline_tid_ = std::this_thread::get_id();
    }
    using Clock = std::chrono::steady_clock;
    const bool forever = *timeout_us == DAT_TIMEOUT_INFINITE;
    const auto deadline = Clock::now() + std::chrono::microseconds(forever ? 0 : *timeout_us);
    bool done = false;
    for (;;) {
        // Read before the look: a wake for an event posted after the look ends the sleep
        // below even if another thread drained its eventfd first (Transport::wait_inline).
        const std::uint64_t wakes = progress_->wait_inline_wakes();
        {
            std::lock_guard lk(mu_);
            if ((count_ >= static_cast<std::size_t>(threshold) &&
                 (!solicited_only || solicited_ != solicited_before)) ||
                !waitable_) {
                done = true;
                break;
            }
        }
        std::uint32_t us = DAT_TIMEOUT_INFINITE;
        if (!forever) {
            auto left =
                std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now())
                    .count();
            if (left <= 0) {
                done = true;  // timed out: the ordinary path's zero-timeout look says so
                break;
            }
            us = static_cast<std::uint32_t>(left);
        }
        if (!progress_->wait_inline(us, wakes)) break;  // the progress is wanted elsewhere
    }
    {
        std::lock_guard lk(mu_);
        --waiters_;
        inline_waiting_ = false;
    }
    progress_->wait_inline_end();
    if (done) {
        *timeout_us = 0;  // what is there is handed over (or the timeout reported) at once
    } else if (!forever) {
        auto left =
            std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
        *timeout_us = left > 0 ? static_cast<DAT_TIMEOUT>(left) : 0;
    }
    return true;
}

void Evd::set_solicited_only() noexcept {
    std::lock_guard lk(mu_);
    solicited_only_ = true;
}

[[gnu::hot]] DAT_RETURN Evd::ring_wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT *out,
                                       DAT_COUNT *nmore) noexcept {
    bool solicited_only = false;
    std::uint64_t solicited_before = 0;
    {
        std::lock_guard lk(mu_);
        if (DAT_RETURN rc = wait_checks_locked(threshold); rc != DAT_SUCCESS) return rc;
        if (waiters_ > 0) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
        // Threshold met already: handed over at once, whatever woke nobody.
        solicited_only = solicited_only_ && count_ < static_cast<std::size_t>(threshold);
        solicited_before = solicited_;
    }
    // The transport may progress on this thread for a short while first: a completion
    // that arrives soon is then reaped here without a wake-up of another thread. Not for a
    // solicited-only wait: it asked to sleep until a solicited event.
    const auto spin_start = std::chrono::steady_clock::now();
    const Spin spin = solicited_only ? Spin::NotTried : spin_until(timeout_us, threshold);
    if (spin != Spin::Met && timeout_us != DAT_TIMEOUT_INFINITE) {
        // The spin counts against the consumer's timeout.
        auto spent = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - spin_start)
                         .count();
        timeout_us = spent >= static_cast<long long>(timeout_us)
                         ? 0
                         : timeout_us - static_cast<DAT_TIMEOUT>(spent);
    }
    // Then it may sleep in the transport's progress itself (one wake-up per arrival, as a
    // blocking recv()); what is left of the wait, if anything, is the ordinary one below.
    bool in_progress = false;
    if (spin != Spin::Met && progress_ != nullptr && (flags & DAT_EVD_DTO_FLAG) && timeout_us != 0)
        in_progress = wait_in_progress(&timeout_us, threshold, solicited_only, solicited_before);
    // A spin that found nothing and did not hand over to an inline wait: whoever
    // progresses in the background takes over now, before we sleep.
    if (spin == Spin::Spun && !in_progress) progress_->end_inline_progress();
    std::unique_lock lk(mu_);
    if (in_progress && !waitable_) {  // made unwaitable while it slept in the progress
        if (nmore != nullptr) *nmore = static_cast<DAT_COUNT>(count_);
        return err(DAT_INTERRUPTED_CALL);
    }
    if (DAT_RETURN rc = wait_checks_locked(threshold); rc != DAT_SUCCESS) return rc;
    if (waiters_ > 0) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
    ++waiters_;
    bool ok = wait_for_us(cv_, lk, timeout_us, [&] {
        return (count_ >= static_cast<std::size_t>(threshold) &&
                (!solicited_only || solicited_ != solicited_before)) ||
               !waitable_;
    });
    --waiters_;
    if (nmore != nullptr) *nmore = static_cast<DAT_COUNT>(count_);
    if (!waitable_) return err(DAT_INTERRUPTED_CALL);
    if (!ok) return err(DAT_TIMEOUT_EXPIRED);
    pop_locked(out);
    if (nmore != nullptr) *nmore = static_cast<DAT_COUNT>(count_);
    return DAT_SUCCESS;
}

DAT_RETURN Evd::resize(DAT_COUNT qlen) noexcept {
    return backend_ != nullptr ? backend_->resize(qlen) : ring_resize(qlen);
}

DAT_RETURN Evd::ring_resize(DAT_COUNT qlen) noexcept {
    std::lock_guard lk(mu_);
    if (qlen <= 0 || static_cast<std::size_t>(qlen) < count_) return bad_arg(2);
    // evd_resize refused a waiter it saw; one that came in after that look counts itself
    // here, under our lock, and checked its threshold against the old size: a smaller
    // ring could leave it waiting for a count the ring can never hold. (Growing is fine:
    // util grows the IA's async EVD for SRQ endpoints while a thread may wait on it.)
    if (waiters_ > 0 && static_cast<std::size_t>(qlen) < ring_.size()) {
        DAPL_TRC(trace::kError, "evd", "dat_evd_resize: EVD %p has a waiter",
                 static_cast<void *>(this));
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
    }
    try {
        std::vector<DAT_EVENT> fresh(static_cast<std::size_t>(qlen));
        for (std::size_t i = 0; i < count_; ++i) fresh[i] = ring_[(head_ + i) % ring_.size()];
        ring_.swap(fresh);
        head_ = 0;
    } catch (...) {
        return kNoMemory;
    }
    return DAT_SUCCESS;
}

namespace {
// The handshake between a waiter coming in and retire(): the waiter counts itself in, then
// looks at the magic; retire() kills the magic, then looks at the count. Both sequentially
// consistent, so at least one of them sees the other: either the waiter backs out, or
// retire() waits for it.
bool enter(std::atomic<int> &count, Header *obj) noexcept {
    count.fetch_add(1, std::memory_order_seq_cst);
    if (obj->magic.load(std::memory_order_seq_cst) == arena::live_tag(obj)) return true;
    count.fetch_sub(1, std::memory_order_release);
    return false;
}

void drain(const std::atomic<int> &count) noexcept {
    while (count.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
}
}  // namespace

bool Evd::enter_wait() noexcept {
    return enter(in_wait_, this);
}

bool Evd::retire() noexcept {
    if (!claim(this)) return false;  // seq_cst: the waiter handshake above
    set_waitable(false);  // wakes a waiter on the condition variable, inline or in a backend
    drain(in_wait_);
    return true;
}

bool Cno::enter_wait() noexcept {
    return enter(in_wait_, this);
}

bool Cno::retire() noexcept {
    if (!claim(this)) return false;
    {
        std::lock_guard lk(mu_);
        closing_ = true;
        cv_.notify_all();
        if (wake_fd_ >= 0) {  // a transport's waiter blocked in poll(2) on it
            std::uint64_t one = 1;
            [[maybe_unused]] ssize_t n = sys::write(wake_fd_, &one, sizeof one);
        }
    }
    drain(in_wait_);
    return true;
}

DAT_RETURN Evd::set_waitable(bool waitable) noexcept {
    {
        std::lock_guard lk(mu_);
        waitable_ = waitable;
        if (!waitable) cv_.notify_all();  // unwaitable releases current waiters
        if (!waitable && inline_waiting_) progress_->wait_inline_wake();  // and an inline one
    }
    if (!waitable && backend_ != nullptr) backend_->unwaitable();  // and the backend's
    return DAT_SUCCESS;
}

DAT_RETURN Evd::set_enabled(bool enabled) noexcept {
    std::lock_guard lk(mu_);
    enabled_ = enabled;
    return DAT_SUCCESS;
}

DAT_RETURN Evd::set_cno(Cno *cno) noexcept {
    Cno *from = nullptr;
    {
        std::lock_guard lk(mu_);
        // A dat_evd_free that claimed this EVD detaches its CNO under this lock: nothing
        // may attach one after that (its use would never be given back).
        if (cno != nullptr && magic.load(std::memory_order_acquire) == kMagicDead)
            return invalid_handle(DAT_HANDLE_TYPE_EVD);
        // Counted before it is named: a dat_cno_free under way refuses the use.
        if (cno != nullptr && cno != cno_ && !cno->users.take())
            return invalid_handle(DAT_HANDLE_TYPE_CNO);
        from = cno_;
        cno_ = cno;
        has_cno_.store(cno_ != nullptr, std::memory_order_relaxed);
    }
    if (backend_ != nullptr && from != cno) backend_->cno_changed(from, cno);
    // The old CNO counts this EVD as a user until the backend has let go of it too (the
    // verbs completion watcher triggers CNOs on its own thread): only then may
    // dat_cno_free, which checks users, free it.
    if (from != nullptr && from != cno) from->users.drop();
    return DAT_SUCCESS;
}

void Evd::set_backend(std::unique_ptr<EvdBackend> b) noexcept {
    backend_ = std::move(b);
    if (Cno *c = cno(); backend_ != nullptr && c != nullptr) backend_->cno_changed(nullptr, c);
}

DAT_COUNT Evd::qlen() const noexcept {
    std::lock_guard lk(mu_);
    return static_cast<DAT_COUNT>(ring_.size());
}

DAT_EVD_STATE Evd::state() const noexcept {
    std::lock_guard lk(mu_);
    return static_cast<DAT_EVD_STATE>(
        (enabled_ ? DAT_EVD_STATE_ENABLED : DAT_EVD_STATE_DISABLED) |
        (waitable_ ? DAT_EVD_STATE_WAITABLE : DAT_EVD_STATE_UNWAITABLE));
}

Cno *Evd::cno() const noexcept {
    std::lock_guard lk(mu_);
    return cno_;
}

DAT_COUNT Evd::pending() const noexcept {
    std::lock_guard lk(mu_);
    return static_cast<DAT_COUNT>(count_);
}

Cno::Cno(const DAT_PROVIDER *p, Ia *ia, DAT_OS_WAIT_PROXY_AGENT agent)
    : Header(p, kType, ia), agent_(agent) {
    if (agent.proxy_agent_func != nullptr) calls_ = AgentCalls::start(agent);
}

Cno::~Cno() {
    if (calls_ != nullptr) calls_->stop();
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Cno::pay_triggers(Evd *evd, int n) noexcept {
    for (int i = 0; i < n; ++i) trigger(evd);
    triggering.fetch_sub(n, std::memory_order_release);
}

void Cno::wait_triggers() const noexcept {
    while (triggering.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

int Cno::wake_fd() noexcept {
    std::lock_guard lk(mu_);
    if (wake_fd_ < 0) wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return wake_fd_;
}

void Cno::trigger(Evd *evd) noexcept {
    std::lock_guard lk(mu_);
    pending_ = evd;
    cv_.notify_all();
    // The caller may hold an endpoint's and the engine's locks: the agent runs later, on
    // its own thread, with none held.
    if (calls_ != nullptr && agent_.proxy_agent_func != nullptr) calls_->request(evd);
    if (wake_fd_ >= 0) {
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = sys::write(wake_fd_, &one, sizeof one);
    }
}

DAT_RETURN Cno::wait(DAT_TIMEOUT timeout_us, DAT_EVD_HANDLE *evd) noexcept {
    std::unique_lock lk(mu_);
    if (!wait_for_us(cv_, lk, timeout_us, [&] { return pending_ != nullptr || closing_; }))
        return err(DAT_TIMEOUT_EXPIRED);
    if (closing_) return err(DAT_INTERRUPTED_CALL);  // dat_cno_free under way
    *evd = pending_;
    pending_ = nullptr;
    return DAT_SUCCESS;
}

void Cno::stop_agent() noexcept {
    std::shared_ptr<AgentCalls> calls;
    {
        std::lock_guard lk(mu_);
        calls = calls_;
    }
    if (calls != nullptr) calls->stop();  // again in ~Cno: then a no-op
}

bool Cno::set_agent(DAT_OS_WAIT_PROXY_AGENT agent) noexcept {
    // The thread is started outside mu_: creating it allocates and takes a while.
    bool need = false;
    {
        std::lock_guard lk(mu_);
        if (closing_) return false;
        need = calls_ == nullptr && agent.proxy_agent_func != nullptr;
    }
    std::shared_ptr<AgentCalls> started = need ? AgentCalls::start(agent) : nullptr;
    bool set = false;
    {
        std::lock_guard lk(mu_);
        // A dat_cno_free that began meanwhile has stopped the agent (or found none): no
        // new one may start after it, to be joined by whichever thread deletes the CNO.
        if (!closing_) {
            set = true;
            agent_ = agent;
            if (calls_ != nullptr)
                calls_->set_agent(agent);
            else
                calls_ = std::move(started);
        }
    }
    if (started != nullptr) started->stop();  // not needed after all
    return set;
}

DAT_OS_WAIT_PROXY_AGENT Cno::agent() const noexcept {
    std::lock_guard lk(mu_);
    return agent_;
}

}  // namespace opendat::util

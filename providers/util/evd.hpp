// Event dispatchers and consumer notification objects.
//
// An EVD is a bounded ring of DAT_EVENTs sized at create/resize time, so posting an event
// (done by the transport's progress thread or inline by a post call) never allocates.
// Waiting uses a condition variable; an EVD attached to a CNO triggers it when an event
// arrives and nobody is waiting on the EVD itself.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "util/object.hpp"

namespace opendat::util {

struct Cno;
class Transport;

struct Evd : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_EVD;

    Evd(const DAT_PROVIDER *p, Ia *ia, DAT_COUNT qlen, DAT_EVD_FLAGS flags, Cno *cno);

    // Queues one event (evd_handle is filled in here). False when the queue is full: the
    // event is dropped and the caller reports an overflow.
    bool post(const DAT_EVENT &ev) noexcept;

    // dat_evd_dequeue: exactly DAT_QUEUE_EMPTY (no class bit) for an empty DTO EVD, as the
    // reference's CQ path does (dtest -p compares with the bare enumerator); other EVDs
    // answer DAT_CLASS_ERROR|DAT_QUEUE_EMPTY like the reference's software queues.
    DAT_RETURN dequeue(DAT_EVENT *out) noexcept;
    DAT_RETURN wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT *out,
                    DAT_COUNT *nmore) noexcept;
    DAT_RETURN resize(DAT_COUNT qlen) noexcept;
    DAT_RETURN set_waitable(bool waitable) noexcept;
    DAT_RETURN set_enabled(bool enabled) noexcept;
    DAT_RETURN set_cno(Cno *cno) noexcept;
    DAT_COUNT qlen() const noexcept;
    DAT_EVD_STATE state() const noexcept;
    Cno *cno() const noexcept;
    DAT_COUNT pending() const noexcept;

    const DAT_EVD_FLAGS flags;
    std::atomic<int> users{0};  // EPs/PSPs/RSPs naming this EVD: freeing it is refused
    // Set at create: whom an empty polling dequeue asks for inline progress.
    void set_progress(Transport *t) noexcept { progress_ = t; }

  private:
    bool pop_locked(DAT_EVENT *out) noexcept;

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<DAT_EVENT> ring_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    bool enabled_ = true;
    bool waitable_ = true;
    int waiters_ = 0;
    Cno *cno_ = nullptr;
    Transport *progress_ = nullptr;
};

struct Cno : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_CNO;

    Cno(const DAT_PROVIDER *p, Ia *ia, DAT_OS_WAIT_PROXY_AGENT agent)
        : Header(p, kType, ia), agent_(agent) {}

    // An attached EVD got an event nobody waits for: wake a cno_wait and call the agent.
    void trigger(Evd *evd) noexcept;
    DAT_RETURN wait(DAT_TIMEOUT timeout_us, DAT_EVD_HANDLE *evd) noexcept;
    void set_agent(DAT_OS_WAIT_PROXY_AGENT agent) noexcept;
    DAT_OS_WAIT_PROXY_AGENT agent() const noexcept;

    std::atomic<int> users{0};  // attached EVDs

  private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    Evd *pending_ = nullptr;
    DAT_OS_WAIT_PROXY_AGENT agent_;
};

}  // namespace opendat::util

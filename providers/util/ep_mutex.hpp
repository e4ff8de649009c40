// The endpoint's lock (util::Ep::mu), which knows whether a thread is waiting for it, so
// that the application and a transport's progress can take turns on a busy endpoint.
//
// A transport's progress thread works on a busy endpoint in rounds, each a transmit or
// receive budget long (a few hundred microseconds of a huge RDMA read answer on loopback),
// and takes the lock again right after letting it go. The lock is not fair: the thread it
// wakes still has to be scheduled, and by then the progress thread holds the lock again.
// An application call on that endpoint waited 65-175 ms of a 250 ms answer
// (Attack.BigReadAnswersLeaveTheEndpointToItsApplication). A thread that has to wait says
// so (waited_for()) and counts the times it got the lock after waiting (handovers()); the
// transport's rounds leave the endpoint alone until one waiter had its turn (EpTurns).
//
// The uncontended lock() is one compare-exchange of a FutexMutex, inline: nothing on the
// hot path.
#pragma once

#include <atomic>
#include <chrono>
#include <utility>

#include "util/futex_mutex.hpp"

namespace opendat::util {

class EpMutex {
  public:
    void lock() noexcept {
        mu_.lock_noting_wait([this] { waiting_.fetch_add(1, std::memory_order_relaxed); },
                             [this] {
                                 waiting_.fetch_sub(1, std::memory_order_relaxed);
                                 handovers_.fetch_add(1, std::memory_order_relaxed);
                             });
    }
    bool try_lock() noexcept { return mu_.try_lock(); }
    void unlock() noexcept { mu_.unlock(); }

    // Some thread is blocked in lock(). A hint: it may have the lock by the time the
    // caller acts on the answer, which then only costs the caller a round.
    bool waited_for() const noexcept { return waiting_.load(std::memory_order_relaxed) != 0; }
    // How often a thread got the lock after waiting for it (wraps around).
    unsigned handovers() const noexcept { return handovers_.load(std::memory_order_relaxed); }

  private:
    FutexMutex mu_;
    std::atomic<unsigned> waiting_{0};
    std::atomic<unsigned> handovers_{0};
};

// The transport's side of the turns, one per endpoint, used by whoever runs its rounds
// under the transport's dispatch lock (not thread-safe by itself). A round asks yield():
// true while it should leave the endpoint to a thread waiting for its lock, until one such
// waiter had the lock or kMax passed (a waiter not scheduled by then waits for the next
// turn). The waiter was woken by the round's last unlock and may be queued behind the
// round's thread on its CPU: when a turn begins (turn_began()), that thread gives the
// waiter its CPU once it let go of the lock that serialises the rounds. One turn per
// waiter, not as long as anyone waits: threads that call back to back would otherwise keep
// the progress away for as long as they keep calling.
class EpTurns {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::microseconds kMax{200};

    bool yield(const EpMutex &m) noexcept {
        if (!m.waited_for()) {
            yielding_ = false;
            return false;
        }
        return decide(m.handovers(), Clock::now());
    }
    // yield() once it found a waiter: `handovers` and `now` as read then.
    bool decide(unsigned handovers, Clock::time_point now) noexcept {
        if (!yielding_) {
            yielding_ = true;
            began_ = true;
            since_ = handovers;
            until_ = now + kMax;
            return true;
        }
        if (handovers != since_ || now >= until_) {
            yielding_ = false;  // a waiter had its turn (or was not scheduled): ours now
            return false;
        }
        return true;
    }

    // True once after yield() began a turn: the caller may give its CPU to the waiter then.
    bool turn_began() noexcept { return std::exchange(began_, false); }

  private:
    bool yielding_ = false;
    bool began_ = false;
    unsigned since_ = 0;  // handovers() when this turn began
    Clock::time_point until_{};
};

}  // namespace opendat::util

// The progress engine: one epoll set and one progress thread per IA.
//
// Sockets (endpoints, listeners, half-open passive connections) register a Pollable. The
// thread waits in epoll_wait and calls on_events(); an eventfd wakes it for shutdown or
// for a new deadline. Objects are never deleted while the thread may still hold a pointer
// from its last epoll_wait: retire() parks the object in a util::DeferredFree, and the
// thread drains it at the top of its next iteration. util's EP objects wait there too
// (defer), behind the TcpEp that refers to them.
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

namespace opendat::tcp {

class Pollable {
  public:
    virtual ~Pollable() = default;
    virtual void on_events(std::uint32_t events) noexcept = 0;
    // Called about every 50 ms while the object asked for it (connect timeouts).
    virtual void on_tick(std::chrono::steady_clock::time_point) noexcept {}
};

class Engine {
  public:
    Engine();
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

  private:
    void run() noexcept;
    void run_ticks(std::vector<Pollable *> &ticks) noexcept;
    void dispatch(epoll_event *events, int n, bool progress_thread) noexcept;
    void wake() noexcept;

    int epfd_ = -1;
    int evfd_ = -1;
    bool ok_ = false;
    std::atomic<bool> stop_{false};
    // Bumped by every poll_inline(). The progress thread compares it with what it saw last:
    // while it moves, a consumer drives progress and the thread must not compete with it
    // for the same events. (A counter, not a timestamp: no clock read per poll.)
    std::atomic<std::uint64_t> inline_polls_{0};
    std::uint64_t seen_polls_ = 0;  // progress thread only
    std::mutex mu_;
    // Held while events are dispatched and while parked objects are deleted, so an inline
    // poller never dispatches to an object being freed.
    std::mutex dispatch_mu_;
    std::unordered_set<Pollable *> live_;
    util::DeferredFree parked_;
    std::unordered_set<Pollable *> ticking_;
    std::thread thread_;
};

}  // namespace opendat::tcp

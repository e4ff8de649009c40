// The thread that calls a CNO's proxy agent.
//
// An event reaches an EVD (and so its CNO) from wherever the provider produces it: the
// progress thread with the engine's and the endpoint's locks held, or a post call with its
// endpoint's lock held. An agent that calls back into DAT (typically to post on the same
// endpoint, or to dequeue) would deadlock or re-enter under those locks. So the trigger
// only records "agent owed for this EVD" and wakes this thread, which calls the agent with
// no provider lock held. Triggers for the same EVD coalesce until the agent has run: the
// agent is a wake-up, not an event queue.
#pragma once

#include <dat2/udat.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace opendat::util {

class AgentCalls {
  public:
    // Starts the thread; nullptr when no thread can be created (traced).
    static std::shared_ptr<AgentCalls> start(DAT_OS_WAIT_PROXY_AGENT agent) noexcept;
    ~AgentCalls();

    void set_agent(DAT_OS_WAIT_PROXY_AGENT agent) noexcept;
    // Never blocks beyond a short lock: safe under any provider lock. Allocates only when
    // more distinct EVDs are owed at once than ever before (kSlots are there from the start).
    void request(DAT_EVD_HANDLE evd) noexcept;
    // Ends the thread: a call in progress finishes first, owed calls are dropped. From the
    // agent itself (it freed its own CNO) the thread is left to finish on its own.
    void stop() noexcept;

  private:
    AgentCalls() = default;
    static void run(std::shared_ptr<AgentCalls> self) noexcept;

    static constexpr std::size_t kSlots = 16;  // distinct EVDs owed at once, reserved
    std::mutex mu_;
    std::condition_variable cv_;
    DAT_OS_WAIT_PROXY_AGENT agent_{};
    std::vector<DAT_EVD_HANDLE> owed_;  // in the order they became owed
    std::size_t n_owed_ = 0;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace opendat::util

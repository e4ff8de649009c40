// CNO proxy agents for completions of CQ-backed EVDs.
//
// util calls a CNO's agent when an event is posted to one of its EVDs' software rings
// (Cno::trigger). Completions never pass through util: they sit in the CQ until someone
// polls it. So each IA with such EVDs has one thread that arms their CQs, sleeps in
// poll(2) on their completion channels, and on a completion triggers the CNO, which wakes
// dat_cno_wait and has the agent called on util's agent thread (no provider lock held).
// The thread starts when the first CQ EVD of the IA joins a CNO and ends with the IA.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "util/objects.hpp"
#include "verbs/raii.hpp"

namespace opendat::verbs {

class CqEvd;

class CqAgentWatch {
  public:
    explicit CqAgentWatch(util::Ia *ia) noexcept : ia_(ia) {}
    ~CqAgentWatch();  // stops and joins the thread
    CqAgentWatch(const CqAgentWatch &) = delete;
    CqAgentWatch &operator=(const CqAgentWatch &) = delete;

    // An EVD of this IA joined a CNO (or an agent changed): look at the feeds again,
    // starting the thread on first use.
    void poke() noexcept;
    // An EVD left its CNO (cno_detach already removed it): once this returns, the thread
    // no longer touches it.
    void barrier() noexcept;

  private:
    struct Watched {
        util::Cno *cno;
        CqEvd *evd;
        bool armed;
        std::uint64_t seen;  // CqEvd::arrived() when last looked at
    };
    void run() noexcept;
    // With mu_ held: the feeds of this IA whose CNO has an agent, keeping what is known of
    // the ones already watched.
    void refresh_locked();
    void trigger_if_new_locked(Watched &w) noexcept;

    util::Ia *const ia_;
    std::mutex mu_;  // held while the thread touches the EVDs, never while it sleeps
    UniqueFd ctl_;   // poke(): wakes the thread
    std::thread thread_;
    std::atomic<bool> stop_{false};
    bool started_ = false;          // under mu_
    std::vector<Watched> watched_;  // the thread's, under mu_
};

}  // namespace opendat::verbs

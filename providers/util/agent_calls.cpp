#include "util/agent_calls.hpp"

#include <algorithm>

#include "trace/trace.hpp"

namespace opendat::util {

std::shared_ptr<AgentCalls> AgentCalls::start(DAT_OS_WAIT_PROXY_AGENT agent) noexcept {
    try {
        std::shared_ptr<AgentCalls> self(new AgentCalls);
        self->agent_ = agent;
        self->owed_.resize(kSlots);
        // The thread holds its own reference: the state outlives a CNO freed by its agent.
        self->thread_ = std::thread(run, self);
        return self;
    } catch (...) {
        DAPL_TRC(trace::kError, "cno", "cannot start the proxy agent thread: agent not called");
        return nullptr;
    }
}

AgentCalls::~AgentCalls() {
    if (thread_.joinable()) thread_.detach();  // never stopped (cannot happen for a CNO)
}

void AgentCalls::set_agent(DAT_OS_WAIT_PROXY_AGENT agent) noexcept {
    std::lock_guard lk(mu_);
    agent_ = agent;
}

void AgentCalls::request(DAT_EVD_HANDLE evd) noexcept {
    std::lock_guard lk(mu_);
    if (std::find(owed_.begin(), owed_.begin() + n_owed_, evd) != owed_.begin() + n_owed_) return;
    if (n_owed_ == owed_.size()) {
        // More EVDs owed at once than ever before. Overwriting one would leave its
        // consumer, who relies on the agent, never told about that EVD's events.
        try {
            owed_.resize(owed_.size() * 2);
        } catch (...) {
            // No memory: the newest takes the last place, so that the agent still learns
            // that events are due (one EVD's call is lost, and said so).
            DAPL_TRC(trace::kError, "cno", "no memory to owe the agent a call for EVD %p",
                     static_cast<void *>(owed_[n_owed_ - 1]));
            owed_[n_owed_ - 1] = evd;
            cv_.notify_one();
            return;
        }
    }
    owed_[n_owed_++] = evd;
    cv_.notify_one();
}

void AgentCalls::stop() noexcept {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
        n_owed_ = 0;
        cv_.notify_one();
    }
    if (!thread_.joinable()) return;
    if (thread_.get_id() == std::this_thread::get_id())
        thread_.detach();  // the agent freed its own CNO: the thread ends after it returns
    else
        thread_.join();
}

void AgentCalls::run(std::shared_ptr<AgentCalls> self) noexcept {
    std::unique_lock lk(self->mu_);
    for (;;) {
        self->cv_.wait(lk, [&] { return self->stopping_ || self->n_owed_ > 0; });
        if (self->stopping_) break;
        const DAT_EVD_HANDLE evd = self->owed_[0];
        std::copy(self->owed_.begin() + 1, self->owed_.begin() + self->n_owed_,
                  self->owed_.begin());
        --self->n_owed_;
        const DAT_OS_WAIT_PROXY_AGENT agent = self->agent_;
        lk.unlock();
        // No provider lock and not even ours: the agent may call any DAT function.
        if (agent.proxy_agent_func != nullptr) agent.proxy_agent_func(agent.instance_data, evd);
        lk.lock();
    }
}

}  // namespace opendat::util

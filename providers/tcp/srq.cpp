// TcpSrq: the waiter list and the eventfd wake-up of a shared receive queue.
#include "tcp/srq.hpp"
#include "util/sys_io.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "tcp/ep.hpp"

namespace opendat::tcp {

TcpSrq::TcpSrq() : efd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

void TcpSrq::attach() {
    std::lock_guard lk(mu_);
    waiters_.reserve(attached_ + 1);
    ++attached_;
}

void TcpSrq::detach(TcpEp *t) noexcept {
    std::lock_guard lk(mu_);
    waiters_.erase(std::remove(waiters_.begin(), waiters_.end(), t), waiters_.end());
    if (attached_ > 0) --attached_;
}

void TcpSrq::wait(TcpEp *t) noexcept {
    std::lock_guard lk(mu_);
    if (std::find(waiters_.begin(), waiters_.end(), t) != waiters_.end()) return;
    waiters_.push_back(t);  // within the capacity attach() reserved
}

bool TcpSrq::has_waiters() noexcept {
    std::lock_guard lk(mu_);
    return !waiters_.empty();
}

void TcpSrq::signal() noexcept {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = sys::write(efd_.get(), &one, sizeof one);
}

void TcpSrq::on_events(std::uint32_t) noexcept {
    std::uint64_t v = 0;
    [[maybe_unused]] ssize_t r = sys::read(efd_.get(), &v, sizeof v);
    {
        std::lock_guard lk(mu_);
        try {
            // Grows only when more endpoints are attached than ever before.
            waking_.reserve(attached_);
        } catch (...) {
            signal();  // out of memory: try again on the next round
            return;
        }
        waking_.assign(waiters_.begin(), waiters_.end());
        waiters_.clear();
    }
    // Each endpoint takes what it can under its own lock; one that still finds the ring
    // empty registers again.
    for (TcpEp *t : waking_) t->srq_ready();
    waking_.clear();
}

}  // namespace opendat::tcp

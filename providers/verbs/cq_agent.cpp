// CNO proxy agents for completions of CQ-backed EVDs (cq_agent.hpp).
#include "verbs/cq_agent.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trace/trace.hpp"
#include "verbs/cq_evd.hpp"

namespace opendat::verbs {

CqAgentWatch::~CqAgentWatch() {
    stop_.store(true);
    if (ctl_.get() >= 0) {
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(ctl_.get(), &one, sizeof one);
    }
    if (thread_.joinable()) thread_.join();
}

void CqAgentWatch::poke() noexcept {
    {
        std::lock_guard lk(mu_);
        if (!started_) {
            started_ = true;
            int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
            if (fd < 0) {
                DAPL_TRC(trace::kError, "verbs",
                         "CNO agents for completions: eventfd: %s (agents then see only "
                         "connection and software events)",
                         std::strerror(errno));
                return;
            }
            ctl_.reset(fd);
            try {
                thread_ = std::thread([this] { run(); });
            } catch (...) {
                DAPL_TRC(trace::kError, "verbs",
                         "CNO agents for completions: no thread (agents then see only "
                         "connection and software events)");
                return;
            }
        }
    }
    if (ctl_.get() >= 0) {
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(ctl_.get(), &one, sizeof one);
    }
}

void CqAgentWatch::barrier() noexcept {
    std::lock_guard lk(mu_);
}

void CqAgentWatch::refresh_locked() {
    std::vector<std::pair<util::Cno *, CqEvd *>> feeds = cno_feeds_with_agent(ia_);
    std::vector<Watched> next;
    next.reserve(feeds.size());
    for (auto [cno, evd] : feeds) {
        Watched w{cno, evd, false, evd->arrived()};
        for (const Watched &old : watched_)
            if (old.cno == cno && old.evd == evd) w = old;
        next.push_back(w);
    }
    watched_.swap(next);
}

// A completion may have come while the CQ was not armed (it raises no channel event):
// the count of completions moved out of the CQ says.
void CqAgentWatch::trigger_if_new_locked(Watched &w) noexcept {
    w.evd->has_event();  // moves completions out of the CQ (counting them)
    const std::uint64_t now = w.evd->arrived();
    if (now == w.seen) return;
    w.seen = now;
    // As util's software EVDs: a disabled EVD, or one a dat_evd_wait blocks on, does not
    // trigger its CNO.
    if ((w.evd->evd()->state() & DAT_EVD_STATE_DISABLED) || w.evd->waited_on()) return;
    w.cno->trigger(w.evd->evd());
}

void CqAgentWatch::run() noexcept {
    std::vector<pollfd> fds;
    std::vector<CqEvd *> polled;
    while (!stop_.load()) {
        try {
            std::lock_guard lk(mu_);
            refresh_locked();
            fds.clear();
            polled.clear();
            for (Watched &w : watched_) {
                if (!w.armed) {
                    w.evd->arm();
                    w.armed = true;
                }
                trigger_if_new_locked(w);
                fds.push_back({w.evd->channel_fd(), POLLIN, 0});
                polled.push_back(w.evd);
            }
            fds.push_back({ctl_.get(), POLLIN, 0});
        } catch (...) {
            // Out of memory on this control thread: look again shortly.
            fds.clear();
            polled.clear();
            fds.push_back({ctl_.get(), POLLIN, 0});
        }
        // The channels of EVDs that leave meanwhile may close: poll then reports them
        // (POLLNVAL) or not; either way they are looked up again below before any use.
        int n = ::poll(fds.data(), fds.size(), 1000);
        if (n <= 0) continue;
        if (fds.back().revents & POLLIN) {
            std::uint64_t v;
            [[maybe_unused]] ssize_t r = ::read(ctl_.get(), &v, sizeof v);
        }
        std::lock_guard lk(mu_);
        try {
            refresh_locked();
        } catch (...) {
            continue;
        }
        for (std::size_t i = 0; i + 1 < fds.size(); ++i) {
            if (!(fds[i].revents & POLLIN)) continue;
            for (Watched &w : watched_) {
                if (w.evd != polled[i] || w.evd->channel_fd() != fds[i].fd) continue;
                // The CQ has to be armed again for its next completion; the arming happens
                // at the top of the loop, followed by a look for what came in between. Also
                // when a dat_evd_wait read the event first: that used up the arming too.
                w.evd->take_channel_event();
                w.armed = false;
                trigger_if_new_locked(w);
            }
        }
    }
}

}  // namespace opendat::verbs

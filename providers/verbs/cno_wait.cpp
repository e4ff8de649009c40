// dat_cno_wait over CQ-backed EVDs (the VerbsTransport::cno_wait hook).
//
// util's CNO is triggered by events posted to software EVDs. Completions never pass
// through util, so a CNO fed by CQ-backed EVDs waits on their completion channels itself:
// look for a ready event (or a util trigger), arm every CQ, look again, then block in
// poll(2) on all the channels and the CNO's wake-up eventfd, which util's trigger (an
// event on a software ring: connection, asynchronous, software events) makes readable.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "util/deadline.hpp"
#include "util/objects.hpp"
#include "verbs/cq_agent.hpp"
#include "verbs/cq_evd.hpp"
#include "verbs/transport.hpp"

namespace opendat::verbs {

namespace {
std::mutex g_mu;
std::condition_variable g_round_ended;  // a cno_wait round let go of its EVDs
std::unordered_multimap<util::Cno *, CqEvd *> g_feeds;

// The CQ EVDs feeding a CNO, held for one round of VerbsTransport::cno_wait (look, arm,
// poll). An EVD may leave its CNO (dat_evd_free, dat_evd_modify_cno) on another thread
// while a dat_cno_wait blocks on its channel: cno_detach waits until no round holds it,
// so a round never touches an EVD that is gone.
class Round {
  public:
    Round() = default;
    Round(const Round &) = delete;
    Round &operator=(const Round &) = delete;
    ~Round() { release(); }

    // Lets go of the EVDs held and holds the ones feeding `cno` now; `changed` says
    // whether they differ. False when out of memory (then none is held).
    bool take(util::Cno *cno, bool *changed = nullptr) noexcept {
        std::vector<CqEvd *> next;
        bool ok = true;
        {
            std::lock_guard lk(g_mu);
            try {
                auto [b, e] = g_feeds.equal_range(cno);
                for (auto it = b; it != e; ++it) next.push_back(it->second);
            } catch (...) {
                next.clear();
                ok = false;
            }
            for (CqEvd *evd : evds) --evd->cno_rounds;
            for (CqEvd *evd : next) ++evd->cno_rounds;
        }
        g_round_ended.notify_all();
        if (changed != nullptr) *changed = next != evds;
        evds.swap(next);
        return ok;
    }
    void release() noexcept {
        if (evds.empty()) return;
        {
            std::lock_guard lk(g_mu);
            for (CqEvd *evd : evds) --evd->cno_rounds;
        }
        g_round_ended.notify_all();
        evds.clear();
    }

    std::vector<CqEvd *> evds;
};

// The watcher that calls CNO agents for the completions of this EVD's IA (cq_agent.hpp).
CqAgentWatch &watch_of(CqEvd *evd) noexcept {
    return static_cast<VerbsTransport *>(evd->evd()->ia->transport.get())->agent_watch();
}
}  // namespace

void cno_attach(util::Cno *cno, CqEvd *evd) noexcept {
    {
        std::lock_guard lk(g_mu);
        try {
            g_feeds.emplace(cno, evd);
        } catch (...) {
            // Out of memory: the EVD then does not wake this CNO's waiters (they time out).
            return;
        }
    }
    watch_of(evd).poke();
}

void cno_detach(util::Cno *cno, CqEvd *evd) noexcept {
    {
        std::unique_lock lk(g_mu);
        auto [b, e] = g_feeds.equal_range(cno);
        for (auto it = b; it != e; ++it)
            if (it->second == evd) {
                g_feeds.erase(it);
                break;
            }
        if (evd->cno_rounds > 0) {
            // A dat_cno_wait holds it, maybe asleep in poll(2) on its channel: wake it
            // (its fd exists: the waiter made it before its first round) and wait for the
            // round to end. The next round no longer finds the EVD.
            std::uint64_t one = 1;
            [[maybe_unused]] ssize_t n = ::write(cno->wake_fd(), &one, sizeof one);
            g_round_ended.wait(lk, [evd] { return evd->cno_rounds == 0; });
        }
    }
    watch_of(evd).barrier();  // the EVD may be freed once this returns
}

std::vector<std::pair<util::Cno *, CqEvd *>> cno_feeds_with_agent(util::Ia *ia) {
    std::vector<std::pair<util::Cno *, CqEvd *>> out;
    std::lock_guard lk(g_mu);
    for (auto &[cno, evd] : g_feeds)
        if (evd->evd()->ia == ia && cno->agent().proxy_agent_func != nullptr)
            out.emplace_back(cno, evd);
    return out;
}

// util has checked the CNO handle and `out`.
DAT_RETURN VerbsTransport::cno_wait(util::Cno *cno, DAT_TIMEOUT timeout,
                                    DAT_EVD_HANDLE *out) noexcept {
    Round round;
    if (!round.take(cno)) return util::kNoMemory;
    if (round.evds.empty()) return cno->wait(timeout, out);  // fed by software EVDs only
    // Made before the first look at util's trigger: a trigger after that look writes it.
    const int wake = cno->wake_fd();
    if (wake < 0) return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    std::vector<pollfd> fds;
    const util::Deadline deadline(timeout);
    bool armed = false;
    for (;;) {
        DAT_EVD_HANDLE soft = DAT_HANDLE_NULL;
        if (DAT_RETURN rc = cno->wait(0, &soft); rc == DAT_SUCCESS) {
            *out = soft;
            return DAT_SUCCESS;
        } else if (DAT_GET_TYPE(rc) == DAT_INTERRUPTED_CALL) {
            return rc;  // dat_cno_free under way (util::Cno::retire)
        }
        for (CqEvd *evd : round.evds)
            if (evd->has_event()) {
                *out = evd->evd();
                return DAT_SUCCESS;
            }
        if (!armed) {
            for (CqEvd *evd : round.evds) evd->arm();
            armed = true;
            continue;  // a completion before arming raises no channel event
        }
        if (deadline.expired()) return util::err(DAT_TIMEOUT_EXPIRED);
        try {
            fds.clear();
            for (CqEvd *evd : round.evds) fds.push_back({evd->channel_fd(), POLLIN, 0});
            fds.push_back({wake, POLLIN, 0});
        } catch (...) {
            return util::kNoMemory;
        }
        if (::poll(fds.data(), fds.size(), deadline.poll_ms(-1)) > 0) {
            for (std::size_t i = 0; i < round.evds.size(); ++i)
                if (fds[i].revents & POLLIN) {
                    round.evds[i]->take_channel_event();
                    armed = false;
                }
            if (fds.back().revents & POLLIN) {
                std::uint64_t v;
                [[maybe_unused]] ssize_t r = ::read(wake, &v, sizeof v);
            }
        }
        // Let go of the EVDs (one may be leaving: cno_detach waits for this) and look the
        // feeds up again; an EVD that joined meanwhile is armed before the next sleep.
        bool changed = false;
        if (!round.take(cno, &changed)) return util::kNoMemory;
        if (changed) armed = false;
        if (round.evds.empty()) {
            // No CQ EVD feeds the CNO any more: util's wait for what is left of the timeout.
            if (deadline.infinite()) return cno->wait(DAT_TIMEOUT_INFINITE, out);
            if (deadline.expired()) return cno->wait(0, out);
            return cno->wait(static_cast<DAT_TIMEOUT>(deadline.poll_ms()) * 1000, out);
        }
    }
}

}  // namespace opendat::verbs

// A DAT timeout (microseconds, or DAT_TIMEOUT_INFINITE) turned into a deadline, and the
// poll(2) timeout left until it: for waits that sleep in poll and look again after each
// wakeup (a CQ-backed EVD, a CNO fed by completion channels).
#pragma once

#include <chrono>

#include <dat2/udat.h>

namespace opendat::util {

class Deadline {
  public:
    using clock = std::chrono::steady_clock;

    explicit Deadline(DAT_TIMEOUT timeout_us) noexcept
        : infinite_(timeout_us == DAT_TIMEOUT_INFINITE),
          at_(clock::now() + std::chrono::microseconds(infinite_ ? 0 : timeout_us)) {}

    bool infinite() const noexcept { return infinite_; }
    bool expired() const noexcept { return !infinite_ && clock::now() >= at_; }

    // Milliseconds for poll(2): what is left (at least 1, so a wait never spins), at most
    // `slice_ms` when that is positive (a wait that must also look at something poll
    // cannot see); -1 = forever when infinite and no slice.
    int poll_ms(int slice_ms = -1) const noexcept {
        long long ms = -1;
        if (!infinite_) {
            ms = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - clock::now()).count();
            if (ms < 1) ms = 1;
        }
        if (slice_ms > 0 && (ms < 0 || ms > slice_ms)) ms = slice_ms;
        return static_cast<int>(ms);
    }

  private:
    bool infinite_;
    clock::time_point at_;
};

}  // namespace opendat::util

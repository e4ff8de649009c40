// What one peer may hold of this process: the tcp provider's per-connection and
// per-listener limits (docs/tcp-provider.md, "Limits per peer"), and the admission list
// of the passive connections that have not sent their connection request yet.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>

namespace opendat::tcp {

struct PeerLimits {
    // A passive connection must deliver its CONN_REQ within this time (DAT_TCP_HANDSHAKE_MS).
    std::chrono::milliseconds handshake{5000};
    // Passive connections per listener still waiting for their CONN_REQ; the oldest is
    // dropped to admit a new one (DAT_TCP_MAX_PENDING).
    std::size_t max_pending = 64;
    // A graceful dat_ep_disconnect waits this long for the peer's end of the connection,
    // and a peer that ended its stream this long for the answers it asked for to leave
    // (TcpEp::rx_teardown) or for a receive its waiting message needs
    // (TcpEp::peer_ended_while_blocked); then the connection closes anyway (DAT_TCP_CLOSE_MS).
    std::chrono::milliseconds close{5000};
    // A dat_ep_connect without a timeout waits this long for the peer's CONN_ACC or
    // CONN_REJ once the socket connected (DAT_TCP_CONNECT_ANSWER_MS): a listener that
    // takes the socket and never answers must not keep the endpoint for ever. An IB CM's
    // request times out as well (the RDMA CM's after about a minute of retries).
    std::chrono::milliseconds connect_answer{60000};
    // After a remote access violation, the NAK is sent and the peer's further frames are
    // drained for at most this long (DAT_TCP_DRAIN_MS).
    std::chrono::milliseconds drain{1000};
    // Out of file descriptors at accept: the listener pauses this long (DAT_TCP_ACCEPT_
    // BACKOFF_MS) when no pending connection can be dropped to make room.
    std::chrono::milliseconds accept_backoff{100};
    // Only a pending connection at least this old is dropped to make room: a burst of
    // legitimate connections has time to deliver its requests (fixed).
    std::chrono::milliseconds evict_min_age{500};
};

// The only place these limits are read from the environment (values in ms / a count;
// anything unparsable or out of range keeps the default). Read once when an IA opens
// (IaParams::limits), so a test may set them per process before dat_ia_open.
PeerLimits peer_limits_from_env() noexcept;

// Passive connections still reading their CONN_REQ, oldest first: those of one listener
// (its cap), and those of one IA (the victims when descriptors run out, whichever listener
// needs one). An intrusive list: admitting costs no allocation. Thread-safe; a member
// leaves with remove() before it is destroyed. A member can be in one set of each scope.
enum class PendingScope { Listener = 0, Ia = 1 };

class PendingSet {
  public:
    class Member {
      public:
        virtual ~Member() = default;
        // Drop the connection (the cap or a descriptor shortage) unless its request has
        // arrived meanwhile (then it goes on, and false is returned): called by the
        // listener, without the set's lock, on a member already taken out of the set.
        virtual bool evict(const char *why) noexcept = 0;

      private:
        friend class PendingSet;
        std::chrono::steady_clock::time_point admitted_{};
        Member *prev_[2] = {}, *next_[2] = {};
        bool linked_[2] = {};
    };

    explicit PendingSet(PendingScope scope) : s_(static_cast<int>(scope)) {
        head_.prev_[s_] = head_.next_[s_] = &head_;
    }
    PendingSet(const PendingSet &) = delete;
    PendingSet &operator=(const PendingSet &) = delete;

    void add(Member *m) noexcept;
    void remove(Member *m) noexcept;
    // Takes the oldest member out of the set if it was admitted before `cutoff` (nullptr
    // when there is none that old).
    Member *pop_oldest(std::chrono::steady_clock::time_point cutoff =
                           std::chrono::steady_clock::time_point::max()) noexcept;
    std::size_t size() const noexcept;

  private:
    struct Head final : Member {
        bool evict(const char *) noexcept override { return false; }
    };
    void unlink(Member *m) noexcept;
    const int s_;
    mutable std::mutex mu_;
    Head head_;
    std::size_t n_ = 0;
};

}  // namespace opendat::tcp

// TcpEp: connection setup and teardown, and the progress thread's entry points.
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tcp/ep.hpp"
#include "util/sys_io.hpp"
#include "tcp/transport.hpp"
#include "trace/trace.hpp"
#include "tunables/tunables.hpp"

namespace opendat::tcp {

// A thread waits for the endpoint's lock: this round leaves the endpoint to it
// (util/ep_mutex.hpp). The rounds that follow come at once (epoll is level-triggered, a
// spin goes on), while the waiter, woken by the last unlock, may be queued behind the
// progress thread on its CPU, and its turn lasts only EpTurns::kMax: once per turn, the
// thread gives it the CPU, after it let go of the dispatch lock (Engine::owe_yield).
// Under ASan, 25 alternated runs of Attack.BigReadAnswersLeaveTheEndpointToItsApplication:
// a call's longest wait 5.35 -> 2.35 ms at most (median 1.09 -> 0.71 ms) of a 152 ms flood.
bool TcpEp::leave_to_waiter() noexcept {
    if (!turns_.yield(ep->mu)) return false;
    if (turns_.turn_began()) tr_->engine().owe_yield();
    return true;
}

[[gnu::hot]] void TcpEp::on_events(std::uint32_t events) noexcept {
    // A thread waits for the endpoint: its turn. epoll is level-triggered, so these events
    // come back in a later round.
    if (leave_to_waiter()) return;
    std::lock_guard lk(ep->mu);
    if (dead_ || !fd_) return;
    if (phase_ == Phase::Connecting) {
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) finish_connect();
    } else {
        // One transmit budget for the answers the receive side sends and the rest.
        std::uint64_t tx_budget = kTxBudget;
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) {
            if (!rx_.reading() && (events & (EPOLLERR | EPOLLHUP))) {
                // Waiting for a receive buffer, or sending the answers to a peer whose
                // end we read, but the connection is already gone.
                teardown(ended_or(DAT_CONNECTION_EVENT_BROKEN), true);
            } else if (!rx_.reading() && (events & EPOLLRDHUP)) {
                if (rx_.awaits_peer_end()) peer_ended_while_blocked();
            } else {
                rx_progress(&tx_budget);
            }
        }
        if (fd_ && (events & EPOLLOUT)) tx_progress(&tx_budget);
    }
    if (fd_) reap();
    update_poll();
}

// A round on this connection without epoll (Engine::poll_inline, Engine::spin): what
// on_events does for EPOLLIN and EPOLLOUT, on a connected socket only (a connecting one
// must wait for epoll to say its connect finished). recv() says EAGAIN when there is
// nothing, and a transmit with nothing queued makes no system call. Busy if the round took
// or sent bytes or completed a request: it may have posted an event, which a
// consumer waiting in the engine (wait_inline) must go and look at, as after a dispatch.
[[gnu::hot]] TcpEp::HotRound TcpEp::poll_hot(bool may_wait) noexcept {
    std::unique_lock lk(ep->mu, std::defer_lock);
    if (may_wait)
        lk.lock();
    else if (leave_to_waiter() || !lk.try_lock())
        return HotRound::Quiet;  // the application is in a call on it, or waits for one
    if (dead_ || !fd_ || phase_ != Phase::Connected) return HotRound::Gone;
    const std::uint64_t head = sq_head_, tx = sq_tx_, ctrl = ctrl_head_, sent = tx_sent_;
    std::uint64_t tx_budget = kTxBudget;  // shared, as in on_events
    bool took = false;
    if (rx_.reading()) {
        in_.begin_round(fd_.get(), kRxBudget);
        // The round a polling consumer makes most often finds nothing: nothing staged,
        // nothing to send or complete, the socket registered as reading wants. One
        // recv() that says EAGAIN changes none of that, so the round ends there, without
        // the frame machine, reap() and update_poll(), which would each find nothing to
        // do: some 17 lines of code fewer between two system calls (docs/benchmarks.md).
        if (in_.staged() == 0 && tx_idle() && sq_head_ == sq_tx_ &&
            (detached_ || (registered_ && armed_ == kReadEvents))) {
            const BufferedSocket::Io io = in_.fill();
            if (io == BufferedSocket::Io::Again) return HotRound::Quiet;
            // The stream's end or a socket error is ended here, as rx_round would: a second
            // recv() there would read the end of the stream where this one read the error
            // (and lose its trace).
            if (io != BufferedSocket::Io::Done)
                rx_stream_ended(io == BufferedSocket::Io::Failed ? in_.error() : 0);
        }
        rx_continue(&tx_budget);  // nothing once the connection ended
        took = in_.took_bytes();
    }
    // Nothing to send: no transmit round (a connection whose peer's end was read is no
    // longer Connected: rx_teardown, and on_events' rounds end it).
    if (fd_ && phase_ == Phase::Connected && !tx_idle()) tx_progress(&tx_budget);
    if (fd_) reap();
    update_poll();
    if (!fd_ || phase_ != Phase::Connected) return HotRound::Gone;
    const bool moved =
        took || tx_sent_ != sent || sq_head_ != head || sq_tx_ != tx || ctrl_head_ != ctrl;
    return moved ? HotRound::Busy : HotRound::Quiet;
}

[[gnu::hot]] bool TcpEp::leave_poll_set() noexcept {
    std::lock_guard lk(ep->mu);
    if (detached_) return true;
    if (dead_ || !fd_ || phase_ != Phase::Connected || !registered_ || armed_ != kReadEvents)
        return false;
    tr_->engine().remove_fd(fd_.get());
    forget_registration();
    detached_ = true;
    return true;
}

void TcpEp::rejoin_poll_set() noexcept {
    std::lock_guard lk(ep->mu);
    if (!detached_) return;
    detached_ = false;
    update_poll();
}

void TcpEp::on_tick(std::chrono::steady_clock::time_point now) noexcept {
    std::lock_guard lk(ep->mu);
    if (dead_ || !ticking_) return;
    if (close_deadline_tick(now)) return;  // limits per peer: graceful close / drain deadline
    if (phase_ == Phase::Connected && rx_.peer_fin) {
        // peer_ended_while_blocked: work done since the deadline was armed (a wait ended)
        // renews it; a wait still unchanged at the deadline ends the connection.
        if (const std::uint64_t mark = progress_mark(); mark != fin_mark_) {
            fin_mark_ = mark;
            arm_close_deadline(false);
            return;
        }
        if (!rx_.blocked || now < deadline_) return;
        DAPL_TRC(trace::kInfo, "tcp",
                 "EP %p: the peer ended its stream and its frame waited DAT_TCP_CLOSE_MS for a "
                 "receive or room for answers: closing",
                 static_cast<void *>(ep));
        teardown(DAT_CONNECTION_EVENT_BROKEN, true);
        return;
    }
    bool pending =
        phase_ == Phase::RetryWait || phase_ == Phase::Connecting || phase_ == Phase::AwaitAccept;
    if (!pending) return;
    if (now >= deadline_) {
        if (answer_limited_)
            DAPL_TRC(trace::kInfo, "tcp",
                     "EP %p: the peer did not answer the connection request within "
                     "DAT_TCP_CONNECT_ANSWER_MS: timed out",
                     static_cast<void *>(ep));
        teardown(DAT_CONNECTION_EVENT_TIMED_OUT, true);
        return;
    }
    if (phase_ == Phase::RetryWait && now >= next_attempt_) {
        if (start_attempt() != DAT_SUCCESS) teardown(DAT_CONNECTION_EVENT_UNREACHABLE, true);
    }
}

namespace {
// A refused connect is retried for this long (within the connect timeout): DAT
// applications exchange addresses out of band and may connect before the peer's
// dat_psp_create, which an IB CM rides out with its REQ retries. Override in ms with
// DAT_TCP_CONNECT_RETRY_MS.
std::chrono::milliseconds refused_retry_window() noexcept {
    static const std::chrono::milliseconds w = [] {
        return std::chrono::milliseconds(tunables::read_int(tunables::kTcpConnectRetryMs));
    }();
    return w;
}
constexpr std::chrono::milliseconds kRetryInterval{20};

}  // namespace

DAT_RETURN TcpEp::connect(const sockaddr *remote, DAT_CONN_QUAL qual, DAT_TIMEOUT timeout_us,
                          DAT_COUNT pdata_len, const void *pdata) noexcept {
    if (dead_) return util::invalid_handle(DAT_HANDLE_TYPE_EP);
    // A qualifier beyond the port range goes to its demultiplexing port (net.hpp); the
    // CONN_REQ carries the full qualifier either way, which routes it there.
    std::uint16_t port = 0;
    listen_port(qual, tr_->params().port_base, &port);
    if (remote->sa_family != AF_INET && remote->sa_family != AF_INET6)
        return util::err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED);
    dst_ = {};
    std::memcpy(&dst_, remote, sockaddr_len(remote));
    set_port(&dst_, port);
    ep->remote_addr = dst_;
    if (pdata_len > 0) std::memcpy(pdata_out_, pdata, static_cast<std::size_t>(pdata_len));
    // The CONN_REQ goes out as soon as the socket connects (control frames go first).
    reset_stream();
    offer_ = tr_->params().offer;
    FrameHeader req = make_handshake(kConnReq, static_cast<std::uint32_t>(pdata_len), offer_);
    req.addr = qual;
    queue_ctrl(req, pdata_out_);
    auto now = std::chrono::steady_clock::now();
    deadline_ = timeout_us == DAT_TIMEOUT_INFINITE ? std::chrono::steady_clock::time_point::max()
                                                   : now + std::chrono::microseconds(timeout_us);
    answer_limited_ = false;
    retry_until_ = now + refused_retry_window();
    DAT_RETURN rc = start_attempt();
    if (rc != DAT_SUCCESS) {
        reset_stream();
        phase_ = Phase::Idle;
        return rc;
    }
    // Ticks drive the timeout and the refused-connect retries until the outcome is known.
    ticking_ = true;
    tr_->engine().want_ticks(this, true);
    return DAT_SUCCESS;
}

DAT_RETURN TcpEp::start_attempt() noexcept {
    // dst_ stays as the consumer gave it (dat_ep_query reports it); the socket may see it
    // in its IPv4-mapped form (DAT_TCP_IPV4_SOCKETS=mapped, net.hpp).
    const bool mapped = tr_->params().mapped;
    const sockaddr_storage to = socket_address(dst_, mapped);
    Fd fd = stream_socket(to, mapped);
    if (!fd) return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
    tune_socket(fd.get(), tr_->params().dead_peer);
    // Leave from the IA's own address when the families match, so the connection uses the
    // interface the IA names.
    const sockaddr *local = tr_->address();
    if (local->sa_family == dst_.ss_family) {
        sockaddr_storage src{};
        std::memcpy(&src, local, sockaddr_len(local));
        set_port(&src, 0);
        src = socket_address(src, mapped);
        if (bind(fd.get(), reinterpret_cast<sockaddr *>(&src),
                 sockaddr_len(reinterpret_cast<const sockaddr *>(&src))) != 0) {
            // The IA's address is gone (interface down or renumbered): nothing to leave from.
            DAPL_TRC(trace::kInfo, "tcp", "EP %p cannot bind to the IA address: errno %d",
                     static_cast<void *>(ep), errno);
            return util::err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
        }
    }
    fd_ = std::move(fd);
    forget_registration();
    phase_ = Phase::Connecting;
    int rc = sys::connect(fd_.get(), reinterpret_cast<const sockaddr *>(&to),
                          sockaddr_len(reinterpret_cast<const sockaddr *>(&to)));
    if (rc != 0 && errno != EINPROGRESS) {
        int e = errno;
        if (e == ECONNREFUSED) {
            refused();
            return DAT_SUCCESS;
        }
        fd_.reset();
        return util::err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
    }
    sockaddr_storage me{};
    socklen_t melen = sizeof me;
    if (getsockname(fd_.get(), reinterpret_cast<sockaddr *>(&me), &melen) == 0)
        ep->local_qual = get_port(me);
    update_poll();
    return DAT_SUCCESS;
}

void TcpEp::refused() noexcept {
    auto now = std::chrono::steady_clock::now();
    if (now >= retry_until_ || now >= deadline_) {
        teardown(DAT_CONNECTION_EVENT_NON_PEER_REJECTED, true);
        return;
    }
    if (registered_) tr_->engine().remove_fd(fd_.get());
    fd_.reset();
    forget_registration();
    phase_ = Phase::RetryWait;
    next_attempt_ = now + kRetryInterval;
}

void TcpEp::finish_connect() noexcept {
    int e = 0;
    socklen_t len = sizeof e;
    if (getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
    if (e == EINPROGRESS || e == EALREADY) return;
    if (e == ECONNREFUSED) {
        refused();
        return;
    }
    if (e != 0) {
        DAPL_TRC(trace::kInfo, "tcp", "EP %p connect failed: errno %d", static_cast<void *>(ep), e);
        teardown(e == ETIMEDOUT ? DAT_CONNECTION_EVENT_TIMED_OUT : DAT_CONNECTION_EVENT_UNREACHABLE,
                 true);
        return;
    }
    phase_ = Phase::AwaitAccept;
    if (deadline_ == std::chrono::steady_clock::time_point::max()) {
        // Limits per peer: no timeout from the application, but the answer gets one.
        deadline_ = std::chrono::steady_clock::now() + tr_->params().limits.connect_answer;
        answer_limited_ = true;
    }
    tx_progress();
}

DAT_RETURN TcpEp::accept(Fd fd, const sockaddr_storage &peer, const FrameHeader &request,
                         DAT_COUNT pdata_len, const void *pdata) noexcept {
    if (dead_) return util::invalid_handle(DAT_HANDLE_TYPE_EP);
    fd_ = std::move(fd);
    ep->remote_addr = peer;
    phase_ = Phase::Connected;
    reset_stream();
    if (pdata_len > 0) std::memcpy(pdata_out_, pdata, static_cast<std::size_t>(pdata_len));
    offer_ = tr_->params().offer;
    // Our CONN_ACC still goes out in version-1 framing; everything after it in the
    // agreed version.
    queue_ctrl(make_handshake(kConnAcc, static_cast<std::uint32_t>(pdata_len), offer_), pdata_out_);
    wire_ = agree(offer_, announced(request));
    util::ep_established(ep, 0, nullptr);
    tx_progress();
    if (fd_) {
        reap();
        update_poll();
    }
    return DAT_SUCCESS;
}

DAT_RETURN TcpEp::disconnect(DAT_CLOSE_FLAGS flags) noexcept {
    if (dead_) return util::invalid_handle(DAT_HANDLE_TYPE_EP);
    switch (phase_) {
        case Phase::Idle:
        case Phase::Closed:
            // Already down (e.g. the peer disconnected first): nothing more to report.
            if (ep->state == DAT_EP_STATE_DISCONNECTED) return DAT_SUCCESS;
            return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
        case Phase::RetryWait:
        case Phase::Connecting:
        case Phase::AwaitAccept:
            teardown(DAT_CONNECTION_EVENT_DISCONNECTED, true);
            return DAT_SUCCESS;
        case Phase::Connected:
            if (flags == DAT_CLOSE_GRACEFUL_FLAG) {
                phase_ = Phase::Closing;
                ep->state = DAT_EP_STATE_DISCONNECT_PENDING;
                disc_wanted_ = true;
                arm_close_deadline(false);  // limits per peer: the peer gets this long
                tx_progress();
                if (fd_) update_poll();
                return DAT_SUCCESS;
            }
            // Abrupt: say goodbye if no frame is half-sent, then drop everything now.
            send_disc_now();
            teardown(DAT_CONNECTION_EVENT_DISCONNECTED, true);
            return DAT_SUCCESS;
        case Phase::Closing:
            if (flags != DAT_CLOSE_GRACEFUL_FLAG)
                teardown(ended_or(DAT_CONNECTION_EVENT_DISCONNECTED), true);
            return DAT_SUCCESS;
    }
    return DAT_SUCCESS;
}

void TcpEp::protocol_error(const char *why) noexcept {
    DAPL_TRC(trace::kError, "tcp",
             "EP %p: malformed frame from peer (%s: magic 0x%x version %u op %u length %u)",
             static_cast<void *>(ep), why, rx_.hdr.magic, rx_.hdr.version, rx_.hdr.op,
             rx_.hdr.length);
    // A malformed answer to our own request (AwaitAccept) is no broken connection, as none
    // was made: no asynchronous error, and the connect's end as for a stream that ends.
    const DAT_EVENT_NUMBER event = failure_event();
    if (event == DAT_CONNECTION_EVENT_BROKEN)
        util::post_async(ep->ia, DAT_ASYNC_ERROR_EP_BROKEN, ep);
    rx_teardown(event);
}

void TcpEp::flush_recvs(bool post_events) noexcept {
    srq_recvs_done(rq_tail_ - rq_head_);  // an SRQ's receive taken for a message: flushed
    if (post_events)
        for (; rq_head_ != rq_tail_; ++rq_head_)
            util::post_dto(ep->recv_evd, ep, rq_[rq_slot(rq_head_)].cookie, DAT_DTO_ERR_FLUSHED, 0,
                           DAT_DTO_RECEIVE);
    rq_head_ = rq_tail_;
}

// Ends the connection: socket closed, every outstanding request and receive flushed in
// order (requests that already failed keep their status), then the connection event.
void TcpEp::teardown(DAT_EVENT_NUMBER event, bool post_events, DAT_COUNT pdata_len,
                     const void *pdata) noexcept {
    if (fd_) {
        if (registered_) tr_->engine().remove_fd(fd_.get());
        fd_.reset();
    }
    forget_registration();
    if (ticking_) {
        tr_->engine().want_ticks(this, false);
        ticking_ = false;
    }
    if (post_events) {
        for (; sq_head_ != sq_tail_; ++sq_head_) {
            RequestWr &w = sq_[sq_slot(sq_head_)];
            bool finished = w.transmitted && (!w.need_reply || w.replied);
            DAT_DTO_COMPLETION_STATUS st = w.status != DAT_DTO_SUCCESS ? w.status
                                           : finished                  ? DAT_DTO_SUCCESS
                                                                       : DAT_DTO_ERR_FLUSHED;
            // As reap: a finished unsignalled request gets no event here either.
            if (!w.reports(st)) continue;
            post_request_completion(w, st);
        }
    }
    flush_recvs(post_events);
    sq_head_ = sq_tx_ = sq_tail_;
    reset_stream();
    phase_ = Phase::Closed;
    if (post_events) util::ep_connection_ended(ep, event, pdata_len, pdata);
}

// Everything that belongs to one TCP byte stream, in both directions, back to where a new
// stream starts. The one place for it: connect, accept and teardown each used to reset
// their own list of fields, and the lists had drifted apart.
void TcpEp::reset_stream() noexcept {
    rx_.reset();
    in_.reset();
    tx_src_ = TxSrc::None;
    tx_frame_.clear();
    ctrl_head_ = ctrl_tail_ = 0;
    close_after_ctrl_ = false;
    disc_wanted_ = disc_sent_ = false;
    wire_ = WireTerms{};
    drop_cork();
}

// An abrupt end's goodbye: DISC, if it can go out whole right now without splitting a
// half-sent frame. Best effort: without it the peer reports BROKEN instead of
// DISCONNECTED, which is all a failed send here could change.
void TcpEp::send_disc_now() noexcept {
    if (!fd_ || tx_src_ != TxSrc::None || disc_sent_) return;
    FrameHeader d = frame(kDisc, 0);
    ssize_t n = sys::send(fd_.get(), &d, sizeof d, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n != static_cast<ssize_t>(sizeof d)) {
        DAPL_TRC(trace::kInfo, "tcp", "EP %p: DISC not sent (%zd bytes, errno %d)",
                 static_cast<void *>(ep), n, n < 0 ? errno : 0);
    }
}

void TcpEp::destroy() noexcept {
    dead_ = true;
    // Freeing a connected EP is an abrupt disconnect: tell the peer if we can do so
    // without corrupting a half-sent frame, so it sees "disconnected", not "broken".
    if (phase_ == Phase::Connected || phase_ == Phase::Closing) send_disc_now();
    teardown(DAT_CONNECTION_EVENT_DISCONNECTED, false);
}

}  // namespace opendat::tcp

// TcpTransport: EP plumbing, listening sockets, and passive connections up to accept.
#include "tcp/transport.hpp"
#include "util/ep_checks.hpp"
#include "util/grace.hpp"
#include "util/sys_io.hpp"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>

#include "tcp/any_port.hpp"
#include "tcp/ep.hpp"
#include "tcp/peer_limits.hpp"
#include "tcp/srq.hpp"
#include "trace/trace.hpp"
#include "util/extension.hpp"
#include "util/srq.hpp"

namespace opendat::tcp {

namespace {

TcpEp *tcp_ep(util::Ep *ep) noexcept {
    return static_cast<TcpEp *>(ep->impl);
}

// max_eps: an endpoint costs memory only, except while it connects or is connected, when it
// holds one socket. So the endpoints that can be connected at once are bounded by the
// descriptors the process may open: the hard RLIMIT_NOFILE (an application raises its soft
// limit up to it, as datscale does), less a reserve for the IA's own (epoll, eventfds,
// listeners) and the application's. A fixed figure would understate a raised limit
// (10,000 endpoints work) or promise more than the process can open.
DAT_COUNT connectable_eps() noexcept {
    constexpr rlim_t kReserve = 64;
    constexpr rlim_t kMax = 0x7fffffff;
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024 - static_cast<DAT_COUNT>(kReserve);
    rlim_t n = lim.rlim_max == RLIM_INFINITY ? kMax : lim.rlim_max;
    n = n > kReserve * 2 ? n - kReserve : n / 2;
    return static_cast<DAT_COUNT>(n > kMax ? kMax : n);
}

// A passive connection whose CONN_REQ is being read. Once complete it becomes a CR and
// leaves the epoll set; accept or reject consumes it.
class PendingConn final : public Pollable, public PendingSet::Member {
  public:
    PendingConn(TcpTransport *tr, std::shared_ptr<PortRoutes> routes, Fd fd,
                const sockaddr_storage &peer)
        : tr_(tr), routes_(std::move(routes)), fd_(std::move(fd)), peer_(peer) {}
    ~PendingConn() override { leave_sets(); }
    void leave_sets() noexcept {  // limits per peer
        if (set_) set_->remove(this);
        if (ia_set_) ia_set_->remove(this);
    }

    // Limits per peer (peer_limits.hpp): the handshake deadline and the listener's
    // admission list, which this connection leaves once its CONN_REQ is complete.
    void admit(std::shared_ptr<PendingSet> set, std::chrono::milliseconds handshake) noexcept {
        set_ = std::move(set);
        ia_set_ = tr_->pending();
        deadline_ = std::chrono::steady_clock::now() + handshake;
        set_->add(this);
        ia_set_->add(this);
        tr_->engine().want_ticks(this, true);
    }
    void on_tick(std::chrono::steady_clock::time_point now) noexcept override {
        std::lock_guard lk(mu_);
        if (state_ != State::Reading || now < deadline_) return;
        DAPL_TRC(trace::kInfo, "tcp", "dropping passive connection: no CONN_REQ in time");
        fail();
    }
    bool evict(const char *why) noexcept override {
        std::lock_guard lk(mu_);
        if (state_ != State::Reading || !fd_) return false;
        read_request();  // a request already in the socket is served, not dropped
        if (state_ != State::Reading || !fd_) return false;
        DAPL_TRC(trace::kInfo, "tcp", "dropping pending passive connection: %s", why);
        fail();
        return true;
    }

    void on_events(std::uint32_t) noexcept override {
        std::lock_guard lk(mu_);
        if (state_ != State::Reading || !fd_) return;
        read_request();
    }

    // Reads what has arrived of the CONN_REQ (mu_ held, Reading).
    void read_request() noexcept {
        for (;;) {
            ssize_t n;
            if (got_ < sizeof hdr_) {
                n = sys::recv(fd_.get(), reinterpret_cast<char *>(&hdr_) + got_, sizeof hdr_ - got_,
                              MSG_DONTWAIT);
            } else {
                if (!valid_handshake(hdr_, kConnReq, util::kMaxPrivateData)) {
                    // Another protocol or version: refuse by closing; the active side
                    // reports a non-peer reject.
                    DAPL_TRC(trace::kInfo, "tcp",
                             "refusing connection: bad CONN_REQ (magic 0x%x version %u op %u)",
                             hdr_.magic, hdr_.version, hdr_.op);
                    fail();
                    return;
                }
                std::size_t have = got_ - sizeof hdr_;
                if (have == hdr_.length) {
                    complete();
                    return;
                }
                n = sys::recv(fd_.get(), pdata_ + have, hdr_.length - have, MSG_DONTWAIT);
            }
            if (n > 0) {
                got_ += static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
            if (n < 0 && errno == EINTR) continue;
            fail();
            return;
        }
    }

    // Hands the socket to an EP (accept) or answers CONN_REJ and closes (reject).
    Fd take() noexcept {
        std::lock_guard lk(mu_);
        leave_sets();  // limits per peer
        state_ = State::Done;
        return std::move(fd_);
    }
    const sockaddr_storage &peer() const noexcept { return peer_; }
    const FrameHeader &request() const noexcept { return hdr_; }  // after take()

    int fd() const noexcept { return fd_.get(); }

  private:
    enum class State { Reading, Offered, Done };

    void fail() noexcept {
        leave_sets();  // limits per peer
        tr_->engine().remove_fd(fd_.get());
        fd_.reset();
        state_ = State::Done;
        tr_->engine().retire(this);
    }

    void complete() noexcept {
        leave_sets();  // limits per peer: no deadline once the request is in
        tr_->engine().want_ticks(this, false);
        tr_->engine().remove_fd(fd_.get());
        std::lock_guard slk(routes_->mu);
        // The qualifier the peer asked for (untrusted: only compared) picks the service
        // point; the one it names may also have been freed meanwhile.
        util::Sp *sp = routes_->route(hdr_.addr, tr_->params().port_base);
        if (sp == nullptr) {
            refuse_no_service_point();
            return;
        }
        util::Cr *cr = util::cr_new(sp);
        if (cr == nullptr) {
            fail();
            return;
        }
        cr->remote_addr = peer_;
        cr->remote_port = get_port(peer_);
        cr->pdata_len = static_cast<DAT_COUNT>(hdr_.length);
        std::memcpy(cr->pdata, pdata_, hdr_.length);
        cr->impl = this;
        state_ = State::Offered;
        if (!util::post_cr_arrival(cr)) {
            // CR EVD full (util freed the CR): refuse rather than leave the peer hanging.
            fd_.reset();
            state_ = State::Done;
            tr_->engine().retire(this);
        }
    }

    // No service point for the qualifier: CONN_REJ marked "no such service point" (the
    // initiator reports DAT_CONNECTION_EVENT_NON_PEER_REJECTED), then close.
    void refuse_no_service_point() noexcept {
        DAPL_TRC(trace::kInfo, "tcp", "refusing connection: no service point for qualifier %llu",
                 static_cast<unsigned long long>(hdr_.addr));
        FrameHeader h = make_header(kConnRej, 0);
        h.aux = kRejNoServicePoint;
        [[maybe_unused]] ssize_t n =
            sys::send(fd_.get(), &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
        shutdown(fd_.get(), SHUT_WR);
        fd_.reset();
        state_ = State::Done;
        tr_->engine().retire(this);
    }

    TcpTransport *tr_;
    std::shared_ptr<PortRoutes> routes_;
    std::mutex mu_;
    Fd fd_;
    sockaddr_storage peer_;
    State state_ = State::Reading;
    FrameHeader hdr_{};
    std::size_t got_ = 0;
    unsigned char pdata_[util::kMaxPrivateData]{};
    std::shared_ptr<PendingSet> set_, ia_set_;        // limits per peer
    std::chrono::steady_clock::time_point deadline_;  // CONN_REQ due (limits per peer)
};

}  // namespace

util::Sp *PortRoutes::route(DAT_CONN_QUAL qual, std::uint16_t base) const noexcept {
    std::uint16_t port;
    if (qual == 0 || qual_to_port(qual, base, &port)) return direct;
    for (util::Sp *sp : beyond)
        if (sp->qual == qual) return sp;
    return nullptr;
}

DAT_RETURN PortRoutes::add(util::Sp *sp, bool is_direct) noexcept {
    if (is_direct) {
        if (direct != nullptr) return util::err(DAT_CONN_QUAL_IN_USE);
        direct = sp;
        return DAT_SUCCESS;
    }
    for (const util::Sp *other : beyond)
        if (other->qual == sp->qual) return util::err(DAT_CONN_QUAL_IN_USE);
    try {
        beyond.push_back(sp);
    } catch (...) {
        return util::kNoMemory;
    }
    return DAT_SUCCESS;
}

bool PortRoutes::remove(const util::Sp *sp) noexcept {
    if (direct == sp) direct = nullptr;
    std::erase(beyond, sp);
    return direct == nullptr && beyond.empty();
}

// A listening socket for the service points of one TCP port.
class Listener final : public Pollable {
  public:
    Listener(TcpTransport *tr, std::shared_ptr<PortRoutes> routes, Fd fd, std::uint16_t port)
        : routes(std::move(routes)), port(port), tr_(tr), fd_(std::move(fd)) {}

    void on_events(std::uint32_t) noexcept override {
        // The consumer may free the last service point (close_fd) while this runs on the
        // progress thread: the descriptor is closed only between two rounds, never while
        // accept4 may use its number (a reused number would be someone else's socket).
        std::lock_guard lk(fd_mu_);
        if (!fd_) return;
        // Limits per peer: a bounded batch per wake-up (level-triggered epoll brings us back).
        for (int budget = 64; budget > 0; --budget) {
            sockaddr_storage peer{};
            socklen_t len = sizeof peer;
            int c = sys::accept4(fd_.get(), reinterpret_cast<sockaddr *>(&peer), &len,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (c < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if (errno == EMFILE || errno == ENFILE) {
                    // Limits per peer: never spin on a listener we cannot accept from.
                    if (admission_.out_of_descriptors(errno)) continue;
                    return;
                }
                return;  // EAGAIN
            }
            Fd fd(c);
            // A mapped listener's peer, as the consumer knows it: AF_INET. (An IPv6 IA's
            // dual-stack listener reports its IPv4 peers as mapped, as it always did.)
            if (tr_->params().mapped) unmap_v4(&peer);
            tune_socket(c, tr_->params().dead_peer);
            auto *pc = new (std::nothrow) PendingConn(tr_, routes, std::move(fd), peer);
            if (pc == nullptr) continue;
            try {
                tr_->engine().adopt(pc);
            } catch (...) {
                delete pc;
                continue;
            }
            if (!tr_->engine().add(pc->fd(), pc, EPOLLIN | EPOLLRDHUP)) {
                tr_->engine().retire(pc);
                continue;
            }
            if (!admission_.admit(pc)) return;  // limits per peer: listener paused
        }
    }

    void on_tick(std::chrono::steady_clock::time_point now) noexcept override {
        admission_.tick(now);  // limits per peer: re-arm after an accept back-off
    }

    void close_fd() noexcept {
        std::lock_guard lk(fd_mu_);
        admission_.stop();  // limits per peer: under the back-off's lock
        tr_->engine().remove_fd(fd_.get());
        fd_.reset();
    }

    const std::shared_ptr<PortRoutes> routes;
    const std::uint16_t port;

  private:
    TcpTransport *tr_;
    std::mutex fd_mu_;  // fd_ against close_fd() (lock order: fd_mu_, then Admission's)
    Fd fd_;
    // Limits per peer: the pending list, its cap, the EMFILE back-off.
    class Admission {
      public:
        explicit Admission(Listener *l)
            : l_(l),
              limits_(l->tr_->params().limits),
              pending_(std::make_shared<PendingSet>(PendingScope::Listener)) {}
        // Admits pc; false when the cap is reached and no pending connection is old enough
        // to be dropped: the listener then pauses (the kernel's backlog holds the rest).
        bool admit(PendingConn *pc) noexcept {
            bool room = true;
            while (pending_->size() >= limits_.max_pending) {
                PendingSet::Member *old = pending_->pop_oldest(old_enough());
                if (old == nullptr) {
                    room = false;
                    break;
                }
                old->evict("too many pending connections on this listener");
            }
            pc->admit(pending_, limits_.handshake);
            if (!room) pause("too many pending connections", 0);
            return room;
        }
        // Out of descriptors: drop the IA's oldest pending connection, whichever listener
        // it came through, and try again (true), or pause the listener for a while (false).
        // (The same engine dispatches them all: none is deleted while we hold it.)
        bool out_of_descriptors(int err) noexcept {
            while (PendingSet::Member *old = l_->tr_->pending()->pop_oldest(old_enough()))
                if (old->evict("out of file descriptors")) return true;
            pause("out of file descriptors", err);
            return false;
        }
        std::chrono::steady_clock::time_point old_enough() const noexcept {
            return std::chrono::steady_clock::now() - limits_.evict_min_age;
        }
        void pause(const char *why, int err) noexcept {
            std::lock_guard lk(mu_);
            if (paused_ || stopped_) return;
            DAPL_TRC(err != 0 ? trace::kError : trace::kInfo, "tcp",
                     "listener: %s (errno %d): not accepting for %lld ms", why, err,
                     static_cast<long long>(limits_.accept_backoff.count()));
            paused_ = true;
            resume_at_ = std::chrono::steady_clock::now() + limits_.accept_backoff;
            l_->tr_->engine().modify(l_->fd_.get(), l_, 0);
            l_->tr_->engine().want_ticks(l_, true);
        }
        void stop() noexcept {
            std::lock_guard lk(mu_);
            paused_ = false;
            stopped_ = true;
        }
        void tick(std::chrono::steady_clock::time_point now) noexcept {
            std::lock_guard lk(mu_);
            if (!paused_ || now < resume_at_) return;
            // Still at the cap (the pause admitted one above it): make room first, or stay
            // paused. Resuming anyway would admit one more above the cap per back-off.
            while (pending_->size() >= limits_.max_pending) {
                PendingSet::Member *old = pending_->pop_oldest(old_enough());
                if (old == nullptr) {
                    resume_at_ = now + limits_.accept_backoff;
                    return;
                }
                old->evict("too many pending connections on this listener");
            }
            paused_ = false;
            l_->tr_->engine().want_ticks(l_, false);
            if (!stopped_) l_->tr_->engine().modify(l_->fd_.get(), l_, EPOLLIN);
        }

      private:
        Listener *l_;
        const PeerLimits &limits_;
        std::shared_ptr<PendingSet> pending_;
        std::mutex mu_;
        bool paused_ = false, stopped_ = false;
        std::chrono::steady_clock::time_point resume_at_;
    };
    Admission admission_{this};
};

TcpTransport::TcpTransport(util::Ia *ia, const IaParams &params) : ia_(ia), params_(params) {
    limits_.transport_name = "tcp";
    limits_.delayed_ack_supported = true;
    // ep_tx.cpp: a suppressed request that succeeds posts no event; a fenced one waits for
    // the RDMA reads before it; a solicited one is marked so on the wire (kFlagSolicited).
    limits_.completion_flags = static_cast<DAT_COMPLETION_FLAGS>(
        DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG |
        DAT_COMPLETION_SOLICITED_WAIT_FLAG);
    limits_.max_iov = kMaxIov;
    limits_.transport_mtu = 65536;
    // The IB extensions, as far as this IA offers them on the wire (DAT_TCP_WIRE_VERSION=1
    // offers none: the IA then reports no extensions).
    limits_.immediate_data = (params.offer.caps & kCapImmediate) != 0;
    limits_.atomics = (params.offer.caps & kCapAtomics) != 0;
    limits_.max_eps = connectable_eps();
    limits_.max_srqs = 4096;
    limits_.max_ep_per_srq = limits_.max_eps;
    limits_.max_recv_per_srq = 1 << 16;
}

TcpTransport::~TcpTransport() = default;

DAT_RETURN TcpTransport::ep_create(util::Ep *ep) noexcept {
    auto *t = new (std::nothrow) TcpEp(this, ep);
    if (t == nullptr) return util::kNoMemory;
    try {
        t->init();
        if (ep->srq != nullptr) static_cast<TcpSrq *>(ep->srq->impl)->attach();
        engine_.adopt(t);
    } catch (...) {
        if (ep->srq != nullptr) static_cast<TcpSrq *>(ep->srq->impl)->detach(t);
        delete t;
        return util::kNoMemory;
    }
    ep->impl = t;
    // An SRQ endpoint posts no receives of its own: its attribute is the only way to ask.
    if ((ep->attr.recv_completion_flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) &&
        ep->recv_evd != nullptr)
        ep->recv_evd->set_solicited_only();
    return DAT_SUCCESS;
}

// Every EVD and the PZ are looked up at each use, so only the rings need a new size.
DAT_RETURN TcpTransport::ep_modify(util::Ep *ep, const util::EpConfig &next) noexcept {
    return tcp_ep(ep)->reconfigure(next.attr);
}

void TcpTransport::ep_destroy(util::Ep *ep) noexcept {
    TcpEp *t = tcp_ep(ep);
    {
        std::lock_guard lk(ep->mu);
        t->destroy();
        // No wake-up reaches t any more (one already under way finds it dead).
        if (ep->srq != nullptr) static_cast<TcpSrq *>(ep->srq->impl)->detach(t);
    }
    engine_.retire(t);  // deletes t once the thread lets go; util's EP follows (ep_release)
}

DAT_RETURN TcpTransport::ep_connect(util::Ep *ep, const sockaddr *remote, DAT_CONN_QUAL qual,
                                    DAT_TIMEOUT timeout_us, DAT_COUNT pdata_len,
                                    const void *pdata) noexcept {
    std::lock_guard lk(ep->mu);
    return tcp_ep(ep)->connect(remote, qual, timeout_us, pdata_len, pdata);
}

DAT_RETURN TcpTransport::ep_disconnect(util::Ep *ep, DAT_CLOSE_FLAGS flags) noexcept {
    std::lock_guard lk(ep->mu);
    return tcp_ep(ep)->disconnect(flags);
}

namespace {

[[gnu::always_inline]] inline DAT_RETURN post_send(util::Ep *ep, DAT_COUNT n,
                                                   const DAT_LMR_TRIPLET *iov,
                                                   DAT_DTO_COOKIE cookie,
                                                   DAT_COMPLETION_FLAGS flags) noexcept {
    std::lock_guard lk(ep->mu);
    TcpEp *const t = tcp_ep(ep);
    if (n == 1 && t->send_now(*iov, cookie, flags)) return DAT_SUCCESS;
    return t->post_request(DAT_DTO_SEND, n, iov, cookie, nullptr, flags);
}

[[gnu::always_inline]] inline DAT_RETURN post_recv(util::Ep *ep, DAT_COUNT n,
                                                   const DAT_LMR_TRIPLET *iov,
                                                   DAT_DTO_COOKIE cookie,
                                                   DAT_COMPLETION_FLAGS flags) noexcept {
    std::lock_guard lk(ep->mu);
    // A receive for solicited notification (or the EP's attribute asking for it, as the
    // reference reads it): the receive EVD's waiters wake for solicited events only, as a
    // verbs CQ armed with solicited_only does (util/evd.hpp).
    if (((flags | ep->attr.recv_completion_flags) & DAT_COMPLETION_SOLICITED_WAIT_FLAG) &&
        ep->recv_evd != nullptr)
        ep->recv_evd->set_solicited_only();
    return tcp_ep(ep)->post_recv(n, iov, cookie);
}

// dat_ep_post_send and dat_ep_post_recv straight to the endpoint (util::HotEntries): util's
// checks for the call, then the post.
template <auto Checks, auto Post>
[[gnu::hot]] DAT_RETURN hot_post(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                 DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept {
    util::grace::Guard call;  // a hot entry point: its own (util/grace.hpp)
    util::Ep *ep = nullptr;
    if (DAT_RETURN rc = Checks(h, n, iov, &ep); rc != DAT_SUCCESS) return rc;
    return Post(ep, n, iov, cookie, flags);
}

}  // namespace

const util::HotEntries kHotEntries{hot_post<util::send_checks, post_send>,
                                   hot_post<util::recv_checks, post_recv>};

DAT_RETURN TcpTransport::ep_post_send(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                      DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept {
    return post_send(ep, n, iov, cookie, flags);
}

DAT_RETURN TcpTransport::ep_post_recv(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                      DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept {
    return post_recv(ep, n, iov, cookie, flags);
}

[[gnu::hot]] DAT_RETURN TcpTransport::ep_post_rdma_write(util::Ep *ep, DAT_COUNT n,
                                                         const DAT_LMR_TRIPLET *iov,
                                                         DAT_DTO_COOKIE cookie,
                                                         const DAT_RMR_TRIPLET *remote,
                                                         DAT_COMPLETION_FLAGS flags) noexcept {
    std::lock_guard lk(ep->mu);
    return tcp_ep(ep)->post_request(DAT_DTO_RDMA_WRITE, n, iov, cookie, remote, flags);
}

[[gnu::hot]] DAT_RETURN TcpTransport::ep_post_rdma_read(util::Ep *ep, DAT_COUNT n,
                                                        const DAT_LMR_TRIPLET *iov,
                                                        DAT_DTO_COOKIE cookie,
                                                        const DAT_RMR_TRIPLET *remote,
                                                        DAT_COMPLETION_FLAGS flags) noexcept {
    std::lock_guard lk(ep->mu);
    return tcp_ep(ep)->post_request(DAT_DTO_RDMA_READ, n, iov, cookie, remote, flags);
}

DAT_RETURN TcpTransport::ep_post_write_immed(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                             DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                             std::uint32_t immed,
                                             DAT_COMPLETION_FLAGS flags) noexcept {
    ExtArgs x;
    x.immed = immed;
    x.immed_op = true;
    std::lock_guard lk(ep->mu);
    return tcp_ep(ep)->post_request(static_cast<DAT_DTOS>(DAT_IB_DTO_RDMA_WRITE_IMMED), n, iov,
                                    cookie, remote, flags, &x);
}

DAT_RETURN TcpTransport::ep_post_atomic(util::Ep *ep, util::AtomicOp op,
                                        std::uint64_t add_or_compare, std::uint64_t swap,
                                        const DAT_LMR_TRIPLET *local, DAT_DTO_COOKIE cookie,
                                        const DAT_RMR_TRIPLET *remote,
                                        DAT_COMPLETION_FLAGS flags) noexcept {
    ExtArgs x;
    x.operand[0] = add_or_compare;
    x.operand[1] = swap;
    x.cmp_swap = op == util::AtomicOp::CmpSwap;
    // The original value is 8 bytes: that is the local segment the request writes.
    DAT_LMR_TRIPLET result = *local;
    result.segment_length = sizeof(std::uint64_t);
    const auto dto = static_cast<DAT_DTOS>(x.cmp_swap ? DAT_IB_DTO_CMP_SWAP : DAT_IB_DTO_FETCH_ADD);
    std::lock_guard lk(ep->mu);
    return tcp_ep(ep)->post_request(dto, 1, &result, cookie, remote, flags, &x);
}

void TcpTransport::ep_idle(util::Ep *ep, bool *recv_idle, bool *request_idle) noexcept {
    std::lock_guard lk(ep->mu);
    tcp_ep(ep)->idle(recv_idle, request_idle);
}

DAT_RETURN TcpTransport::srq_create(util::Srq *srq) noexcept {
    auto *s = new (std::nothrow) TcpSrq();
    if (s == nullptr) return util::kNoMemory;
    try {
        engine_.adopt(s);
    } catch (...) {
        delete s;
        return util::kNoMemory;
    }
    if (!s->ok() || !engine_.add(s->fd(), s, EPOLLIN)) {
        engine_.retire(s);
        return util::err(DAT_INSUFFICIENT_RESOURCES);
    }
    srq->impl = s;
    return DAT_SUCCESS;
}

void TcpTransport::srq_destroy(util::Srq *srq) noexcept {
    auto *s = static_cast<TcpSrq *>(srq->impl);
    engine_.remove_fd(s->fd());
    // A wake-up being dispatched finishes first; a dat_srq_post_recv that checked the SRQ
    // before the free still finds s (util/grace.hpp).
    engine_.retire(s);
}

DAT_RETURN TcpTransport::srq_post_recv(util::Srq *srq, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                       DAT_DTO_COOKIE cookie) noexcept {
    auto *s = static_cast<TcpSrq *>(srq->impl);
    bool wake = false;
    DAT_RETURN rc;
    {
        std::lock_guard lk(srq->mu);
        rc = util::srq_post_locked(srq, n, iov, cookie);
        wake = rc == DAT_SUCCESS && s->has_waiters();
    }
    if (wake) s->signal();
    return rc;
}

DAT_RETURN TcpTransport::ep_recv_info(util::Ep *ep, DAT_COUNT *nbufs, DAT_COUNT *span) noexcept {
    std::lock_guard lk(ep->mu);
    tcp_ep(ep)->recv_info(nbufs, span);
    return DAT_SUCCESS;
}

DAT_RETURN TcpTransport::sp_listen(util::Sp *sp) noexcept {
    const DAT_CONN_QUAL qual = sp->qual;
    std::lock_guard lk(ports_mu_);
    // psp_create_any: qualifier 0 means "any"; the kernel picks the port.
    if (qual == 0) return open_listener(sp, 0, true);
    std::uint16_t port = 0;
    const bool direct = listen_port(qual, params_.port_base, &port);
    auto it = ports_.find(port);
    if (it == ports_.end()) return open_listener(sp, port, direct);
    // Another service point of this IA already listens on the port: share its listener.
    Listener *l = it->second;
    std::lock_guard rlk(l->routes->mu);
    if (DAT_RETURN rc = l->routes->add(sp, direct); rc != DAT_SUCCESS) return rc;
    sp->impl = l;
    DAPL_TRC(trace::kInfo, "tcp", "qualifier %llu shares the listener on port %u",
             static_cast<unsigned long long>(qual), port);
    return DAT_SUCCESS;
}

// ports_mu_ held.
DAT_RETURN TcpTransport::open_listener(util::Sp *sp, std::uint16_t port, bool direct) noexcept {
    const DAT_CONN_QUAL qual = sp->qual;
    sockaddr_storage addr = socket_address(params_.addr, params_.mapped);
    const socklen_t addr_len = sockaddr_len(reinterpret_cast<const sockaddr *>(&addr));
    set_port(&addr, port);
    Fd fd = stream_socket(addr, params_.mapped);
    if (!fd) return util::err(DAT_INSUFFICIENT_RESOURCES);
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // psp_create_any: a port above the port base, so the qualifier does not wrap (any_port.hpp).
    int bind_err = port == 0 ? bind_any_port(fd.get(), addr, addr_len, params_.port_base)
                   : bind(fd.get(), reinterpret_cast<sockaddr *>(&addr), addr_len) != 0 ? errno
                                                                                        : 0;
    if (bind_err != 0) {
        // A port owned by another process (or IA): for a qualifier beyond the port range,
        // another qualifier hashed to the same demultiplexing port there.
        DAPL_TRC(trace::kInfo, "tcp", "bind to port %u for qualifier %llu failed: errno %d%s", port,
                 static_cast<unsigned long long>(qual), bind_err,
                 direct ? "" : " (demultiplexing port of a qualifier beyond the port range)");
        return bind_err == EADDRINUSE ? util::err(DAT_CONN_QUAL_IN_USE)
                                      : util::err(DAT_CONN_QUAL_UNAVAILABLE);
    }
    if (listen(fd.get(), SOMAXCONN) != 0) return util::err(DAT_CONN_QUAL_UNAVAILABLE);
    sockaddr_storage bound{};
    socklen_t blen = sizeof bound;
    getsockname(fd.get(), reinterpret_cast<sockaddr *>(&bound), &blen);
    const std::uint16_t bound_port = get_port(bound);
    try {
        auto routes = std::make_shared<PortRoutes>();
        if (DAT_RETURN rc = routes->add(sp, direct); rc != DAT_SUCCESS) return rc;  // memory
        if (qual == 0) sp->qual = bound_port - params_.port_base;
        int raw = fd.get();
        auto *l = new Listener(this, routes, std::move(fd), bound_port);
        engine_.adopt(l);
        ports_[bound_port] = l;
        if (!engine_.add(raw, l, EPOLLIN)) {
            ports_.erase(bound_port);
            engine_.retire(l);
            return util::err(DAT_INSUFFICIENT_RESOURCES);
        }
        sp->impl = l;
    } catch (...) {
        return util::kNoMemory;
    }
    DAPL_TRC(trace::kInfo, "tcp", "listening on port %u for qualifier %llu", bound_port,
             static_cast<unsigned long long>(sp->qual));
    return DAT_SUCCESS;
}

void TcpTransport::sp_close(util::Sp *sp) noexcept {
    auto *l = static_cast<Listener *>(sp->impl);
    bool last;
    std::lock_guard lk(ports_mu_);
    {
        std::lock_guard rlk(l->routes->mu);
        last = l->routes->remove(sp);
    }
    if (!last) return;
    ports_.erase(l->port);
    l->close_fd();
    engine_.retire(l);
    // Nothing of ours refers to the service point any more (CRs keep only its address as
    // an opaque value in their arrival events): util may free it.
}

DAT_RETURN TcpTransport::cr_accept(util::Cr *cr, util::Ep *ep, DAT_COUNT pdata_len,
                                   const void *pdata) noexcept {
    auto *pc = static_cast<PendingConn *>(cr->impl);
    Fd fd = pc->take();
    sockaddr_storage peer = pc->peer();
    FrameHeader request = pc->request();
    engine_.retire(pc);
    DAT_RETURN rc = util::err(DAT_INVALID_STATE);
    if (fd) {
        std::lock_guard lk(ep->mu);
        rc = tcp_ep(ep)->accept(std::move(fd), peer, request, pdata_len, pdata);
    }
    return rc;
}

DAT_RETURN TcpTransport::cr_reject(util::Cr *cr, DAT_COUNT pdata_len, const void *pdata) noexcept {
    auto *pc = static_cast<PendingConn *>(cr->impl);
    Fd fd = pc->take();
    engine_.retire(pc);
    if (fd) {
        // Best effort: a tiny frame on an idle socket; the peer treats a bare close as a
        // non-peer reject anyway.
        FrameHeader h = make_header(kConnRej, static_cast<std::uint32_t>(pdata_len));
        iovec iov[2] = {{&h, sizeof h},
                        {const_cast<void *>(pdata), static_cast<std::size_t>(pdata_len)}};
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = pdata_len > 0 ? 2 : 1;
        [[maybe_unused]] ssize_t n = sys::sendmsg(fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        shutdown(fd.get(), SHUT_WR);
    }
    return DAT_SUCCESS;
}

void TcpTransport::cr_destroy(util::Cr *cr) noexcept {
    auto *pc = static_cast<PendingConn *>(cr->impl);
    pc->take();
    engine_.retire(pc);
}

DAT_RETURN make_transport(util::ProviderInstance *inst, util::Ia *ia,
                          std::unique_ptr<util::Transport> *out) {
    IaParams params;
    if (DAT_RETURN rc = parse_ia_params(inst->params, &params); rc != DAT_SUCCESS) {
        DAPL_TRC(trace::kError, "tcp", "%s: cannot use ia_params \"%s\"", inst->name.c_str(),
                 inst->params.c_str());
        return rc;
    }
    params.dead_peer = dead_peer_policy_from_env();
    params.limits = peer_limits_from_env();
    params.offer = wire_offer_from_env();
    params.mapped = mapped_sockets_from_env(params.addr);
    auto t = std::make_unique<TcpTransport>(ia, params);
    if (!t->ok()) return util::err(DAT_INSUFFICIENT_RESOURCES);
    char buf[80];
    DAPL_TRC(trace::kNormal, "tcp", "%s: IA address %s, port base %u%s", inst->name.c_str(),
             addr_str(reinterpret_cast<const sockaddr *>(&params.addr), buf, sizeof buf),
             params.port_base, params.mapped ? ", IPv4-mapped AF_INET6 sockets" : "");
    *out = std::move(t);
    return DAT_SUCCESS;
}

}  // namespace opendat::tcp

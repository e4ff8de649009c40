// The sendrecv transport: the least a provider on util must write to move messages.
//
// Wire: one TCP connection per DAT connection, carrying length-prefixed messages.
//   connect:  the active side sends  [u32 pdata_len][pdata]
//   answer:   the passive side sends [u32 accepted (1/0)][u32 pdata_len][pdata]
//   message:  [u32 length][bytes]    (one dat_ep_post_send, one receive on the peer)
// The end of the stream is the end of the connection.
//
// Threads: the consumer's thread writes a message inline (post_send) and completes it at
// once; one progress thread per IA polls every socket, accepts requests, reads answers and
// messages into posted receives, and notices the end of connections. Only the progress
// thread closes sockets (Lists::doomed), so a descriptor it polls can never be reused under it.
#include "sendrecv/transport.hpp"
#include "util/sys_io.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "util/netdev.hpp"

namespace opendat::sendrecv {
namespace {

using Clock = std::chrono::steady_clock;
constexpr DAT_COUNT kMaxIov = 16;  // Limits::max_iov: segments per DTO
using util::Cr;
using util::Ep;
using util::Sp;

// Whole reads and writes on a blocking socket; false when the connection is gone.
bool read_all(int fd, void *buf, std::size_t n) noexcept {
    auto *p = static_cast<unsigned char *>(buf);
    while (n > 0) {
        ssize_t r = sys::recv(fd, p, n, 0);
        if (r <= 0) return false;
        p += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

bool write_all(int fd, const void *buf, std::size_t n) noexcept {
    auto *p = static_cast<const unsigned char *>(buf);
    while (n > 0) {
        ssize_t w = sys::send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return false;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

// Messages leave at once: a DAT send is a message, not a stream to coalesce.
void no_delay(int fd) noexcept {
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// One message in one sendmsg(2) (then the rest of a partial write): header and payload
// leave together instead of waiting for each other under Nagle's algorithm.
bool write_iov(int fd, iovec *v, int count) noexcept {
    while (count > 0) {
        msghdr m{};
        m.msg_iov = v;
        m.msg_iovlen = static_cast<std::size_t>(count);
        ssize_t w = sys::sendmsg(fd, &m, MSG_NOSIGNAL);
        if (w <= 0) return false;
        auto left = static_cast<std::size_t>(w);
        while (count > 0 && left >= v->iov_len) {
            left -= v->iov_len;
            ++v;
            --count;
        }
        if (count > 0) {
            v->iov_base = static_cast<char *>(v->iov_base) + left;
            v->iov_len -= left;
        }
    }
    return true;
}

bool write_u32_and_pdata(int fd, std::uint32_t head, DAT_COUNT len, const void *pdata) noexcept {
    const std::uint32_t n = static_cast<std::uint32_t>(len);
    return (head == UINT32_MAX || write_all(fd, &head, sizeof head)) &&
           write_all(fd, &n, sizeof n) && (n == 0 || write_all(fd, pdata, n));
}

// Reads [u32 len][pdata] into buf (kMaxPrivateData bytes); false on a bad length or EOF.
bool read_pdata(int fd, unsigned char *buf, DAT_COUNT *len) noexcept {
    std::uint32_t n = 0;
    if (!read_all(fd, &n, sizeof n) || n > util::kMaxPrivateData) return false;
    *len = static_cast<DAT_COUNT>(n);
    return n == 0 || read_all(fd, buf, n);
}

struct Recv {
    std::vector<DAT_LMR_TRIPLET> iov;
    DAT_DTO_COOKIE cookie;
};

// The transport's part of an EP (Ep::impl).
struct Conn {
    enum class State { kIdle, kAwaitAnswer, kConnected, kEnded };
    int fd = -1;
    State state = State::kIdle;
    Clock::time_point deadline = Clock::time_point::max();  // of kAwaitAnswer
    std::deque<Recv> recvs;                                 // posted, oldest first
    std::mutex send_mu;                                     // one message at a time

    // fd and state are read by post_send under send_mu alone, so every change takes it
    // too (the transport's mu_ is held as well): a send never writes to a socket that a
    // reconnect is replacing.
    void set(int new_fd, State st) noexcept {
        std::lock_guard lk(send_mu);
        fd = new_fd;
        state = st;
    }
    void set(State st) noexcept { set(fd, st); }
};

class SendRecvTransport final : public util::Transport {
  public:
    explicit SendRecvTransport(const sockaddr_storage &addr) : addr_(addr) {
        limits_.transport_name = "sendrecv";
        limits_.max_rdma_read_per_ep = 0;  // no RDMA: the conformance suite reads these
        limits_.max_rdma_size = 0;
        limits_.max_iov = kMaxIov;
        wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        thread_ = std::thread([this] { progress(); });
    }
    ~SendRecvTransport() override {
        {
            std::lock_guard lk(mu_);
            stop_ = true;
        }
        wake();
        thread_.join();
        for (int fd : doomed_) sys::close(fd);
        sys::close(wake_fd_);
    }

    const util::Limits &limits() const noexcept override { return limits_; }
    const sockaddr *address() const noexcept override {
        return reinterpret_cast<const sockaddr *>(&addr_);
    }

    DAT_RETURN ep_create(Ep *ep) noexcept override {
        auto *c = new (std::nothrow) Conn;
        if (c == nullptr) return util::kNoMemory;
        ep->impl = c;
        std::lock_guard lk(mu_);
        eps_.push_back(ep);
        return DAT_SUCCESS;
    }
    void ep_destroy(Ep *ep) noexcept override {
        auto *c = static_cast<Conn *>(ep->impl);
        {
            std::lock_guard lk(mu_);
            std::erase(eps_, ep);  // the progress thread looks at an EP only through eps_
            if (c->fd >= 0) doomed_.push_back(c->fd);
        }
        wake();
        delete c;
    }

    DAT_RETURN ep_connect(Ep *ep, const sockaddr *remote, DAT_CONN_QUAL qual,
                          DAT_TIMEOUT timeout_us, DAT_COUNT pdata_len,
                          const void *pdata) noexcept override {
        auto *c = static_cast<Conn *>(ep->impl);
        sockaddr_storage to{};
        std::memcpy(&to, remote, util::sockaddr_len(remote));
        if (qual > 0xffff) return util::bad_arg(3);
        util::set_port(&to, static_cast<std::uint16_t>(qual));
        int fd = ::socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return util::err(DAT_INSUFFICIENT_RESOURCES);
        // Loopback-speed blocking connect: a refusal is known at once and reported as an
        // event, as DAT asks (the call itself succeeded).
        no_delay(fd);
        bool ok = sys::connect(fd, reinterpret_cast<sockaddr *>(&to),
                               util::sockaddr_len(reinterpret_cast<sockaddr *>(&to))) == 0 &&
                  write_u32_and_pdata(fd, UINT32_MAX, pdata_len, pdata);
        std::lock_guard lk(mu_);
        const int old = c->fd;  // a previous connection's socket, closed once replaced
        c->set(fd, ok ? Conn::State::kAwaitAnswer : Conn::State::kEnded);
        if (old >= 0) doomed_.push_back(old);
        if (!ok) {
            std::lock_guard el(ep->mu);
            util::ep_connection_ended(ep, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
        } else {
            c->deadline = timeout_us == DAT_TIMEOUT_INFINITE
                              ? Clock::time_point::max()
                              : Clock::now() + std::chrono::microseconds(timeout_us);
        }
        wake();
        return DAT_SUCCESS;
    }

    DAT_RETURN ep_disconnect(Ep *ep, DAT_CLOSE_FLAGS) noexcept override {
        std::lock_guard lk(mu_);
        end_connection(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
        return DAT_SUCCESS;
    }

    DAT_RETURN ep_post_send(Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                            DAT_COMPLETION_FLAGS flags) noexcept override {
        auto *c = static_cast<Conn *>(ep->impl);
        std::uint64_t total = 0;
        if (ep->ia->mem.check_iov(iov, n, ep->pz, DAT_MEM_PRIV_LOCAL_READ_FLAG, &total) !=
            DAT_DTO_SUCCESS) {
            protection_error(ep, ep->request_evd, cookie, DAT_DTO_SEND);
            return DAT_SUCCESS;
        }
        auto len = static_cast<std::uint32_t>(total);
        iovec v[kMaxIov + 1];
        if (n > kMaxIov) return util::bad_arg(2);
        v[0] = iovec{&len, sizeof len};
        for (DAT_COUNT i = 0; i < n; ++i)
            v[i + 1] = iovec{reinterpret_cast<void *>(iov[i].virtual_address),
                             static_cast<std::size_t>(iov[i].segment_length)};
        bool ok;
        {
            std::lock_guard lk(c->send_mu);
            ok = c->state == Conn::State::kConnected && write_iov(c->fd, v, n + 1);
        }
        if (!ok) return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED);
        // The bytes are in the kernel: the buffer may be reused, the send is complete.
        if (!(flags & DAT_COMPLETION_SUPPRESS_FLAG))
            util::post_dto(ep->request_evd, ep, cookie, DAT_DTO_SUCCESS,
                           static_cast<DAT_COUNT>(len), DAT_DTO_SEND);
        return DAT_SUCCESS;
    }

    DAT_RETURN ep_post_recv(Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                            DAT_COMPLETION_FLAGS) noexcept override {
        auto *c = static_cast<Conn *>(ep->impl);
        std::uint64_t total = 0;
        if (ep->ia->mem.check_iov(iov, n, ep->pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &total) !=
            DAT_DTO_SUCCESS) {
            protection_error(ep, ep->recv_evd, cookie, DAT_DTO_RECEIVE);
            return DAT_SUCCESS;
        }
        std::lock_guard lk(mu_);
        c->recvs.push_back(Recv{std::vector<DAT_LMR_TRIPLET>(iov, iov + n), cookie});
        wake();  // the progress thread now reads this socket
        return DAT_SUCCESS;
    }

    void ep_idle(Ep *ep, bool *recv_idle, bool *request_idle) noexcept override {
        std::lock_guard lk(mu_);
        *recv_idle = static_cast<Conn *>(ep->impl)->recvs.empty();
        *request_idle = true;  // sends complete inline
    }

    DAT_RETURN sp_listen(Sp *sp) noexcept override {
        sockaddr_storage at = addr_;
        if (sp->qual > 0xffff) return util::err(DAT_CONN_QUAL_UNAVAILABLE);
        util::set_port(&at, static_cast<std::uint16_t>(sp->qual));
        int fd = ::socket(at.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return util::err(DAT_INSUFFICIENT_RESOURCES);
        auto *sa = reinterpret_cast<sockaddr *>(&at);
        socklen_t len = util::sockaddr_len(sa);
        if (::bind(fd, sa, len) != 0 || ::listen(fd, 64) != 0 || ::getsockname(fd, sa, &len) != 0) {
            sys::close(fd);
            return util::err(DAT_CONN_QUAL_IN_USE);
        }
        sp->qual = util::get_port(at);
        std::lock_guard lk(mu_);
        listeners_[sp] = fd;
        wake();
        return DAT_SUCCESS;
    }
    void sp_close(Sp *sp) noexcept override {
        std::lock_guard lk(mu_);  // the progress thread offers requests under mu_
        auto it = listeners_.find(sp);
        if (it == listeners_.end()) return;  // never listened: no socket to close
        doomed_.push_back(it->second);
        listeners_.erase(it);
        wake();
    }

    DAT_RETURN cr_accept(Cr *cr, Ep *ep, DAT_COUNT pdata_len, const void *pdata) noexcept override {
        const int fd = cr_fd(cr);
        if (!write_u32_and_pdata(fd, 1, pdata_len, pdata)) {
            sys::close(fd);
            return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED);
        }
        auto *c = static_cast<Conn *>(ep->impl);
        std::lock_guard lk(mu_);
        const int old = c->fd;
        c->set(fd, Conn::State::kConnected);
        if (old >= 0) doomed_.push_back(old);
        {
            std::lock_guard el(ep->mu);
            util::ep_established(ep, 0, nullptr);
        }
        wake();
        return DAT_SUCCESS;
    }
    DAT_RETURN cr_reject(Cr *cr, DAT_COUNT pdata_len, const void *pdata) noexcept override {
        const int fd = cr_fd(cr);
        write_u32_and_pdata(fd, 0, pdata_len, pdata);  // best effort: the peer may be gone
        sys::close(fd);
        return DAT_SUCCESS;
    }
    void cr_destroy(Cr *cr) noexcept override { sys::close(cr_fd(cr)); }

    // A consumer polling an empty DTO EVD reads what has arrived itself, so that a polling
    // ping-pong does not wait for the progress thread to be scheduled.
    void progress_inline() noexcept override {
        std::unique_lock lk(mu_, std::try_to_lock);
        if (!lk) return;  // the progress thread is at work
        collect(&inline_fds_, &inline_owners_, false);
        if (sys::poll(inline_fds_.data(), inline_fds_.size(), 0) > 0)
            dispatch(inline_fds_, inline_owners_);
    }

  private:
    // A local buffer the EP may not use: DAT completes the DTO in error and breaks the
    // connection.
    void protection_error(Ep *ep, util::Evd *evd, DAT_DTO_COOKIE cookie, DAT_DTOS op) noexcept {
        util::post_dto(evd, ep, cookie, DAT_DTO_ERR_LOCAL_PROTECTION, 0, op);
        std::lock_guard lk(mu_);
        end_connection(ep, DAT_CONNECTION_EVENT_BROKEN);
    }

    static int cr_fd(Cr *cr) noexcept {
        return static_cast<int>(reinterpret_cast<std::intptr_t>(cr->impl));
    }
    void wake() noexcept {
        const std::uint64_t one = 1;
        (void)!sys::write(wake_fd_, &one, sizeof one);
    }

    // With mu_ held: the connection ends (locally or by the peer); posted receives flush.
    void end_connection(Ep *ep, DAT_EVENT_NUMBER why, DAT_COUNT pdata_len = 0,
                        const void *pdata = nullptr) noexcept {
        auto *c = static_cast<Conn *>(ep->impl);
        if (c->state == Conn::State::kEnded || c->state == Conn::State::kIdle) return;
        c->set(Conn::State::kEnded);
        if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);  // the peer reads the end of the stream
        for (const Recv &r : c->recvs)
            util::post_dto(ep->recv_evd, ep, r.cookie, DAT_DTO_ERR_FLUSHED, 0, DAT_DTO_RECEIVE);
        c->recvs.clear();
        std::lock_guard el(ep->mu);
        util::ep_connection_ended(ep, why, pdata_len, pdata);
    }

    // A request on a listener: read the connector's private data, offer a CR.
    void on_request(Sp *sp, int listen_fd) noexcept {
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        int fd = sys::accept4(listen_fd, reinterpret_cast<sockaddr *>(&peer), &len, SOCK_CLOEXEC);
        if (fd < 0) return;
        no_delay(fd);
        Cr *cr = util::cr_new(sp);
        timeval tv{2, 0};  // the connector writes its private data right after connecting
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (cr == nullptr || !read_pdata(fd, cr->pdata, &cr->pdata_len)) {
            if (cr != nullptr) util::cr_discard(cr);
            sys::close(fd);
            return;
        }
        tv = timeval{0, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        cr->remote_addr = peer;
        cr->remote_port = util::get_port(peer);
        cr->impl = reinterpret_cast<void *>(static_cast<std::intptr_t>(fd));
        if (!util::post_cr_arrival(cr)) sys::close(fd);  // util freed the CR
    }

    // The connector reads the answer to its request.
    void on_answer(Ep *ep, Conn *c) noexcept {
        std::uint32_t accepted = 0;
        unsigned char pdata[util::kMaxPrivateData];
        DAT_COUNT len = 0;
        if (!read_all(c->fd, &accepted, sizeof accepted) || !read_pdata(c->fd, pdata, &len)) {
            end_connection(ep, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
        } else if (accepted != 1) {
            end_connection(ep, DAT_CONNECTION_EVENT_PEER_REJECTED, len, pdata);
        } else {
            c->set(Conn::State::kConnected);
            std::lock_guard el(ep->mu);
            util::ep_established(ep, len, pdata);
        }
    }

    // A message (or the end of the stream) for the oldest posted receive.
    void on_message(Ep *ep, Conn *c) noexcept {
        std::uint32_t len = 0;
        if (!read_all(c->fd, &len, sizeof len)) {
            end_connection(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
            return;
        }
        Recv r = std::move(c->recvs.front());
        c->recvs.pop_front();
        std::uint32_t left = len;
        for (const DAT_LMR_TRIPLET &seg : r.iov) {
            const auto n = static_cast<std::uint32_t>(std::min<DAT_VLEN>(seg.segment_length, left));
            if (!read_all(c->fd, reinterpret_cast<void *>(seg.virtual_address), n)) {
                end_connection(ep, DAT_CONNECTION_EVENT_BROKEN);
                return;
            }
            left -= n;
        }
        if (left > 0) {  // longer than the receive: DAT breaks the connection
            util::post_dto(ep->recv_evd, ep, r.cookie, DAT_DTO_ERR_LOCAL_LENGTH, 0,
                           DAT_DTO_RECEIVE);
            end_connection(ep, DAT_CONNECTION_EVENT_BROKEN);
            return;
        }
        util::post_dto(ep->recv_evd, ep, r.cookie, DAT_DTO_SUCCESS, static_cast<DAT_COUNT>(len),
                       DAT_DTO_RECEIVE);
    }

    // With mu_ held: what to poll (listeners only for the progress thread). Ends the
    // connection attempts whose time is up.
    void collect(std::vector<pollfd> *fds, std::vector<void *> *owners, bool listeners) noexcept {
        fds->assign(1, pollfd{wake_fd_, POLLIN, 0});
        owners->assign(1, nullptr);
        for (auto &[sp, fd] : listeners_) {
            if (!listeners) break;
            fds->push_back(pollfd{fd, POLLIN, 0});
            owners->push_back(sp);
        }
        const auto now = Clock::now();
        for (Ep *ep : eps_) {
            auto *c = static_cast<Conn *>(ep->impl);
            if (c->state == Conn::State::kAwaitAnswer && now >= c->deadline) {
                end_connection(ep, DAT_CONNECTION_EVENT_TIMED_OUT);
                continue;
            }
            short ev = 0;
            if (c->state == Conn::State::kAwaitAnswer) ev = POLLIN;
            // Without a posted receive, read nothing but still notice the peer leaving.
            if (c->state == Conn::State::kConnected) ev = c->recvs.empty() ? POLLRDHUP : POLLIN;
            if (ev == 0) continue;
            fds->push_back(pollfd{c->fd, ev, 0});
            owners->push_back(ep);
        }
    }

    // With mu_ held: handles what poll found on the objects still there.
    void dispatch(const std::vector<pollfd> &fds, const std::vector<void *> &owners) noexcept {
        for (std::size_t i = 1; i < fds.size() && !stop_; ++i) {
            if (fds[i].revents == 0) continue;
            // Still ours? (freed while we polled: its socket is in doomed_, not reused)
            auto *sp = static_cast<Sp *>(owners[i]);
            auto l = listeners_.find(sp);
            if (l != listeners_.end() && l->second == fds[i].fd) {
                on_request(sp, fds[i].fd);
                continue;
            }
            auto *ep = static_cast<Ep *>(owners[i]);
            if (std::find(eps_.begin(), eps_.end(), ep) == eps_.end()) continue;
            auto *c = static_cast<Conn *>(ep->impl);
            if (c->fd != fds[i].fd) continue;
            // Look again: the other poller (thread or inline) may have read it meanwhile,
            // and a blocking read of nothing would hang.
            pollfd now{c->fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
            if (sys::poll(&now, 1, 0) <= 0) continue;
            if (c->state == Conn::State::kAwaitAnswer) {
                on_answer(ep, c);
            } else if (c->state == Conn::State::kConnected) {
                if (!c->recvs.empty())
                    on_message(ep, c);
                else if (now.revents & (POLLRDHUP | POLLHUP | POLLERR))
                    end_connection(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
            }
        }
    }

    void progress() noexcept {
        std::vector<pollfd> fds;
        std::vector<void *> owners;  // Sp* for a listener, Ep* for a connection
        std::unique_lock lk(mu_);
        while (!stop_) {
            for (int fd : doomed_) sys::close(fd);
            doomed_.clear();
            collect(&fds, &owners, true);
            lk.unlock();
            sys::poll(fds.data(), fds.size(), 100);  // 100 ms: the granularity of connect timeouts
            lk.lock();
            std::uint64_t drained;
            (void)!sys::read(wake_fd_, &drained, sizeof drained);
            dispatch(fds, owners);
        }
    }

    util::Limits limits_;
    sockaddr_storage addr_;
    int wake_fd_ = -1;
    std::mutex mu_;  // guards everything below and every Conn's state and receive queue
    bool stop_ = false;
    std::vector<Ep *> eps_;
    std::unordered_map<Sp *, int> listeners_;
    std::vector<int> doomed_;  // sockets to close, by the progress thread only
    // progress_inline's poll set, kept so that a polling consumer does not allocate.
    std::vector<pollfd> inline_fds_;
    std::vector<void *> inline_owners_;
    std::thread thread_;
};

}  // namespace

DAT_RETURN make_transport(util::ProviderInstance *inst, util::Ia *,
                          std::unique_ptr<util::Transport> *out) {
    std::string name;
    long unused = 0;
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (!util::split_ia_params(inst->params, &name, &unused) ||
        !util::ia_address(name, &addr, &len))
        return util::err(DAT_INVALID_PARAMETER);
    try {
        *out = std::make_unique<SendRecvTransport>(addr);
    } catch (...) {  // std::thread could not start
        return util::kNoMemory;
    }
    return DAT_SUCCESS;
}

}  // namespace opendat::sendrecv

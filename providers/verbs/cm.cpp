// Connection management: rdma_cm drives each EP's RC queue pair through its states, and
// its events become the DAT connection and CR events.
//
// Queue pairs are ours (ibv_create_qp), not rdma_cm's: an EP exists, and may have receives
// posted, before it is known which rdma_cm id (active connect, or the passive request's)
// will carry its connection. So we move the QP to RTR/RTS ourselves with the attributes
// rdma_init_qp_attr gives, and to ERR (flushing all posted work) when a connection ends.
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trace/trace.hpp"
#include "util/netdev.hpp"
#include "verbs/transport.hpp"

namespace opendat::verbs {

// What on_cm_event keeps of an rdma_cm event: the event itself is acknowledged before
// it is handled (see on_cm_event), which frees its private data.
struct VerbsTransport::CmEvent {
    rdma_cm_event_type type{};
    int status = 0;
    rdma_cm_id *id = nullptr;
    rdma_cm_id *listen_id = nullptr;
    void *ctx = nullptr;
    int pdata_len = 0;
    unsigned char pdata[256]{};
    std::uint8_t responder_resources = 0;
    std::uint8_t initiator_depth = 0;
};

namespace {

constexpr int kIbRejConsumerDefined = 28;  // IB CM REJ reason: the peer's consumer rejected

int timeout_ms(DAT_TIMEOUT us) noexcept {
    if (us == DAT_TIMEOUT_INFINITE) return 5000;
    return static_cast<int>(std::clamp<DAT_TIMEOUT>(us / 1000, 100, 60000));
}

// The steady-clock millisecond at which a connect with this timeout gives up; 0 = never.
std::int64_t connect_deadline_ms(DAT_TIMEOUT us) noexcept {
    if (us == DAT_TIMEOUT_INFINITE) return 0;
    return std::max<std::int64_t>(1,
                                  steady_now_ms() + static_cast<std::int64_t>((us + 999) / 1000));
}

std::uint8_t rd_depth(DAT_COUNT want, int dev_max) noexcept {
    return static_cast<std::uint8_t>(std::clamp<int>(want, 0, std::min(dev_max, 255)));
}

// The private-data header: magic "OD", version 1, the consumer's length.
constexpr unsigned char kPdMagic0 = 'O', kPdMagic1 = 'D', kPdVersion = 1;

// Builds header + data into `buf` (kPdataHdr + len bytes); returns the total.
std::uint8_t pdata_wrap(unsigned char *buf, const void *data, DAT_COUNT len) noexcept {
    buf[0] = kPdMagic0;
    buf[1] = kPdMagic1;
    buf[2] = kPdVersion;
    buf[3] = static_cast<unsigned char>(len);
    if (len > 0) std::memcpy(buf + kPdataHdr, data, static_cast<std::size_t>(len));
    return static_cast<std::uint8_t>(kPdataHdr + len);
}

// The consumer's bytes of a received private data: ours carry their length; anything
// else (a peer that is not this provider) is passed on as the transport gave it.
void pdata_unwrap(const unsigned char *raw, int raw_len, const unsigned char **data,
                  int *len) noexcept {
    if (raw_len >= kPdataHdr && raw[0] == kPdMagic0 && raw[1] == kPdMagic1 &&
        raw[2] == kPdVersion && raw[3] <= raw_len - kPdataHdr) {
        *data = raw + kPdataHdr;
        *len = raw[3];
    } else {
        *data = raw;
        *len = raw_len;
    }
}

bool is_loopback(const sockaddr *sa) noexcept {
    if (sa->sa_family == AF_INET)
        return (ntohl(reinterpret_cast<const sockaddr_in *>(sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr);
    return false;
}

}  // namespace

// --- Active side -----------------------------------------------------------------------

DAT_RETURN VerbsTransport::ep_connect(util::Ep *ep, const sockaddr *remote, DAT_CONN_QUAL qual,
                                      DAT_TIMEOUT timeout_us, DAT_COUNT pdata_len,
                                      const void *pdata) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    if (!impl->qp) return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED);
    if (pdata_len > kPdataConnect) return util::bad_arg(5);
    if (qual > 0xffff) return util::bad_arg(3);
    if (remote->sa_family != AF_INET && remote->sa_family != AF_INET6) return util::bad_arg(2);
    IdPtr old, failed;
    DAT_RETURN rc = DAT_SUCCESS;
    const std::int64_t deadline = connect_deadline_ms(timeout_us);
    {
        std::lock_guard lk(ep->mu);
        if (impl->qp->state != IBV_QPS_INIT && qp_reset_to_init(impl) != 0) return util::kInternal;
        rdma_cm_id *id = nullptr;
        if (rdma_create_id(ch_.get(), &id, impl, RDMA_PS_TCP) != 0)
            return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
        old = std::move(impl->id);
        impl->id.reset(id);
        impl->active = true;
        impl->disconnect_sent = false;
        impl->timeout_ms = timeout_ms(timeout_us);
        impl->deadline_ms.store(deadline, std::memory_order_relaxed);
        impl->pdata_len = pdata_wrap(impl->pdata, pdata, pdata_len);
        std::memset(&ep->remote_addr, 0, sizeof ep->remote_addr);
        std::memcpy(&ep->remote_addr, remote, util::sockaddr_len(remote));
        auto *dst = reinterpret_cast<sockaddr *>(&ep->remote_addr);
        // rdma_cm has no loopback device: "this host" is the IA's own address, where our
        // service points listen (they bind to it, not to the wildcard).
        if (is_loopback(dst)) {
            std::memcpy(&ep->remote_addr, &dev_.addr,
                        util::sockaddr_len(reinterpret_cast<const sockaddr *>(&dev_.addr)));
        }
        util::set_port(&ep->remote_addr, static_cast<std::uint16_t>(qual));
        sockaddr_storage src = dev_.addr;
        if (rdma_resolve_addr(id, reinterpret_cast<sockaddr *>(&src), dst, impl->timeout_ms) != 0) {
            DAPL_TRC(trace::kError, "verbs", "rdma_resolve_addr: %s", std::strerror(errno));
            failed = std::move(impl->id);  // destroyed below, outside the lock
            rc = util::err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
        }
    }
    // After ep->mu (the CM thread takes the two locks one at a time, never nested).
    if (rc == DAT_SUCCESS && deadline != 0) queue_connect_deadline(impl, deadline);
    end_id(std::move(old));  // a previous connection's id
    end_id(std::move(failed));
    return rc;
}

DAT_RETURN VerbsTransport::ep_disconnect(util::Ep *ep, DAT_CLOSE_FLAGS flags) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    IdPtr abandoned;
    {
        std::lock_guard lk(ep->mu);
        switch (ep->state) {
            case DAT_EP_STATE_CONNECTED:
                ep->state = DAT_EP_STATE_DISCONNECT_PENDING;
                impl->disconnect_sent = true;
                // Graceful: the queue pair keeps going until the peer's reply (DISCONNECTED
                // event), so work already posted can finish; abrupt flushes it now.
                if (flags != DAT_CLOSE_GRACEFUL_FLAG) qp_to_error(impl);
                if (rdma_disconnect(impl->id.get()) != 0) {
                    qp_to_error(impl);
                    util::ep_connection_ended(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
                }
                return DAT_SUCCESS;
            case DAT_EP_STATE_DISCONNECT_PENDING:
                if (flags != DAT_CLOSE_GRACEFUL_FLAG) qp_to_error(impl);
                return DAT_SUCCESS;
            case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
            case DAT_EP_STATE_COMPLETION_PENDING:
                // Abandon the attempt: its id goes, so its late events are never seen.
                qp_to_error(impl);
                abandoned = std::move(impl->id);
                util::ep_connection_ended(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
                break;
            case DAT_EP_STATE_UNCONNECTED:
            case DAT_EP_STATE_DISCONNECTED:
            case DAT_EP_STATE_RESERVED:
                return DAT_SUCCESS;
            default:
                return util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
        }
    }
    end_id(std::move(abandoned));
    return DAT_SUCCESS;
}

void VerbsTransport::break_connection(EpImpl *impl,
                                      std::optional<std::uint32_t> connection) noexcept {
    util::Ep *ep = impl->ep;
    std::lock_guard lk(ep->mu);
    if (impl->dead.load() ||
        (ep->state != DAT_EP_STATE_CONNECTED && ep->state != DAT_EP_STATE_DISCONNECT_PENDING))
        return;
    if (connection && *connection != impl->connection.load(std::memory_order_relaxed)) {
        DAPL_TRC(trace::kInfo, "verbs",
                 "EP %p: the failed request was posted on a connection that has ended: the "
                 "current one stays",
                 static_cast<void *>(ep));
        return;
    }
    qp_to_error(impl);
    if (!impl->disconnect_sent && impl->id) {
        impl->disconnect_sent = true;
        rdma_disconnect(impl->id.get());
    }
    util::ep_connection_ended(ep, DAT_CONNECTION_EVENT_BROKEN);
}

// util has moved the EP to UNCONNECTED (dat_ep_reset).
void VerbsTransport::ep_reset(util::Ep *ep) noexcept {
    auto *impl = static_cast<EpImpl *>(ep->impl);
    IdPtr ended;
    {
        std::lock_guard lk(ep->mu);
        // The ended connection's id goes: its late events are stale from here on. A
        // connection that ended BROKEN (our own failed completion) or by a failed
        // rdma_disconnect still gets the CM's DISCONNECTED later (the peer's reply, or
        // the request's time-out), which would move the queue pair the next connection
        // uses to ERR and flush the receives posted for it meanwhile.
        ended = std::move(impl->id);
        // Requests posted from here on belong to the next connection (EpImpl::connection).
        impl->connection.fetch_add(1, std::memory_order_relaxed);
        if (impl->qp && impl->qp->state != IBV_QPS_INIT && qp_reset_to_init(impl) != 0)
            DAPL_TRC(trace::kError, "verbs", "QP %u back to INIT: %s", impl->qp->qp_num,
                     std::strerror(errno));
    }
    end_id(std::move(ended));
}

// --- Passive side ----------------------------------------------------------------------

DAT_RETURN VerbsTransport::sp_listen(util::Sp *sp) noexcept {
    OPENDAT_GUARD({
        const DAT_CONN_QUAL qual = sp->qual;
        if (qual > 0xffff) return util::err(DAT_CONN_QUAL_UNAVAILABLE);
        auto impl = std::make_unique<SpImpl>();
        impl->sp = sp;
        rdma_cm_id *id = nullptr;
        if (rdma_create_id(ch_.get(), &id, impl.get(), RDMA_PS_TCP) != 0)
            return util::err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
        impl->listen.reset(id);
        sockaddr_storage a = dev_.addr;
        util::set_port(&a, static_cast<std::uint16_t>(qual));
        auto *sa = reinterpret_cast<sockaddr *>(&a);
        if (rdma_bind_addr(id, sa) != 0)
            return errno == EADDRINUSE ? util::err(DAT_CONN_QUAL_IN_USE)
                                       : util::err(DAT_CONN_QUAL_UNAVAILABLE);
        if (rdma_listen(id, 1024) != 0) return util::err(DAT_CONN_QUAL_UNAVAILABLE);
        // dat_psp_create_any: report the port rdma_cm chose
        if (qual == 0) sp->qual = ntohs(rdma_get_src_port(id));
        std::lock_guard lk(mu_);
        sps_.insert(impl.get());
        sp->impl = impl.release();
        return DAT_SUCCESS;
    })
}

void VerbsTransport::sp_close(util::Sp *sp) noexcept {
    auto *impl = static_cast<SpImpl *>(sp->impl);
    {
        std::lock_guard lk(mu_);
        impl->dead.store(true);  // on_connect_request checks it under mu_
        sps_.erase(impl);
    }
    impl->listen.reset();  // waits until the CM thread acknowledged the listener's events
    graveyard_.park(impl);
    // No request reaches `sp` from now on (on_connect_request sees `dead`): util frees it.
}

void VerbsTransport::park(CrImpl *cr) noexcept {
    {
        std::lock_guard lk(mu_);
        crs_.erase(cr);
    }
    graveyard_.park(cr);
}

DAT_RETURN VerbsTransport::cr_accept(util::Cr *cr, util::Ep *ep, DAT_COUNT pdata_len,
                                     const void *pdata) noexcept {
    auto *cri = static_cast<CrImpl *>(cr->impl);
    auto *impl = static_cast<EpImpl *>(ep->impl);
    DAT_RETURN rc = DAT_SUCCESS;
    IdPtr old, refused;
    if (!impl->qp) {
        rc = util::err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED);
    } else if (pdata_len > kPdataAccept) {
        rc = util::bad_arg(3);
    } else {
        std::lock_guard lk(ep->mu);
        rdma_cm_id *id = cri->id.get();
        const ibv_device_attr &da = dev_.attr;
        // Read depths: what this EP wants, within the device and the requester's. Reads we
        // answer (responder resources) need no more than it issues; reads we issue
        // (initiator depth) must not exceed what it answers, or they stall for good. The
        // CM reports the request from our side: see CrImpl.
        std::uint8_t resp = std::min(rd_depth(ep->attr.max_rdma_read_in, da.max_qp_rd_atom),
                                     cri->responder_resources);
        std::uint8_t init = std::min(rd_depth(ep->attr.max_rdma_read_out, da.max_qp_init_rd_atom),
                                     cri->initiator_depth);
        if ((impl->qp->state != IBV_QPS_INIT && qp_reset_to_init(impl) != 0) ||
            qp_to(impl, id, IBV_QPS_RTR, resp) != 0 || qp_to(impl, id, IBV_QPS_RTS, init) != 0) {
            DAPL_TRC(trace::kError, "verbs", "QP %u to RTR/RTS for accept: %s", impl->qp->qp_num,
                     std::strerror(errno));
            rc = util::kInternal;
        } else {
            old = std::move(impl->id);
            impl->id = std::move(cri->id);
            id->context = impl;  // from now on this connection's events are the EP's
            impl->active = false;
            impl->disconnect_sent = false;
            unsigned char wire[kPdataHdr + kPdataAccept];
            rdma_conn_param cp{};
            cp.private_data = wire;
            cp.private_data_len = pdata_wrap(wire, pdata, pdata_len);
            cp.responder_resources = resp;
            cp.initiator_depth = init;
            cp.rnr_retry_count = 7;
            cp.qp_num = impl->qp->qp_num;
            if (rdma_accept(id, &cp) != 0) {
                DAPL_TRC(trace::kError, "verbs", "rdma_accept: %s", std::strerror(errno));
                qp_to_error(impl);
                refused = std::move(impl->id);
                rc = util::err(DAT_INTERNAL_ERROR);
            }
        }
    }
    if (rc != DAT_SUCCESS && cri->id) rdma_reject(cri->id.get(), nullptr, 0);
    cri->id.reset();
    park(cri);
    end_id(std::move(old));
    end_id(std::move(refused));
    return rc;
}

DAT_RETURN VerbsTransport::cr_reject(util::Cr *cr, DAT_COUNT pdata_len,
                                     const void *pdata) noexcept {
    if (pdata_len > kPdataReject) return util::bad_arg(2);
    auto *cri = static_cast<CrImpl *>(cr->impl);
    unsigned char wire[kPdataHdr + kPdataReject];
    if (rdma_reject(cri->id.get(), wire, pdata_wrap(wire, pdata, pdata_len)) != 0)
        DAPL_TRC(trace::kWarn, "verbs", "rdma_reject: %s", std::strerror(errno));
    cri->id.reset();
    park(cri);
    return DAT_SUCCESS;
}

void VerbsTransport::cr_destroy(util::Cr *cr) noexcept {
    auto *cri = static_cast<CrImpl *>(cr->impl);
    if (cri->id) rdma_reject(cri->id.get(), nullptr, 0);
    cri->id.reset();
    park(cri);
}

// --- Events ----------------------------------------------------------------------------

void VerbsTransport::on_cm_event(rdma_cm_event *raw) noexcept {
    CmEvent ev;
    ev.type = raw->event;
    ev.status = raw->status;
    ev.id = raw->id;
    ev.listen_id = raw->listen_id;
    ev.ctx = raw->id != nullptr ? raw->id->context : nullptr;
    if (raw->event == RDMA_CM_EVENT_CONNECT_REQUEST) ev.ctx = raw->listen_id->context;
    const rdma_conn_param &c = raw->param.conn;
    ev.pdata_len =
        std::min<int>(c.private_data != nullptr ? c.private_data_len : 0, sizeof ev.pdata);
    if (ev.pdata_len > 0)
        std::memcpy(ev.pdata, c.private_data, static_cast<std::size_t>(ev.pdata_len));
    ev.responder_resources = c.responder_resources;
    ev.initiator_depth = c.initiator_depth;
    // Acknowledge first: a consumer thread destroying this id (ep_free, psp_free) waits
    // for that, possibly while holding what we would block on next.
    rdma_ack_cm_event(raw);
    DAPL_TRC(trace::kDetail, "verbs", "cm event %s status %d", rdma_event_str(ev.type), ev.status);

    if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
        on_connect_request(ev);
        return;
    }
    if (ev.type == RDMA_CM_EVENT_DEVICE_REMOVAL)
        util::post_async(ia_, DAT_ASYNC_ERROR_IA_CATASTROPHIC, ia_);
    if (ev.ctx == nullptr) return;
    if (static_cast<CmCtx *>(ev.ctx)->kind != CmKind::Ep)
        return;  // a pending CR's requester gave up
    auto *impl = static_cast<EpImpl *>(ev.ctx);
    std::lock_guard lk(impl->ep->mu);
    // A stale event: the id was replaced or dropped (ep_free, abandoned connect).
    if (impl->dead.load() || impl->id.get() != ev.id) return;
    on_ep_event(impl, ev);
}

void VerbsTransport::on_connect_request(const CmEvent &ev) noexcept {
    auto *sp = static_cast<SpImpl *>(ev.ctx);
    std::unique_lock lk(mu_);
    util::Cr *cr = nullptr;
    CrImpl *cri = nullptr;
    if (!sp->dead.load()) {
        cr = util::cr_new(sp->sp);  // sp->sp lives while `dead` is false and mu_ held
        cri = new (std::nothrow) CrImpl();
        bool ok = cr != nullptr && cri != nullptr;
        if (ok) {
            try {
                crs_.insert(cri);
            } catch (...) {
                ok = false;
            }
        }
        if (!ok) {
            util::cr_discard(cr);
            delete cri;
            cr = nullptr;
        }
    }
    if (cr == nullptr) {
        lk.unlock();
        rdma_reject(ev.id, nullptr, 0);
        rdma_destroy_id(ev.id);
        return;
    }
    cri->cr = cr;
    cri->id.reset(ev.id);
    cri->responder_resources = ev.responder_resources;
    cri->initiator_depth = ev.initiator_depth;
    ev.id->context = cri;
    cr->impl = cri;
    const sockaddr *peer = rdma_get_peer_addr(ev.id);
    std::memcpy(&cr->remote_addr, peer, util::sockaddr_len(peer));
    cr->remote_port = ntohs(rdma_get_dst_port(ev.id));
    const unsigned char *pd = nullptr;
    int pd_len = 0;
    pdata_unwrap(ev.pdata, ev.pdata_len, &pd, &pd_len);
    cr->pdata_len = pd_len;
    if (pd_len > 0) std::memcpy(cr->pdata, pd, static_cast<std::size_t>(pd_len));
    if (!util::post_cr_arrival(cr)) {  // util reported the overflow and freed the CR
        crs_.erase(cri);
        lk.unlock();
        rdma_reject(ev.id, nullptr, 0);
        cri->id.reset();
        delete cri;
    }
}

// With ep->mu held, for the EP's current connection id.
void VerbsTransport::on_ep_event(EpImpl *impl, const CmEvent &ev) noexcept {
    util::Ep *ep = impl->ep;
    rdma_cm_id *id = ev.id;
    const unsigned char *pdata = nullptr;
    int pdata_len = 0;
    pdata_unwrap(ev.pdata, ev.pdata_len, &pdata, &pdata_len);
    auto fail = [&](DAT_EVENT_NUMBER n, int len = 0, const void *pd = nullptr) {
        qp_to_error(impl);
        util::ep_connection_ended(ep, n, len, pd);
    };
    switch (ev.type) {
        case RDMA_CM_EVENT_ADDR_RESOLVED:
            if (rdma_resolve_route(id, impl->timeout_ms) != 0)
                fail(DAT_CONNECTION_EVENT_UNREACHABLE);
            break;
        case RDMA_CM_EVENT_ROUTE_RESOLVED: {
            const ibv_device_attr &da = dev_.attr;
            rdma_conn_param cp{};
            cp.private_data = impl->pdata_len > 0 ? impl->pdata : nullptr;
            cp.private_data_len = impl->pdata_len;
            cp.responder_resources = rd_depth(ep->attr.max_rdma_read_in, da.max_qp_rd_atom);
            cp.initiator_depth = rd_depth(ep->attr.max_rdma_read_out, da.max_qp_init_rd_atom);
            cp.retry_count = 7;
            cp.rnr_retry_count = 7;
            cp.qp_num = impl->qp->qp_num;
            if (rdma_connect(id, &cp) != 0) {
                DAPL_TRC(trace::kError, "verbs", "rdma_connect: %s", std::strerror(errno));
                fail(DAT_CONNECTION_EVENT_UNREACHABLE);
            }
            break;
        }
        case RDMA_CM_EVENT_CONNECT_RESPONSE:
            // Our own QP: make it ready, then send the RTU ourselves.
            if (qp_to(impl, id, IBV_QPS_RTR, ev.responder_resources) != 0 ||
                qp_to(impl, id, IBV_QPS_RTS, ev.initiator_depth) != 0 || rdma_establish(id) != 0) {
                DAPL_TRC(trace::kError, "verbs", "completing the connection: %s",
                         std::strerror(errno));
                rdma_reject(id, nullptr, 0);
                fail(DAT_CONNECTION_EVENT_UNREACHABLE);
                break;
            }
            util::ep_established(ep, pdata_len, pdata);
            break;
        case RDMA_CM_EVENT_ESTABLISHED:
            if (ep->state == DAT_EP_STATE_COMPLETION_PENDING ||
                ep->state == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
                util::ep_established(ep, 0, nullptr);
            break;
        case RDMA_CM_EVENT_REJECTED:
            if (!impl->active)
                fail(DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
            else if (ev.status == kIbRejConsumerDefined)
                fail(DAT_CONNECTION_EVENT_PEER_REJECTED, pdata_len, pdata);
            else
                fail(DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
            break;
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_CONNECT_ERROR:
            if (!impl->active)
                fail(DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
            else
                fail(ev.status == -ETIMEDOUT ? DAT_CONNECTION_EVENT_TIMED_OUT
                                             : DAT_CONNECTION_EVENT_UNREACHABLE);
            break;
        case RDMA_CM_EVENT_DISCONNECTED:
            // Only a connection that has not ended yet: after BROKEN (and until the EP is
            // reset) the queue pair is in ERR already, and it must not be touched for a
            // connection that is over.
            if (ep->state == DAT_EP_STATE_CONNECTED ||
                ep->state == DAT_EP_STATE_DISCONNECT_PENDING ||
                ep->state == DAT_EP_STATE_COMPLETION_PENDING)
                qp_to_error(impl);
            if (!impl->disconnect_sent) {
                impl->disconnect_sent = true;
                rdma_disconnect(id);  // the reply the peer waits for
            }
            if (ep->state == DAT_EP_STATE_CONNECTED || ep->state == DAT_EP_STATE_DISCONNECT_PENDING)
                util::ep_connection_ended(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
            else if (ep->state == DAT_EP_STATE_COMPLETION_PENDING)
                util::ep_connection_ended(ep, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
            break;
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
            fail(DAT_CONNECTION_EVENT_BROKEN);
            break;
        default:
            break;  // TIMEWAIT_EXIT, ADDR_CHANGE: nothing for the consumer
    }
}

}  // namespace opendat::verbs

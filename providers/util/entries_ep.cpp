// EP, PSP, RSP and CR entry points: validation, attributes and state checks; the
// mechanics go to the Transport.
#include <cstring>
#include <new>

#include <dat2/dat_trace.h>

#include "trace/trace.hpp"
#include "util/attrs.hpp"
#include "util/entries.hpp"
#include "util/grace.hpp"
#include "util/netdev.hpp"
#include "util/ep_checks.hpp"
#include "util/objects.hpp"
#include "util/srq.hpp"

namespace opendat::util {

namespace entry {

namespace {

bool parse_bool(const char *v, bool *out) noexcept {
    if (v == nullptr) return false;
    if (std::strcmp(v, "true") == 0 || std::strcmp(v, "TRUE") == 0 || std::strcmp(v, "1") == 0) {
        *out = true;
        return true;
    }
    if (std::strcmp(v, "false") == 0 || std::strcmp(v, "FALSE") == 0 || std::strcmp(v, "0") == 0) {
        *out = false;
        return true;
    }
    return false;
}

// Applies the provider-specific EP attributes we know ("delayed_ack"); unknown names are
// ignored as the spec allows, a known name with a bad value or an unsupported feature is
// an error.
DAT_RETURN apply_provider_specific(Ep *ep, const DAT_EP_ATTR &a, int argno) noexcept {
    for (DAT_COUNT i = 0; i < a.ep_provider_specific_count; ++i) {
        const DAT_NAMED_ATTR &na = a.ep_provider_specific[i];
        if (na.name == nullptr || std::strcmp(na.name, DAT_EP_ATTR_DELAYED_ACK) != 0) continue;
        bool on = false;
        if (!parse_bool(na.value, &on)) return bad_arg(argno);
        if (on && !ep->ia->transport->limits().delayed_ack_supported)
            return err(DAT_MODEL_NOT_SUPPORTED);
        ep->delayed_ack.store(on);
    }
    ep->provider_attr[0].name = DAT_EP_ATTR_DELAYED_ACK;
    ep->provider_attr[0].value = ep->delayed_ack.load() ? "true" : "false";
    ep->attr.ep_provider_specific_count = 1;
    ep->attr.ep_provider_specific = ep->provider_attr;
    return DAT_SUCCESS;
}

// Optional EVD argument: NULL is allowed, anything else must be a live EVD.
bool optional_evd(DAT_EVD_HANDLE h, const Ia *ia, Evd **out) noexcept {
    *out = nullptr;
    if (h == DAT_HANDLE_NULL) return true;
    *out = as<Evd>(h, ia);
    return *out != nullptr;
}

// The EP no longer uses its EVDs and PZ, and no longer counts as the IA's. Read under
// ep->mu, which dat_ep_modify holds while it moves the uses: a modify that checked the
// EP before the free's claim either has moved them already or finds the EP dead.
void release_uses(Ep *ep) noexcept {
    Evd *evds[3];
    Pz *pz = nullptr;
    {
        std::lock_guard lk(ep->mu);
        evds[0] = ep->recv_evd;
        evds[1] = ep->request_evd;
        evds[2] = ep->connect_evd;
        pz = ep->pz;
    }
    for (Evd *e : evds)
        if (e != nullptr) e->users.drop();
    if (pz != nullptr) pz->users.drop();
    ep->ia->release(ep);
}

// DAT_PROVIDER_ATTR.dat_qos_supported (attrs.cpp): best effort only. A QoS we cannot give
// is refused (DAT_MODEL_NOT_SUPPORTED), never silently downgraded; a value that is no
// DAT_QOS at all is a bad argument.
DAT_RETURN check_qos(const DAT_QOS &qos_arg, int argno, const char *call) noexcept {
    constexpr unsigned kAllQos =
        DAT_QOS_HIGH_THROUGHPUT | DAT_QOS_LOW_LATENCY | DAT_QOS_ECONOMY | DAT_QOS_PREMIUM;
    const auto qos = static_cast<unsigned>(enum_bits(qos_arg));
    if (qos == DAT_QOS_BEST_EFFORT) return DAT_SUCCESS;
    if ((qos & ~kAllQos) != 0) {
        DAPL_TRC(trace::kError, "ep", "%s: 0x%x is not a DAT_QOS", call, qos);
        return bad_arg(argno);
    }
    DAPL_TRC(trace::kError, "ep", "%s: QoS 0x%x not supported (best effort only)", call, qos);
    return err(DAT_MODEL_NOT_SUPPORTED);
}

// The queue and size limits of an EP attribute against the transport's (ep_create and
// ep_modify share them).
bool attr_within_limits(const DAT_EP_ATTR &a, const Limits &lim) noexcept {
    return enum_bits(a.service_type) == DAT_SERVICE_TYPE_RC && a.max_recv_dtos >= 0 &&
           a.max_request_dtos >= 0 && a.max_recv_dtos <= lim.max_dto_per_ep &&
           a.max_request_dtos <= lim.max_dto_per_ep && a.max_recv_iov <= lim.max_iov &&
           a.max_request_iov <= lim.max_iov && a.max_rdma_read_out <= lim.max_rdma_read_per_ep &&
           a.max_rdma_read_in <= lim.max_rdma_read_per_ep;
}

}  // namespace

DAT_RETURN ep_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_h, DAT_EVD_HANDLE recv_h,
                     DAT_EVD_HANDLE req_h, DAT_EVD_HANDLE conn_h, const DAT_EP_ATTR *attr,
                     DAT_EP_HANDLE *out) noexcept {
    return create_ep(h, pz_h, recv_h, req_h, conn_h, nullptr, attr, out);
}

// dat_ep_create, and dat_ep_create_with_srq when `srq` is given (checked by the caller;
// its argument list has the SRQ before the attributes, so those count one further).
DAT_RETURN create_ep(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz_h, DAT_EVD_HANDLE recv_h,
                     DAT_EVD_HANDLE req_h, DAT_EVD_HANDLE conn_h, Srq *srq, const DAT_EP_ATTR *attr,
                     DAT_EP_HANDLE *out) noexcept {
    const int attr_arg = srq != nullptr ? 7 : 6;
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    Pz *pz = nullptr;
    if (pz_h != DAT_HANDLE_NULL && (pz = as<Pz>(pz_h, ia)) == nullptr)
        return invalid_handle(DAT_HANDLE_TYPE_PZ);
    Evd *recv = nullptr, *req = nullptr, *conn = nullptr;
    if (!optional_evd(recv_h, ia, &recv))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
    if (!optional_evd(req_h, ia, &req))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
    if (!optional_evd(conn_h, ia, &conn))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
    if (out == nullptr) return bad_arg(attr_arg + 1);
    // Counted before the transport uses them: a free of one under way refuses the use
    // (util/use_count.hpp), and one that comes later sees this EP as a user.
    UseHold uses;
    if (!uses.take(uses_of(pz))) return invalid_handle(DAT_HANDLE_TYPE_PZ);
    if (!uses.take(uses_of(recv))) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
    if (!uses.take(uses_of(req))) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
    if (!uses.take(uses_of(conn))) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
    if (!uses.take(uses_of(srq))) return invalid_handle(DAT_HANDLE_TYPE_SRQ);
    // The SRQ's limit of endpoints, counted with this one: two creates at once cannot
    // both pass it.
    if (const DAT_COUNT max_eps = ia->transport->limits().max_ep_per_srq;
        srq != nullptr && max_eps > 0 && srq->users.count() > max_eps)
        return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
    const Limits &lim = ia->transport->limits();
    Ep *ep = new (std::nothrow) Ep(ia->provider, ia);
    if (ep == nullptr) return kNoMemory;
    default_ep_attr(lim, &ep->attr);
    if (attr != nullptr) {
        DAT_EP_ATTR a = *attr;
        if (DAT_RETURN rc = check_qos(a.qos, 6, "dat_ep_create"); rc != DAT_SUCCESS) {
            delete ep;
            return rc;
        }
        if (!attr_within_limits(a, lim)) {
            delete ep;
            return bad_arg(attr_arg);
        }
        if (a.max_recv_iov <= 0) a.max_recv_iov = 1;
        if (a.max_request_iov <= 0) a.max_request_iov = 1;
        if (a.max_message_size == 0 || a.max_message_size > lim.max_message_size)
            a.max_message_size = lim.max_message_size;
        if (a.max_rdma_size == 0 || a.max_rdma_size > lim.max_rdma_size)
            a.max_rdma_size = lim.max_rdma_size;
        ep->attr = a;
    }
    ep->attr.ep_transport_specific_count = 0;
    ep->attr.ep_transport_specific = nullptr;
    ep->attr.ep_provider_specific_count = 0;
    ep->attr.ep_provider_specific = nullptr;
    if (attr != nullptr && attr->ep_provider_specific_count > 0 &&
        attr->ep_provider_specific != nullptr) {
        DAT_EP_ATTR tmp = *attr;
        if (DAT_RETURN rc = apply_provider_specific(ep, tmp, attr_arg); rc != DAT_SUCCESS) {
            delete ep;
            return rc;
        }
    } else {
        DAT_EP_ATTR none{};
        apply_provider_specific(ep, none, attr_arg);
    }
    ep->pz = pz;
    ep->recv_evd = recv;
    ep->request_evd = req;
    ep->connect_evd = conn;
    ep->srq = srq;
    if (DAT_RETURN rc = ia->transport->ep_create(ep); rc != DAT_SUCCESS) {
        delete ep;
        return rc;
    }
    uses.keep();
    ia->adopt(ep);
    *out = ep;
    return DAT_SUCCESS;
}

DAT_RETURN ep_query(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *p) noexcept {
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    if (p == nullptr) return bad_arg(3);
    (void)mask;  // every field is cheap; fill them all
    std::lock_guard lk(ep->mu);
    p->ia_handle = ep->ia->consumer_handle();
    p->ep_state = ep->state;
    p->local_ia_address_ptr = const_cast<sockaddr *>(ep->ia->transport->address());
    p->local_port_qual = ep->local_qual;
    p->remote_ia_address_ptr = reinterpret_cast<sockaddr *>(&ep->remote_addr);
    p->remote_port_qual = ep->remote_qual;
    p->pz_handle = ep->pz;
    p->recv_evd_handle = ep->recv_evd;
    p->request_evd_handle = ep->request_evd;
    p->connect_evd_handle = ep->connect_evd;
    p->srq_handle = ep->srq;
    p->ep_attr = ep->attr;
    return DAT_SUCCESS;
}

namespace {
// DAT_EP_PARAM fields no consumer sets: the EP's identity, state and connection, and its
// SRQ binding (fixed at creation).
constexpr DAT_EP_PARAM_MASK kFixedFields =
    DAT_EP_FIELD_IA_HANDLE | DAT_EP_FIELD_EP_STATE | DAT_EP_FIELD_COMM |
    DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR | DAT_EP_FIELD_LOCAL_PORT_QUAL |
    DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR | DAT_EP_FIELD_REMOTE_PORT_QUAL | DAT_EP_FIELD_SRQ_HANDLE |
    DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW;
// Named attributes: provider-specific ones (delayed_ack) change in any state; we have no
// transport-specific ones, and unknown names are ignored as the specification allows.
constexpr DAT_EP_PARAM_MASK kNamedFields =
    DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR | DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR |
    DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR | DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR;
constexpr unsigned kKnownCompletionFlags =
    DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_SOLICITED_WAIT_FLAG |
    DAT_COMPLETION_UNSIGNALLED_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG |
    DAT_COMPLETION_EVD_THRESHOLD_FLAG | DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG;

// The EP attribute with the fields `mask` names taken from `in`; false if a value is out
// of range for the transport.
bool modified_attr(const DAT_EP_ATTR &cur, DAT_EP_PARAM_MASK mask, const DAT_EP_ATTR &in,
                   const Limits &lim, DAT_EP_ATTR *out) noexcept {
    DAT_EP_ATTR a = cur;
    // Copied as bytes: an enum field may hold a value outside its enumeration (judged below).
    auto take = [&](DAT_EP_PARAM_MASK bit, auto field) {
        if (mask & bit) std::memcpy(&(a.*field), &(in.*field), sizeof(a.*field));
    };
    take(DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE, &DAT_EP_ATTR::service_type);
    take(DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, &DAT_EP_ATTR::max_message_size);
    take(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE, &DAT_EP_ATTR::max_rdma_size);
    take(DAT_EP_FIELD_EP_ATTR_QOS, &DAT_EP_ATTR::qos);
    take(DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, &DAT_EP_ATTR::recv_completion_flags);
    take(DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS, &DAT_EP_ATTR::request_completion_flags);
    take(DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &DAT_EP_ATTR::max_recv_dtos);
    take(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &DAT_EP_ATTR::max_request_dtos);
    take(DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV, &DAT_EP_ATTR::max_recv_iov);
    take(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, &DAT_EP_ATTR::max_request_iov);
    take(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, &DAT_EP_ATTR::max_rdma_read_in);
    take(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT, &DAT_EP_ATTR::max_rdma_read_out);
    take(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV, &DAT_EP_ATTR::max_rdma_read_iov);
    take(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV, &DAT_EP_ATTR::max_rdma_write_iov);
    // Only what the mask names is judged: the current values stand as dat_ep_create took
    // them (its defaults may exceed a transport's limits, e.g. RDMA reads on a provider
    // without RDMA).
    auto over = [&](DAT_EP_PARAM_MASK bit, DAT_COUNT v, DAT_COUNT max) {
        return (mask & bit) && (v < 0 || v > max);
    };
    auto unknown_flags = [&](DAT_EP_PARAM_MASK bit, const DAT_COMPLETION_FLAGS &f) {
        return (mask & bit) && (static_cast<unsigned>(enum_bits(f)) & ~kKnownCompletionFlags) != 0;
    };
    if (((mask & DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE) &&
         enum_bits(a.service_type) != DAT_SERVICE_TYPE_RC) ||
        unknown_flags(DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, a.recv_completion_flags) ||
        unknown_flags(DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS, a.request_completion_flags) ||
        over(DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, a.max_recv_dtos, lim.max_dto_per_ep) ||
        over(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, a.max_request_dtos, lim.max_dto_per_ep) ||
        over(DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV, a.max_recv_iov, lim.max_iov) ||
        over(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, a.max_request_iov, lim.max_iov) ||
        over(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, a.max_rdma_read_in, lim.max_rdma_read_per_ep) ||
        over(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT, a.max_rdma_read_out,
             lim.max_rdma_read_per_ep) ||
        over(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV, a.max_rdma_read_iov, lim.max_iov) ||
        over(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV, a.max_rdma_write_iov, lim.max_iov))
        return false;
    // As at dat_ep_create: at least one segment; sizes capped at the transport's.
    if (a.max_recv_iov <= 0) a.max_recv_iov = 1;
    if (a.max_request_iov <= 0) a.max_request_iov = 1;
    if (a.max_message_size == 0 || a.max_message_size > lim.max_message_size)
        a.max_message_size = lim.max_message_size;
    if (a.max_rdma_size == 0 || a.max_rdma_size > lim.max_rdma_size)
        a.max_rdma_size = lim.max_rdma_size;
    *out = a;
    return true;
}

// Whether the transport built the EP from something `next` changes.
bool transport_changes(const Ep *ep, const EpConfig &next) noexcept {
    const DAT_EP_ATTR &a = ep->attr, &b = next.attr;
    return next.pz != ep->pz || next.recv_evd != ep->recv_evd ||
           next.request_evd != ep->request_evd || next.connect_evd != ep->connect_evd ||
           a.max_recv_dtos != b.max_recv_dtos || a.max_request_dtos != b.max_request_dtos ||
           a.max_recv_iov != b.max_recv_iov || a.max_request_iov != b.max_request_iov ||
           a.max_rdma_read_in != b.max_rdma_read_in || a.max_rdma_read_out != b.max_rdma_read_out ||
           a.max_rdma_read_iov != b.max_rdma_read_iov ||
           a.max_rdma_write_iov != b.max_rdma_write_iov;
}

// The use of `to` that replacing `from` (EVD or PZ; either may be nullptr) takes, before
// the transport builds on it; false if a free of `to` has begun.
template <class T>
bool take_new_use(UseHold &uses, const T *from, T *to) noexcept {
    return from == to || uses.take(uses_of(to));
}
// The use of `from` a change that took `to`'s gives back.
template <class T>
void drop_old_use(T *from, const T *to) noexcept {
    if (from != to && from != nullptr) from->users.drop();
}
}  // namespace

// The specification's rules: the EP's identity, state, addresses and SRQ never change
// (DAT_INVALID_PARAMETER, argument 2); everything else changes only before a connection
// exists (UNCONNECTED, RESERVED, or a connection request pending on it: otherwise
// DAT_INVALID_STATE), within the IA's limits (DAT_INVALID_PARAMETER, argument 3). The
// provider-specific attributes (delayed_ack) change in any state.
DAT_RETURN ep_modify(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *p) noexcept {
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    if ((mask & ~DAT_EP_FIELD_ALL) != 0 || (mask & kFixedFields) != 0) {
        DAPL_TRC(trace::kError, "ep", "dat_ep_modify: mask 0x%llx names a field that cannot change",
                 static_cast<unsigned long long>(mask));
        return bad_arg(2);
    }
    if (p == nullptr) return bad_arg(3);
    Ia *ia = ep->ia;
    EpConfig next;
    next.pz = ep->pz;
    next.recv_evd = ep->recv_evd;
    next.request_evd = ep->request_evd;
    next.connect_evd = ep->connect_evd;
    if (mask & DAT_EP_FIELD_PZ_HANDLE) {
        next.pz = nullptr;
        if (p->pz_handle != DAT_HANDLE_NULL && (next.pz = as<Pz>(p->pz_handle, ia)) == nullptr)
            return invalid_handle(DAT_HANDLE_TYPE_PZ);
    }
    if ((mask & DAT_EP_FIELD_RECV_EVD_HANDLE) &&
        !optional_evd(p->recv_evd_handle, ia, &next.recv_evd))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
    if ((mask & DAT_EP_FIELD_REQUEST_EVD_HANDLE) &&
        !optional_evd(p->request_evd_handle, ia, &next.request_evd))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
    if ((mask & DAT_EP_FIELD_CONNECT_EVD_HANDLE) &&
        !optional_evd(p->connect_evd_handle, ia, &next.connect_evd))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
    if ((mask & DAT_EP_FIELD_EP_ATTR_QOS) != 0) {
        if (DAT_RETURN rc = check_qos(p->ep_attr.qos, 3, "dat_ep_modify"); rc != DAT_SUCCESS)
            return rc;
    }

    std::lock_guard lk(ep->mu);
    // A dat_ep_free that claimed the EP since the check gives back the uses it finds
    // under this lock: none may move after that (release_uses).
    if (as<Ep>(ep) == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    if ((mask & ~kNamedFields) != 0) {
        if (!modified_attr(ep->attr, mask, p->ep_attr, ia->transport->limits(), &next.attr)) {
            DAPL_TRC(trace::kError, "ep", "dat_ep_modify: EP attribute out of the IA's limits");
            return bad_arg(3);
        }
        switch (ep->state) {
            case DAT_EP_STATE_UNCONNECTED:
            case DAT_EP_STATE_RESERVED:
            case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
            case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING:
                break;
            default:
                DAPL_TRC(trace::kError, "ep", "dat_ep_modify: EP %p in state %d cannot change",
                         static_cast<void *>(ep), static_cast<int>(ep->state));
                return err(DAT_INVALID_STATE, ep->state == DAT_EP_STATE_CONNECTED
                                                  ? DAT_INVALID_STATE_EP_CONNECTED
                                                  : DAT_INVALID_STATE_EP_NOTREADY);
        }
        UseHold uses;
        if (!take_new_use(uses, ep->pz, next.pz)) return invalid_handle(DAT_HANDLE_TYPE_PZ);
        if (!take_new_use(uses, ep->recv_evd, next.recv_evd))
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
        if (!take_new_use(uses, ep->request_evd, next.request_evd))
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
        if (!take_new_use(uses, ep->connect_evd, next.connect_evd))
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
        if (transport_changes(ep, next)) {
            if (DAT_RETURN rc = ia->transport->ep_modify(ep, next); rc != DAT_SUCCESS) return rc;
        }
        uses.keep();
        drop_old_use(ep->pz, next.pz);
        drop_old_use(ep->recv_evd, next.recv_evd);
        drop_old_use(ep->request_evd, next.request_evd);
        drop_old_use(ep->connect_evd, next.connect_evd);
        ep->pz = next.pz;
        ep->recv_evd = next.recv_evd;
        ep->request_evd = next.request_evd;
        ep->connect_evd = next.connect_evd;
        // The named attributes stay the EP's own (apply_provider_specific below).
        next.attr.ep_transport_specific_count = 0;
        next.attr.ep_transport_specific = nullptr;
        next.attr.ep_provider_specific_count = ep->attr.ep_provider_specific_count;
        next.attr.ep_provider_specific = ep->attr.ep_provider_specific;
        ep->attr = next.attr;
    }
    if (mask & DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR)
        return apply_provider_specific(ep, p->ep_attr, 3);
    return DAT_SUCCESS;
}

DAT_RETURN ep_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
                      DAT_TIMEOUT timeout, DAT_COUNT pdata_len, const DAT_PVOID pdata, DAT_QOS qos,
                      DAT_CONNECT_FLAGS) noexcept {
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    if (addr == nullptr) return bad_arg(2);
    if (pdata_len < 0 || static_cast<std::size_t>(pdata_len) > kMaxPrivateData) return bad_arg(5);
    if (pdata_len > 0 && pdata == nullptr) return bad_arg(6);
    if (DAT_RETURN rc = check_qos(qos, 7, "dat_ep_connect"); rc != DAT_SUCCESS) return rc;
    if (ep->connect_evd == nullptr || ep->request_evd == nullptr || ep->recv_evd == nullptr ||
        ep->pz == nullptr)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED);
    {
        std::lock_guard lk(ep->mu);
        if (ep->state != DAT_EP_STATE_UNCONNECTED)
            return err(DAT_INVALID_STATE, ep->state == DAT_EP_STATE_CONNECTED
                                              ? DAT_INVALID_STATE_EP_CONNECTED
                                              : DAT_INVALID_STATE_EP_NOTREADY);
        ep->state = DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
        ep->remote_qual = qual;
        ep->remote_qual_listens = true;
        // What dat_ep_query and dat_ep_dup_connect report until the transport knows
        // better (tcp records the address it reached).
        std::size_t len = sockaddr_len(addr);
        if (len > 0 && len <= sizeof ep->remote_addr) {
            ep->remote_addr = sockaddr_storage{};
            std::memcpy(&ep->remote_addr, addr, len);
        }
    }
    DAT_RETURN rc = ep->ia->transport->ep_connect(ep, addr, qual, timeout, pdata_len, pdata);
    if (rc != DAT_SUCCESS) {
        std::lock_guard lk(ep->mu);
        ep->state = DAT_EP_STATE_UNCONNECTED;
    }
    return rc;
}

// Connects `h` to where the connected `dup_h` connected: its remote address and the
// qualifier it connected to. An EP that was accepted knows the remote address but not a
// qualifier the peer listens on (its remote_qual is the peer's source port), so there is
// no "same remote end" to connect to: DAT_INVALID_PARAMETER on the duplicate, never a
// connection to a guessed one.
DAT_RETURN ep_dup_connect(DAT_EP_HANDLE h, DAT_EP_HANDLE dup_h, DAT_TIMEOUT timeout,
                          DAT_COUNT pdata_len, const DAT_PVOID pdata, DAT_QOS qos) noexcept {
    const Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    Ep *dup = as<Ep>(dup_h, ep->ia);
    if (dup == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    sockaddr_storage remote;
    DAT_CONN_QUAL qual;
    {
        std::lock_guard lk(dup->mu);
        if (dup->state != DAT_EP_STATE_CONNECTED)
            return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
        if (!dup->remote_qual_listens) {
            DAPL_TRC(trace::kError, "ep",
                     "dat_ep_dup_connect: EP %p was accepted; the peer's listening qualifier is "
                     "unknown",
                     static_cast<void *>(dup));
            return bad_arg(2);
        }
        remote = dup->remote_addr;
        qual = dup->remote_qual;
    }
    // Checked here, before the value is passed on (and so loaded as a DAT_QOS).
    if (DAT_RETURN rc = check_qos(qos, 6, "dat_ep_dup_connect"); rc != DAT_SUCCESS) return rc;
    return ep_connect(h, reinterpret_cast<sockaddr *>(&remote), qual, timeout, pdata_len, pdata,
                      qos, DAT_CONNECT_DEFAULT_FLAG);
}

DAT_RETURN ep_disconnect(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS flags) noexcept {
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    return ep->ia->transport->ep_disconnect(ep, flags);
}

[[gnu::hot]] DAT_RETURN ep_post_send(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                     DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept {
    grace::Guard call;  // a hot entry point: its own (util/grace.hpp)
    Ep *ep = nullptr;
    if (DAT_RETURN rc = send_checks(h, n, iov, &ep); rc != DAT_SUCCESS) return rc;
    return ep->ia->transport->ep_post_send(ep, n, iov, cookie, flags);
}

[[gnu::hot]] DAT_RETURN ep_post_recv(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                     DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept {
    grace::Guard call;  // a hot entry point: its own (util/grace.hpp)
    Ep *ep = nullptr;
    if (DAT_RETURN rc = recv_checks(h, n, iov, &ep); rc != DAT_SUCCESS) return rc;
    return ep->ia->transport->ep_post_recv(ep, n, iov, cookie, flags);
}

[[gnu::hot]] DAT_RETURN ep_post_rdma_read(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                          DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                          DAT_COMPLETION_FLAGS flags) noexcept {
    grace::Guard call;  // a hot entry point: its own (util/grace.hpp)
    Ep *ep = nullptr;
    if (DAT_RETURN rc = post_checks(h, n, iov, &ep); rc != DAT_SUCCESS) return rc;
    if (remote == nullptr) return bad_arg(5);
    if (n > ep->attr.max_rdma_read_iov && n > ep->attr.max_request_iov)
        return err(DAT_LENGTH_ERROR);
    return ep->ia->transport->ep_post_rdma_read(ep, n, iov, cookie, remote, flags);
}

[[gnu::hot]] DAT_RETURN ep_post_rdma_write(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                           DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                           DAT_COMPLETION_FLAGS flags) noexcept {
    grace::Guard call;  // a hot entry point: its own (util/grace.hpp)
    Ep *ep = nullptr;
    if (DAT_RETURN rc = rdma_write_checks(h, n, iov, remote, &ep); rc != DAT_SUCCESS) return rc;
    return ep->ia->transport->ep_post_rdma_write(ep, n, iov, cookie, remote, flags);
}

DAT_RETURN ep_get_status(DAT_EP_HANDLE h, DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
                         DAT_BOOLEAN *req_idle) noexcept {
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    bool r = true, q = true;
    ep->ia->transport->ep_idle(ep, &r, &q);
    if (state != nullptr) {
        std::lock_guard lk(ep->mu);
        *state = ep->state;
    }
    if (recv_idle != nullptr) *recv_idle = r ? DAT_TRUE : DAT_FALSE;
    if (req_idle != nullptr) *req_idle = q ? DAT_TRUE : DAT_FALSE;
    return DAT_SUCCESS;
}

DAT_RETURN ep_free(DAT_EP_HANDLE h) noexcept {
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    // Nothing refuses this free: claimed before anything of the EP is touched.
    if (!claim(ep)) return invalid_handle(DAT_HANDLE_TYPE_EP);  // another free won
    FreeInFlight flight(ep->ia);
    {
        // The RSP reserving this EP forgets it (rsp_query, the next request's CR).
        std::lock_guard lk(ep->mu);
        if (Rsp *rsp = as<Rsp>(ep->rsp); rsp != nullptr && rsp->ep == ep) rsp->ep = nullptr;
        ep->rsp = nullptr;
    }
    Transport *tr = ep->ia->transport.get();
    tr->ep_destroy(ep);
    // Its EVDs and PZ count it as a user until the transport can no longer post to them
    // or place through them: a dat_evd_free racing this one must get DAT_INVALID_STATE,
    // not free a ring the progress still writes a completion into.
    release_uses(ep);
    // Only now may the SRQ go: the transport's teardown still gave its receives back.
    if (ep->srq != nullptr) ep->srq->users.drop();
    // Freed when the transport lets go of it (its progress thread may still hold it).
    tr->ep_release(Deferred::of(ep));
    return DAT_SUCCESS;
}

DAT_RETURN ep_reset(DAT_EP_HANDLE h) noexcept {
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    {
        std::lock_guard lk(ep->mu);
        if (ep->state != DAT_EP_STATE_DISCONNECTED && ep->state != DAT_EP_STATE_UNCONNECTED)
            return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED);
        ep->state = DAT_EP_STATE_UNCONNECTED;
    }
    // Outside ep->mu: the transport takes it itself if it needs it.
    ep->ia->transport->ep_reset(ep);
    return DAT_SUCCESS;
}

namespace {
// The consumer answers the request: the IA no longer frees it at close.
void forget_cr(Cr *cr) noexcept {
    std::lock_guard lk(cr->ia->crs_mu);
    cr->ia->pending_crs.erase(cr);
}

// Listens on sp->qual; on failure the caller frees `sp` (the transport holds nothing of it).
template <class S>
DAT_RETURN sp_create(Ia *ia, S *sp) noexcept {
    // Counted before the first request can post to it (a dat_evd_free under way refuses).
    UseHold uses;
    if (!uses.take(&sp->evd->users)) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
    if (DAT_RETURN rc = ia->transport->sp_listen(sp); rc != DAT_SUCCESS) return rc;
    uses.keep();
    ia->adopt(sp);
    return DAT_SUCCESS;
}

// The RSP no longer reserves `ep` (if it still does): the EP is UNCONNECTED again.
void unreserve(Ep *ep, const Rsp *rsp) noexcept {
    std::lock_guard lk(ep->mu);
    if (ep->rsp != rsp) return;
    ep->rsp = nullptr;
    if (ep->state == DAT_EP_STATE_RESERVED) ep->state = DAT_EP_STATE_UNCONNECTED;
}

// dat_psp_free / dat_rsp_free once the entry point claimed the service point.
template <class S>
void sp_free(S *sp) noexcept {
    sp->ia->release(sp);
    sp->ia->transport->sp_close(sp);
    // Only now: until sp_close a connection request may still post to the EVD.
    sp->evd->users.drop();
    // No request reaches it after sp_close; a dat_psp_query or dat_rsp_query that checked
    // it before the claim still reads it.
    grace::retire(sp);
}

// The consumer answered a request it claimed (util::claim: consumed either way): the
// transport's hook, then the CR goes. The hook may read the CR, and the consumer's
// `pdata` may point into it.
template <class Hook>
DAT_RETURN cr_answer(Cr *cr, Hook hook) noexcept {
    forget_cr(cr);
    DAT_RETURN rc = hook();
    cr_forget_looks(cr);
    delete cr;
    return rc;
}
}  // namespace

DAT_RETURN psp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd_h,
                      DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    Evd *evd = as<Evd>(evd_h, ia);
    if (evd == nullptr || !(evd->flags & DAT_EVD_CR_FLAG))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
    if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG) return bad_arg(4);
    if (out == nullptr) return bad_arg(5);
    Psp *psp = new (std::nothrow) Psp(ia->provider, ia);
    if (psp == nullptr) return kNoMemory;
    psp->qual = qual;
    psp->evd = evd;
    psp->flags = flags;
    if (DAT_RETURN rc = sp_create(ia, psp); rc != DAT_SUCCESS) {
        delete psp;
        return rc;
    }
    *out = psp;
    return DAT_SUCCESS;
}

DAT_RETURN psp_create_any(DAT_IA_HANDLE h, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evd_h,
                          DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out) noexcept {
    if (qual == nullptr) return bad_arg(2);
    // Qualifier 0 asks the transport for any free one; it reports the choice in psp->qual.
    DAT_RETURN rc = psp_create(h, 0, evd_h, flags, out);
    if (rc == DAT_SUCCESS) *qual = static_cast<Psp *>(*out)->qual;
    return rc;
}

DAT_RETURN psp_query(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK, DAT_PSP_PARAM *p) noexcept {
    Psp *psp = as<Psp>(h);
    if (psp == nullptr) return invalid_handle(DAT_HANDLE_TYPE_PSP);
    if (p == nullptr) return bad_arg(3);
    p->ia_handle = psp->ia->consumer_handle();
    p->conn_qual = psp->qual;
    p->evd_handle = psp->evd;
    p->psp_flags = psp->flags;
    return DAT_SUCCESS;
}

DAT_RETURN psp_free(DAT_PSP_HANDLE h) noexcept {
    Psp *psp = as<Psp>(h);
    if (psp == nullptr || !claim(psp)) return invalid_handle(DAT_HANDLE_TYPE_PSP);
    FreeInFlight flight(psp->ia);
    sp_free(psp);
    return DAT_SUCCESS;
}

DAT_RETURN rsp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep_h, DAT_EVD_HANDLE evd_h,
                      DAT_RSP_HANDLE *out) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    Ep *ep = as<Ep>(ep_h, ia);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    Evd *evd = as<Evd>(evd_h, ia);
    if (evd == nullptr || !(evd->flags & DAT_EVD_CR_FLAG))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
    if (out == nullptr) return bad_arg(5);
    Rsp *rsp = new (std::nothrow) Rsp(ia->provider, ia);
    if (rsp == nullptr) return kNoMemory;
    rsp->qual = qual;
    rsp->evd = evd;
    rsp->ep = ep;
    // Reserved before the listen: a request may arrive, and be accepted, the moment it
    // listens, and must find the EP reserved by this RSP (checking the EP again after the
    // listen would refuse an RSP a connection was already made through). A dat_ep_free
    // meanwhile leaves the RSP without an EP, as a free right after the create would.
    {
        std::lock_guard lk(ep->mu);
        DAT_RETURN refused = DAT_SUCCESS;
        if (as<Ep>(ep) == nullptr)  // freed since the check
            refused = invalid_handle(DAT_HANDLE_TYPE_EP);
        else if (ep->state != DAT_EP_STATE_UNCONNECTED || ep->rsp != nullptr)
            refused = err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
        if (refused != DAT_SUCCESS) {
            delete rsp;
            return refused;
        }
        ep->rsp = rsp;
        ep->state = DAT_EP_STATE_RESERVED;
    }
    if (DAT_RETURN rc = sp_create(ia, rsp); rc != DAT_SUCCESS) {
        unreserve(ep, rsp);
        delete rsp;
        return rc;
    }
    *out = rsp;
    return DAT_SUCCESS;
}

DAT_RETURN rsp_query(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK, DAT_RSP_PARAM *p) noexcept {
    Rsp *rsp = as<Rsp>(h);
    if (rsp == nullptr) return invalid_handle(DAT_HANDLE_TYPE_RSP);
    if (p == nullptr) return bad_arg(3);
    p->ia_handle = rsp->ia->consumer_handle();
    p->conn_qual = rsp->qual;
    p->evd_handle = rsp->evd;
    p->ep_handle = rsp->ep;
    return DAT_SUCCESS;
}

DAT_RETURN rsp_free(DAT_RSP_HANDLE h) noexcept {
    Rsp *rsp = as<Rsp>(h);
    if (rsp == nullptr || !claim(rsp)) return invalid_handle(DAT_HANDLE_TYPE_RSP);
    FreeInFlight flight(rsp->ia);
    if (Ep *ep = as<Ep>(rsp->ep); ep != nullptr) unreserve(ep, rsp);
    sp_free(rsp);
    return DAT_SUCCESS;
}

DAT_RETURN cr_query(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK, DAT_CR_PARAM *p) noexcept {
    Cr *cr = as<Cr>(h);
    if (cr == nullptr) return invalid_handle(DAT_HANDLE_TYPE_CR);
    if (p == nullptr) return bad_arg(3);
    if (DAT_RETURN rc = provider_ep_for(cr); rc != DAT_SUCCESS) return rc;
    p->remote_ia_address_ptr = reinterpret_cast<sockaddr *>(&cr->remote_addr);
    p->remote_port_qual = cr->remote_port;
    p->private_data_size = cr->pdata_len;
    p->private_data = cr->pdata_len > 0 ? cr->pdata : nullptr;
    p->local_ep_handle = as<Ep>(cr->local_ep);  // NULL once a reserved EP was freed
    return DAT_SUCCESS;
}

DAT_RETURN cr_accept(DAT_CR_HANDLE h, DAT_EP_HANDLE ep_h, DAT_COUNT pdata_len,
                     const DAT_PVOID pdata) noexcept {
    Cr *cr = as<Cr>(h);
    if (cr == nullptr) return invalid_handle(DAT_HANDLE_TYPE_CR);
    if (ep_h == DAT_HANDLE_NULL) {
        if (DAT_RETURN rc = provider_ep_for(cr); rc != DAT_SUCCESS) return rc;
    }
    Ia *ia = cr->ia;
    Ep *made = provider_ep_of(cr);
    // The reserved EP is checked too: it may have been freed since the request arrived.
    Ep *ep = as<Ep>(ep_h != DAT_HANDLE_NULL ? ep_h : made != nullptr ? made : cr->local_ep, ia);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    if (pdata_len < 0 || static_cast<std::size_t>(pdata_len) > kMaxPrivateData) return bad_arg(3);
    if (pdata_len > 0 && pdata == nullptr) return bad_arg(4);
    // A provider-made EP is configured by the consumer (dat_ep_modify: PZ, EVDs) first.
    if (ep->connect_evd == nullptr || ep->request_evd == nullptr || ep->recv_evd == nullptr ||
        ep->pz == nullptr)
        return err(DAT_INVALID_STATE, ep == made ? DAT_INVALID_STATE_EP_UNCONFTENTATIVE
                                                 : DAT_INVALID_STATE_EP_UNCONFIGURED);
    // The provider's EP is accepted on (by handle or DAT_HANDLE_NULL) in its tentative
    // state; any other EP must be free. (An EP made for the request after the look above
    // is not the consumer's choice here; it is read again once the request is claimed.)
    const bool on_provider_ep = made != nullptr && ep == made;
    FreeInFlight flight;
    {
        std::lock_guard lk(ep->mu);
        if (on_provider_ep
                ? ep->state != DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING
                : ep->state != DAT_EP_STATE_UNCONNECTED && ep->state != DAT_EP_STATE_RESERVED)
            return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
        // An answer racing this one (or the IA's close) took the request: the EP is
        // left as it was.
        if (!claim(cr)) return invalid_handle(DAT_HANDLE_TYPE_CR);
        flight.begin(ia);
        ep->state = DAT_EP_STATE_COMPLETION_PENDING;
        ep->remote_addr = cr->remote_addr;
        ep->remote_qual = cr->remote_port;
        ep->remote_qual_listens = false;
        ep->local_qual = cr->qual;
    }
    // Accepted on another EP: the provider's stays the consumer's, free to use or free.
    if (Ep *mine = as<Ep>(provider_ep_of(cr)); mine != nullptr && !on_provider_ep) {
        std::lock_guard lk(mine->mu);
        if (mine->state == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING)
            mine->state = DAT_EP_STATE_UNCONNECTED;
    }
    DAT_RETURN rc =
        cr_answer(cr, [&] { return cr->ia->transport->cr_accept(cr, ep, pdata_len, pdata); });
    if (rc != DAT_SUCCESS) {
        std::lock_guard lk(ep->mu);
        ep->state = DAT_EP_STATE_UNCONNECTED;
    }
    return rc;
}

DAT_RETURN cr_reject(DAT_CR_HANDLE h, DAT_COUNT pdata_len, const DAT_PVOID pdata) noexcept {
    Cr *cr = as<Cr>(h);
    if (cr == nullptr) return invalid_handle(DAT_HANDLE_TYPE_CR);
    if (pdata_len < 0 || static_cast<std::size_t>(pdata_len) > kMaxPrivateData) return bad_arg(2);
    if (pdata_len > 0 && pdata == nullptr) return bad_arg(3);
    // Another answer (or the IA's close) took it: then the provider's EP is not ours to free.
    if (!claim(cr)) return invalid_handle(DAT_HANDLE_TYPE_CR);
    FreeInFlight flight(cr->ia);
    // The EP the provider made for the request goes with it (unless the consumer freed it).
    Ep *mine = as<Ep>(provider_ep_of(cr));
    DAT_RETURN rc =
        cr_answer(cr, [&] { return cr->ia->transport->cr_reject(cr, pdata_len, pdata); });
    if (mine != nullptr) ep_free(mine);
    return rc;
}

}  // namespace entry

DAT_RETURN recv_on_srq_ep(const Ep *ep) noexcept {
    // Its receives are posted to the SRQ (dat_srq_post_recv).
    DAPL_TRC(trace::kInfo, "srq", "dat_ep_post_recv on EP %p, which takes from SRQ %p",
             static_cast<const void *>(ep), static_cast<const void *>(ep->srq));
    return err(DAT_INVALID_STATE);
}

[[gnu::hot]] DAT_RETURN rdma_write_checks(DAT_EP_HANDLE h, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                          const DAT_RMR_TRIPLET *remote, Ep **out) noexcept {
    Ep *ep = nullptr;
    if (DAT_RETURN rc = post_checks(h, n, iov, &ep); rc != DAT_SUCCESS) return rc;
    if (remote == nullptr) return bad_arg(5);
    if (n > ep->attr.max_rdma_write_iov && n > ep->attr.max_request_iov)
        return err(DAT_LENGTH_ERROR);
    *out = ep;
    return DAT_SUCCESS;
}

// DAT_PSP_PROVIDER_FLAG: an EP of the PSP's IA with the provider's default attributes, no
// PZ and no DTO EVDs (the consumer sets them with dat_ep_modify before accepting on it, or
// accepts on its own EP), connection events to the PSP's EVD when that EVD takes them. It
// waits in DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING for the consumer's answer.
DAT_RETURN provider_ep_for(Cr *cr) noexcept {
    if (!cr->wants_provider_ep) return DAT_SUCCESS;
    // Made once: a second first look waits for the first one's EP.
    std::lock_guard made(cr->provider_ep_mu);
    if (cr->provider_ep != nullptr) return DAT_SUCCESS;
    // An answer that took the request meanwhile read provider_ep under this lock: an EP
    // made now would be nobody's.
    if (as<Cr>(cr) == nullptr) return invalid_handle(DAT_HANDLE_TYPE_CR);
    Evd *conn = as<Evd>(cr->provider_conn_evd, cr->ia);  // nullptr if freed since
    DAT_EP_HANDLE h = DAT_HANDLE_NULL;
    if (entry::ep_create(cr->ia, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL, conn, nullptr,
                         &h) != DAT_SUCCESS) {
        DAPL_TRC(trace::kError, "ep", "CR %p: cannot make an EP for the connection request",
                 static_cast<void *>(cr));
        return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
    }
    Ep *ep = static_cast<Ep *>(h);
    {
        std::lock_guard lk(ep->mu);
        ep->state = DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
    }
    cr->provider_ep = ep;
    cr->local_ep = ep;
    return DAT_SUCCESS;
}

void cr_forget_looks(Cr *cr) noexcept {
    // A look that passed as<Cr> before the claim may hold the lock (provider_ep_for): it
    // lets go before the CR is deleted. (One that comes later still reads a dead CR, the
    // general case of a call racing a free.)
    std::lock_guard made(cr->provider_ep_mu);
}

Ep *provider_ep_of(Cr *cr) noexcept {
    std::lock_guard made(cr->provider_ep_mu);
    return cr->provider_ep;
}

}  // namespace opendat::util

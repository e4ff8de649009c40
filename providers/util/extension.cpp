// dat_extension_op's provider side (docs/dat-abi.md §10): one function reads the op's
// arguments from the va_list in the order the dat_ib_* macros pass them (§10.3), checks
// them like the base entry points, and calls the transport. What no OpenDAT transport
// implements (unreliable datagrams, counters, collectives) is DAT_NOT_IMPLEMENTED with a
// trace line, so that e.g. `dtestx -u` stops cleanly.
#include "util/extension.hpp"

#include <cstring>
#include <mutex>
#include <unordered_set>

#include "trace/trace.hpp"
#include "util/entries.hpp"
#include "util/ep_checks.hpp"
#include "util/grace.hpp"

namespace opendat::util {

DAT_EVENT ext_dto_event(Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS status,
                        DAT_COUNT length, DAT_DTOS op, DAT_IB_EXT_TYPE type,
                        std::uint32_t immed) noexcept {
    DAT_EVENT ev = dto_event(ep, cookie, status, length, op);
    ev.event_number = static_cast<DAT_EVENT_NUMBER>(DAT_IB_DTO_EVENT);
    static_assert(sizeof(DAT_IB_EXTENSION_EVENT_DATA) <= sizeof ev.event_extension_data);
    DAT_IB_EXTENSION_EVENT_DATA x{};
    x.type = type;
    x.status = status == DAT_DTO_SUCCESS ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
    x.val.immed.data = immed;
    std::memcpy(ev.event_extension_data, &x, sizeof x);
    return ev;
}

void post_ext_dto(Evd *evd, Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS status,
                  DAT_COUNT length, DAT_DTOS op, DAT_IB_EXT_TYPE type, std::uint32_t immed,
                  bool solicited) noexcept {
    if (evd == nullptr) return;
    post_dto_event(evd, ep, ext_dto_event(ep, cookie, status, length, op, type, immed),
                   solicited || status != DAT_DTO_SUCCESS);
}

namespace entry {

namespace {

// IAs opened by DAT_IB_OPEN_QUERY_OP: private to the query (libdat2 never saw them), freed
// by DAT_IB_CLOSE_QUERY_OP, which accepts nothing else.
std::mutex g_query_mu;
std::unordered_set<const void *> g_query_ias;

const char *op_name(DAT_EXTENDED_OP op) noexcept {
    switch (op) {
        case DAT_IB_UD_SEND_OP:
            return "UD send";
        case DAT_IB_UD_CM_FREE_OP:
        case DAT_IB_UD_AH_FREE_OP:
            return "UD address handles";
        case DAT_IB_QUERY_COUNTERS_OP:
        case DAT_IB_PRINT_COUNTERS_OP:
        case DAT_IB_START_COUNTERS_OP:
        case DAT_IB_STOP_COUNTERS_OP:
            return "counters";
        default:
            return "collectives";
    }
}

DAT_RETURN not_supported(const char *what, const char *why) noexcept {
    DAPL_TRC(trace::kWarn, "ext", "dat_extension_op %s: not implemented (%s)", what, why);
    return kNotImplemented;
}

DAT_RETURN write_immed(DAT_HANDLE h, va_list args) noexcept {
    const DAT_COUNT n = va_arg(args, DAT_COUNT);
    const DAT_LMR_TRIPLET *iov = va_arg(args, const DAT_LMR_TRIPLET *);
    const DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
    const DAT_RMR_TRIPLET *remote = va_arg(args, const DAT_RMR_TRIPLET *);
    const auto immed = static_cast<std::uint32_t>(va_arg(args, unsigned int));
    const auto flags = static_cast<DAT_COMPLETION_FLAGS>(va_arg(args, int));
    Ep *ep = nullptr;  // the same argument checks as dat_ep_post_rdma_write
    DAT_RETURN rc = rdma_write_checks(h, n, iov, remote, &ep);
    if (rc != DAT_SUCCESS) return rc;
    rc = ep->ia->transport->ep_post_write_immed(ep, n, iov, cookie, remote, immed, flags);
    if (rc == kNotImplemented) return not_supported("RDMA write with immediate", "transport");
    return rc;
}

// dat_ib_post_fetch_and_add(ep, add, local, cookie, remote, flags) and
// dat_ib_post_cmp_and_swap(ep, compare, swap, local, cookie, remote, flags).
DAT_RETURN atomic(DAT_HANDLE h, AtomicOp op, va_list args) noexcept {
    const std::uint64_t first = va_arg(args, DAT_UINT64);
    const std::uint64_t swap = op == AtomicOp::CmpSwap ? va_arg(args, DAT_UINT64) : 0;
    const int shift = op == AtomicOp::CmpSwap ? 1 : 0;  // argument numbers after `swap`
    const DAT_LMR_TRIPLET *local = va_arg(args, const DAT_LMR_TRIPLET *);
    const DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
    const DAT_RMR_TRIPLET *remote = va_arg(args, const DAT_RMR_TRIPLET *);
    const auto flags = static_cast<DAT_COMPLETION_FLAGS>(va_arg(args, int));
    Ep *ep = as<Ep>(h);
    if (ep == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EP);
    if (local == nullptr) return bad_arg(3 + shift);
    // The original value is 8 bytes; a shorter local segment cannot take it.
    if (local->segment_length < sizeof(std::uint64_t)) return err(DAT_LENGTH_ERROR);
    if (remote == nullptr) return bad_arg(5 + shift);
    if (remote->virtual_address % sizeof(std::uint64_t) != 0) {
        DAPL_TRC(trace::kWarn, "ext", "atomic on EP %p: target 0x%llx is not 8-byte aligned",
                 static_cast<void *>(ep), static_cast<unsigned long long>(remote->virtual_address));
        return bad_arg(5 + shift);
    }
    DAT_RETURN rc =
        ep->ia->transport->ep_post_atomic(ep, op, first, swap, local, cookie, remote, flags);
    if (rc == kNotImplemented) return not_supported("atomic", "transport");
    return rc;
}

// dat_ib_open_query(name, &handle, ia_mask, ia_attr, provider_mask, provider_attr): the
// attributes without an IA the consumer opened (dtestx -q). The handle is a private IA of
// this provider (libdat2 dispatches the close through its table).
DAT_RETURN open_query(const char *name, va_list args) noexcept {
    auto *out = va_arg(args, DAT_HANDLE *);
    const DAT_IA_ATTR_MASK ia_mask = va_arg(args, DAT_IA_ATTR_MASK);
    auto *ia_attr = va_arg(args, DAT_IA_ATTR *);
    const DAT_PROVIDER_ATTR_MASK prov_mask = va_arg(args, DAT_PROVIDER_ATTR_MASK);
    auto *prov_attr = va_arg(args, DAT_PROVIDER_ATTR *);
    if (out == nullptr) return bad_arg(3);
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_RETURN rc = ia_open(const_cast<char *>(name), 1, &async, &ia);
    if (rc != DAT_SUCCESS) return rc;
    if (!has_ib_extensions(as<Ia>(ia)->transport->limits())) {
        ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
        return not_supported("open query", "the IA reports no IB extensions");
    }
    rc = ia_query(ia, nullptr, ia_mask, ia_attr, prov_mask, prov_attr);
    if (rc == DAT_SUCCESS) {
        try {
            std::lock_guard lk(g_query_mu);
            g_query_ias.insert(ia);
        } catch (...) {
            rc = kNoMemory;
        }
    }
    if (rc != DAT_SUCCESS) {
        ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
        return rc;
    }
    DAPL_TRC(trace::kInfo, "ext", "open query %s: %p", name, ia);
    *out = ia;
    return DAT_SUCCESS;
}

DAT_RETURN close_query(DAT_HANDLE h) noexcept {
    {
        std::lock_guard lk(g_query_mu);
        if (g_query_ias.erase(h) == 0) return invalid_handle(DAT_HANDLE_TYPE_IA);
    }
    return ia_close(h, DAT_CLOSE_ABRUPT_FLAG);
}

}  // namespace

DAT_RETURN extended_op(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list args) noexcept {
    grace::Guard call;  // a hot entry point: its own (util/grace.hpp)
    switch (op) {
        case DAT_IB_RDMA_WRITE_IMMED_OP:
            return write_immed(h, args);
        case DAT_IB_FETCH_AND_ADD_OP:
            return atomic(h, AtomicOp::FetchAdd, args);
        case DAT_IB_CMP_AND_SWAP_OP:
            return atomic(h, AtomicOp::CmpSwap, args);
        case DAT_IB_OPEN_QUERY_OP:
            // libdat2 passes the IA name as the handle (it consumed it from the varargs).
            if (h == nullptr) return bad_arg(1);
            return open_query(static_cast<const char *>(h), args);
        case DAT_IB_CLOSE_QUERY_OP:
            return close_query(h);
        default:
            break;
    }
    if (op < DAT_IB_FETCH_AND_ADD_OP || op > DAT_IB_UD_AH_FREE_OP) {
        DAPL_TRC(trace::kWarn, "ext", "dat_extension_op: unknown op %d", static_cast<int>(op));
        return bad_arg(2);
    }
    return not_supported(op_name(op), "no OpenDAT transport has it");
}

}  // namespace entry

}  // namespace opendat::util

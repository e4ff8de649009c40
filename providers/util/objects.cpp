#include "util/objects.hpp"

#include <pthread.h>

#include <cstring>
#include <new>

#include "trace/trace.hpp"
#include "util/entries.hpp"
#include "util/ia_handle.hpp"

namespace opendat::util {

namespace {
// Each forked child starts a new process generation: the objects it inherited are refused
// there (object.hpp). Registered when the provider library loads; glibc unregisters it
// when the library is unloaded.
void forked_child() noexcept {
    g_fork_generation.fetch_add(1, std::memory_order_relaxed);
}
[[maybe_unused]] const bool g_fork_handler = pthread_atfork(nullptr, nullptr, forked_child) == 0;
}  // namespace

void refuse_inherited(const void *h) noexcept {
    DAPL_TRC(trace::kWarn, "handle",
             "handle %p belongs to the parent of this forked process: refused (DAT objects "
             "are not inherited across fork)",
             h);
}

DAT_IA_HANDLE Ia::consumer_handle() noexcept {
    DAT_IA_HANDLE h = consumer_.load(std::memory_order_relaxed);
    if (h != nullptr) return h;
    h = consumer_ia_handle(this);
    // Only cache a real translation: during dat_ia_open the host has not mapped us yet.
    if (h != static_cast<DAT_IA_HANDLE>(this)) consumer_.store(h, std::memory_order_relaxed);
    return h;
}

namespace {
// Sets the EP's state and posts a connection event carrying `pdata` (clamped to
// kMaxPrivateData, copied into the EP so that it outlives the caller's buffer).
void post_connection_event(Ep *ep, DAT_EP_STATE state, DAT_EVENT_NUMBER number, DAT_COUNT pdata_len,
                           const void *pdata) noexcept {
    ep->state = state;
    if (pdata_len < 0) pdata_len = 0;
    if (static_cast<std::size_t>(pdata_len) > kMaxPrivateData) pdata_len = kMaxPrivateData;
    if (pdata_len > 0) std::memcpy(ep->conn_pdata, pdata, static_cast<std::size_t>(pdata_len));
    DAT_EVENT ev{};
    ev.event_number = number;
    ev.event_data.connect_event_data.ep_handle = ep;
    ev.event_data.connect_event_data.private_data_size = pdata_len;
    ev.event_data.connect_event_data.private_data = pdata_len > 0 ? ep->conn_pdata : nullptr;
    if (ep->connect_evd != nullptr) ep->connect_evd->post(ev);
}
}  // namespace

void ep_established(Ep *ep, DAT_COUNT pdata_len, const void *pdata) noexcept {
    DAPL_TRC(trace::kInfo, "ep", "EP %p established", static_cast<void *>(ep));
    post_connection_event(ep, DAT_EP_STATE_CONNECTED, DAT_CONNECTION_EVENT_ESTABLISHED, pdata_len,
                          pdata);
}

void ep_connection_ended(Ep *ep, DAT_EVENT_NUMBER number, DAT_COUNT pdata_len,
                         const void *pdata) noexcept {
    DAPL_TRC(trace::kInfo, "ep", "EP %p connection ended, event 0x%x", static_cast<void *>(ep),
             number);
    post_connection_event(ep, DAT_EP_STATE_DISCONNECTED, number, pdata_len, pdata);
    // An endpoint of a shared receive queue takes no more of its receives: said on the
    // async EVD, as a verbs QP's "last WQE reached" is (and dtestsrq waits for it).
    if (ep->srq != nullptr)
        post_async(ep->ia, DAT_ASYNC_ERROR_EP_BROKEN, ep, DAT_EP_TRANSFER_TO_ERROR);
}

[[gnu::hot]] DAT_EVENT dto_event(Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS status,
                                 DAT_COUNT length, DAT_DTOS op) noexcept {
    DAT_EVENT ev{};
    ev.event_number = DAT_DTO_COMPLETION_EVENT;
    auto &d = ev.event_data.dto_completion_event_data;
    d.ep_handle = ep;
    d.user_cookie = cookie;
    d.status = status;
    d.transfered_length = static_cast<DAT_SEG_LENGTH>(length);
    d.operation = op;
    return ev;
}

[[gnu::hot]] void post_dto_event(Evd *evd, Ep *ep, const DAT_EVENT &ev, bool solicited) noexcept {
    if (evd != nullptr && !evd->post(ev, solicited))
        post_async(ep->ia, DAT_ASYNC_ERROR_EVD_OVERFLOW, evd);
}

[[gnu::hot]] void post_dto(Evd *evd, Ep *ep, DAT_DTO_COOKIE cookie,
                           DAT_DTO_COMPLETION_STATUS status, DAT_COUNT length, DAT_DTOS op,
                           bool solicited) noexcept {
    if (evd == nullptr) return;
    post_dto_event(evd, ep, dto_event(ep, cookie, status, length, op),
                   solicited || status != DAT_DTO_SUCCESS);
}

void Ia::adopt(Header *child) noexcept {
    objects.fetch_add(1);
    std::lock_guard lk(children_mu);
    try {
        children.insert(child);
    } catch (...) {
        // Out of memory: the object works, but an abrupt close will not free it.
        DAPL_TRC(trace::kError, "ia", "no memory to track object %p", static_cast<void *>(child));
    }
}

void Ia::release(Header *child) noexcept {
    objects.fetch_sub(1);
    std::lock_guard lk(children_mu);
    children.erase(child);
}

Cr *cr_new(Sp *sp) noexcept {
    auto *cr = new (std::nothrow) Cr(sp->provider, sp->ia);
    if (cr == nullptr) return nullptr;
    cr->sp = sp;
    cr->qual = sp->qual;
    cr->local_ep = sp->ep;
    // DAT_PSP_PROVIDER_FLAG: the EP is made on the consumer's first look at the request
    // (provider_ep_for), on its thread: a transport calls cr_new under its own locks,
    // which making an EP may need.
    if (sp->type == DAT_HANDLE_TYPE_PSP && static_cast<Psp *>(sp)->flags == DAT_PSP_PROVIDER_FLAG) {
        cr->wants_provider_ep = true;
        if (sp->evd->flags & DAT_EVD_CONNECTION_FLAG) cr->provider_conn_evd = sp->evd;
    }
    return cr;
}

void cr_discard(Cr *cr) noexcept {
    if (cr->provider_ep != nullptr) entry::ep_free(cr->provider_ep);
    delete cr;
}

bool post_cr_arrival(Cr *cr) noexcept {
    DAT_EVENT ev{};
    ev.event_number = DAT_CONNECTION_REQUEST_EVENT;
    auto &d = ev.event_data.cr_arrival_event_data;
    d.sp_handle.psp_handle = static_cast<DAT_PSP_HANDLE>(cr->sp);
    d.local_ia_address_ptr = const_cast<sockaddr *>(cr->ia->transport->address());
    d.conn_qual = cr->qual;
    d.cr_handle = cr;
    Ia *ia = cr->ia;
    Evd *evd = cr->sp->evd;
    {
        // Tracked before the consumer can see it (and accept it on another thread).
        std::lock_guard lk(ia->crs_mu);
        try {
            ia->pending_crs.insert(cr);
        } catch (...) {
            cr_discard(cr);
            return false;  // the transport refuses the request
        }
    }
    if (evd->post(ev)) return true;
    {
        std::lock_guard lk(ia->crs_mu);
        ia->pending_crs.erase(cr);
    }
    // An abrupt dat_ia_close that found it listed meanwhile and claimed it answers it
    // (cr_destroy): to the transport it stays offered.
    if (!claim(cr)) return true;
    post_async(ia, DAT_ASYNC_ERROR_EVD_OVERFLOW, evd);
    cr_discard(cr);
    return false;
}

namespace {
void post_async_event(Ia *ia, DAT_EVENT_NUMBER number, DAT_HANDLE handle,
                      DAT_COUNT reason) noexcept {
    if (ia == nullptr || ia->async_evd == nullptr) return;
    DAT_EVENT ev{};
    ev.event_number = number;
    ev.event_data.asynch_error_event_data.dat_handle = handle;
    ev.event_data.asynch_error_event_data.reason = reason;
    if (number == DAT_ASYNC_ERROR_IA_CATASTROPHIC)
        ev.event_data.asynch_error_event_data.dat_handle = ia->consumer_handle();
    ia->async_evd->post(ev);
}
}  // namespace

void post_async(Ia *ia, DAT_EVENT_NUMBER number, DAT_HANDLE handle) noexcept {
    DAPL_TRC(trace::kError, "async", "async error 0x%x on %p", number, handle);
    post_async_event(ia, number, handle, 0);  // *_TRANSFER_TO_ERROR / catastrophic: unusable
}

void post_async(Ia *ia, DAT_EVENT_NUMBER number, DAT_HANDLE handle, DAT_COUNT reason) noexcept {
    // An expected report (an SRQ's low watermark, an SRQ endpoint's end), not a failure.
    DAPL_TRC(trace::kInfo, "async", "async event 0x%x on %p (reason %d)", number, handle, reason);
    post_async_event(ia, number, handle, reason);
}

}  // namespace opendat::util

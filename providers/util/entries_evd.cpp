// EVD entry points: validation and parameter handling around util::Evd. A DTO EVD may
// have a transport backend (util::EvdBackend); util::Evd dispatches to it.
#include <new>

#include "trace/trace.hpp"
#include "util/entries.hpp"
#include "util/grace.hpp"
#include "util/objects.hpp"

namespace opendat::util::entry {

namespace {
constexpr DAT_EVD_FLAGS kKnownFlags = static_cast<DAT_EVD_FLAGS>(
    DAT_EVD_SOFTWARE_FLAG | DAT_EVD_CR_FLAG | DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG |
    DAT_EVD_RMR_BIND_FLAG | DAT_EVD_ASYNC_FLAG);
}

DAT_RETURN evd_create(DAT_IA_HANDLE h, DAT_COUNT qlen, DAT_CNO_HANDLE cno_h, DAT_EVD_FLAGS flags,
                      DAT_EVD_HANDLE *out) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    if (qlen <= 0 || qlen > ia->transport->limits().max_evd_qlen) return bad_arg(2);
    Cno *cno = nullptr;
    if (cno_h != DAT_HANDLE_NULL && (cno = as<Cno>(cno_h, ia)) == nullptr)
        return invalid_handle(DAT_HANDLE_TYPE_CNO);
    if ((flags & ~kKnownFlags) != 0 || flags == 0) return bad_arg(4);
    if (out == nullptr) return bad_arg(5);
    Evd *evd = nullptr;
    try {
        evd = new Evd(ia->provider, ia, qlen, flags);
    } catch (...) {
        return kNoMemory;
    }
    // Attached before the transport sees the EVD (a backend learns of its CNO), and
    // refused if a dat_cno_free of it has begun.
    if (DAT_RETURN rc = evd->set_cno(cno); rc != DAT_SUCCESS) {
        delete evd;
        return rc;
    }
    evd->set_progress(ia->transport.get());
    if (flags & DAT_EVD_DTO_FLAG) {
        // The transport may put a device queue behind it (evd->set_backend).
        if (DAT_RETURN rc = ia->transport->evd_create_dto(evd); rc != DAT_SUCCESS) {
            evd->set_cno(nullptr);  // gives back the CNO's use count
            delete evd;
            return rc;
        }
    }
    ia->adopt(evd);
    *out = evd;
    return DAT_SUCCESS;
}

DAT_RETURN evd_query(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *param) noexcept {
    Evd *evd = as<Evd>(h);
    if (evd == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EVD);
    if (param == nullptr) return bad_arg(3);
    if (mask & DAT_EVD_FIELD_IA_HANDLE) param->ia_handle = evd->ia->consumer_handle();
    if (mask & DAT_EVD_FIELD_EVD_QLEN) param->evd_qlen = evd->qlen();
    if (mask & DAT_EVD_FIELD_EVD_STATE) param->evd_state = evd->state();
    if (mask & DAT_EVD_FIELD_CNO) param->cno_handle = evd->cno();
    if (mask & DAT_EVD_FIELD_EVD_FLAGS) param->evd_flags = evd->flags;
    return DAT_SUCCESS;
}

DAT_RETURN evd_modify_cno(DAT_EVD_HANDLE h, DAT_CNO_HANDLE cno_h) noexcept {
    Evd *evd = as<Evd>(h);
    if (evd == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EVD);
    Cno *cno = nullptr;
    if (cno_h != DAT_HANDLE_NULL && (cno = as<Cno>(cno_h, evd->ia)) == nullptr)
        return invalid_handle(DAT_HANDLE_TYPE_CNO);
    return evd->set_cno(cno);
}

DAT_RETURN evd_enable(DAT_EVD_HANDLE h) noexcept {
    Evd *evd = as<Evd>(h);
    return evd == nullptr ? invalid_handle(DAT_HANDLE_TYPE_EVD) : evd->set_enabled(true);
}

DAT_RETURN evd_disable(DAT_EVD_HANDLE h) noexcept {
    Evd *evd = as<Evd>(h);
    return evd == nullptr ? invalid_handle(DAT_HANDLE_TYPE_EVD) : evd->set_enabled(false);
}

[[gnu::hot]] DAT_RETURN evd_wait(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                                 DAT_EVENT *event, DAT_COUNT *nmore) noexcept {
    Evd *evd = as<Evd>(h);
    if (evd == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EVD);
    if (event == nullptr) return bad_arg(4);
    // Counted in, so that dat_evd_free on another thread waits for us to leave.
    if (!evd->enter_wait()) return invalid_handle(DAT_HANDLE_TYPE_EVD);
    DAT_RETURN rc;
    {
        grace::Pause sleeping;  // held alive by the count (retire waits for it), not a Guard
        rc = evd->wait(timeout, threshold, event, nmore);
    }
    evd->leave_wait();
    return rc;
}

DAT_RETURN evd_resize(DAT_EVD_HANDLE h, DAT_COUNT qlen) noexcept {
    Evd *evd = as<Evd>(h);
    if (evd == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EVD);
    // The bound dat_evd_create applies: a huge length is refused, not allocated.
    if (qlen > evd->ia->transport->limits().max_evd_qlen) return bad_arg(2);
    // Not under a thread in dat_evd_wait (as the reference): a queue shrunk below the
    // threshold it waits for could never meet it.
    if (evd->has_waiter()) {
        DAPL_TRC(trace::kError, "evd", "dat_evd_resize: EVD %p has a waiter",
                 static_cast<void *>(evd));
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
    }
    return evd->resize(qlen);
}

DAT_RETURN evd_post_se(DAT_EVD_HANDLE h, const DAT_EVENT *event) noexcept {
    Evd *evd = as<Evd>(h);
    if (evd == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EVD);
    if (event == nullptr || event->event_number != DAT_SOFTWARE_EVENT) return bad_arg(2);
    if (!(evd->flags & DAT_EVD_SOFTWARE_FLAG)) return bad_arg(1);
    if (!evd->post(*event)) return err(DAT_QUEUE_FULL);
    return DAT_SUCCESS;
}

// Flattened: the handle check inlined, as in every other hot entry (the hot block holds
// everything a ping-pong runs: tcp_hot_path_footprint).
[[gnu::hot, gnu::flatten]] DAT_RETURN evd_dequeue(DAT_EVD_HANDLE h, DAT_EVENT *event) noexcept {
    grace::Guard call;  // a hot entry point: its own (util/grace.hpp)
    Evd *evd = as<Evd>(h);
    if (evd == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EVD);
    if (event == nullptr) return bad_arg(2);
    return evd->dequeue(event);
}

DAT_RETURN evd_free(DAT_EVD_HANDLE h) noexcept {
    Evd *evd = as<Evd>(h);
    if (evd == nullptr) return invalid_handle(DAT_HANDLE_TYPE_EVD);
    if (evd == evd->ia->async_evd && evd->ia->own_async_evd)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
    // From here no EP, service point or IA takes a use of it (util/use_count.hpp).
    if (DAT_RETURN rc = begin_free(evd->users, err(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE),
                                   invalid_handle(DAT_HANDLE_TYPE_EVD));
        rc != DAT_SUCCESS)
        return rc;
    if (evd == evd->ia->async_evd) evd->ia->async_evd = nullptr;
    // A thread blocked in dat_evd_wait is released (DAT_INTERRUPTED_CALL) before the EVD
    // goes: deleting its mutex and condition variable under it would hang or crash.
    if (!evd->retire()) return invalid_handle(DAT_HANDLE_TYPE_EVD);  // another free won
    FreeInFlight flight(evd->ia);
    evd->set_cno(nullptr);
    evd->ia->release(evd);
    grace::retire(evd);  // a dat_evd_dequeue that checked it before the claim still reads it
    return DAT_SUCCESS;
}

DAT_RETURN evd_set_unwaitable(DAT_EVD_HANDLE h) noexcept {
    Evd *evd = as<Evd>(h);
    return evd == nullptr ? invalid_handle(DAT_HANDLE_TYPE_EVD) : evd->set_waitable(false);
}

DAT_RETURN evd_clear_unwaitable(DAT_EVD_HANDLE h) noexcept {
    Evd *evd = as<Evd>(h);
    return evd == nullptr ? invalid_handle(DAT_HANDLE_TYPE_EVD) : evd->set_waitable(true);
}

}  // namespace opendat::util::entry

// IA, generic-handle, PZ and CNO entry points.
#include <chrono>
#include <cstdint>
#include <new>
#include <thread>
#include <unordered_set>
#include <vector>

#include "trace/trace.hpp"
#include "util/attrs.hpp"
#include "util/entries.hpp"
#include "util/grace.hpp"
#include "util/ia_handle.hpp"
#include "util/objects.hpp"
#include "util/provider_table.hpp"

namespace opendat::util::entry {

DAT_RETURN ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
                   DAT_IA_HANDLE *ia_out) noexcept {OPENDAT_GUARD({
    if (ia_out == nullptr) return bad_arg(4);
    if (async_evd == nullptr) return bad_arg(3);
    ProviderInstance *inst = find_instance(name);
    if (inst == nullptr) return err(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
    auto ia = std::make_unique<Ia>(&inst->table, inst);
    DAT_RETURN rc = inst->make_transport(inst, ia.get(), &ia->transport);
    if (rc != DAT_SUCCESS) return rc;
    build_specific_attrs(ia.get());
    if (*async_evd == DAT_HANDLE_NULL) {
        // The consumer asks us to create the async EVD.
        if (qlen <= 0) qlen = 8;
        // The same bound as dat_evd_create: a huge length is refused, not allocated.
        if (qlen > ia->transport->limits().max_evd_qlen) return bad_arg(2);
        ia->async_evd = new Evd(&inst->table, ia.get(), qlen, DAT_EVD_ASYNC_FLAG);
        ia->own_async_evd = true;
        *async_evd = ia->async_evd;
    } else if (*async_evd != DAT_EVD_ASYNC_EXISTS) {
        // The consumer's EVD (of another IA): one made for asynchronous events, and in use
        // until this IA closes, so that dat_evd_free cannot delete it under our posts.
        Evd *evd = as<Evd>(*async_evd);
        if (evd == nullptr || !(evd->flags & DAT_EVD_ASYNC_FLAG) || !evd->users.take())
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_ASYNC);
        evd->lent_as_async.fetch_add(1);
        // An abrupt close of the EVD's own IA claims that IA before it looks for lent EVDs:
        // either it sees the count just taken and refuses, or we see its claim and back out
        // (it frees the EVD).
        if (as<Ia>(evd->ia) == nullptr) {
            evd->lent_as_async.fetch_sub(1);
            evd->users.drop();
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_ASYNC);
        }
        ia->async_evd = evd;
    }
    DAPL_TRC(trace::kNormal, "ia", "opened %s as %p", inst->name.c_str(),
             static_cast<void *>(ia.get()));
    *ia_out = ia.release();
    return DAT_SUCCESS;
})}

DAT_RETURN ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK ia_mask,
                    DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK prov_mask,
                    DAT_PROVIDER_ATTR *prov_attr) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    if (ia_mask != 0 && ia_attr == nullptr) return bad_arg(4);
    if (prov_mask != 0 && prov_attr == nullptr) return bad_arg(6);
    if (async_evd != nullptr) *async_evd = ia->async_evd;
    // We fill every field; the masks only say which ones the consumer reads.
    if (ia_mask == 0) ia_attr = nullptr;
    if (prov_mask == 0) prov_attr = nullptr;
    if (ia_attr != nullptr) fill_ia_attr(ia, ia_attr);
    if (prov_attr != nullptr) fill_provider_attr(ia, prov_attr);
    // The device's own identity and limits over the generic values.
    if (ia_attr != nullptr || prov_attr != nullptr)
        ia->transport->ia_attributes(ia_attr, prov_attr);
    return DAT_SUCCESS;
}

namespace {

// One of the IA's EVDs that another IA was opened with as its async EVD, if any: one the
// consumer made, or the one dat_ia_open made for it (handed out too, but no child).
const Evd *lent_async_evd(Ia *ia) noexcept {
    if (ia->own_async_evd && ia->async_evd->lent_as_async.load() != 0) return ia->async_evd;
    std::lock_guard lk(ia->children_mu);
    for (const Header *h : ia->children)
        if (h->type == DAT_HANDLE_TYPE_EVD &&
            static_cast<const Evd *>(h)->lent_as_async.load() != 0)
            return static_cast<const Evd *>(h);
    return nullptr;
}

// Returns once no free or CR answer on another thread is under way for `ia`: none counted
// (FreeInFlight), and no child of type `type` claimed and still listed (a winner between
// its claim and its count). Such a thread touches the IA, its transport and what the child
// used (an EP's EVDs and PZ) until it ends; it is bounded by that one free.
void settle_frees(Ia *ia, DAT_HANDLE_TYPE type) noexcept {
    auto claimed_listed = [&] {
        std::lock_guard lk(ia->children_mu);
        for (const Header *h : ia->children)
            if (h->type == type && h->magic.load() != arena::live_tag(h)) return true;
        return false;
    };
    for (unsigned i = 0; claimed_listed() || ia->frees_in_flight.load() != 0; ++i) {
        if (i == 0)
            DAPL_TRC(trace::kInfo, "ia", "closing %s: waiting for a free on another thread",
                     ia->instance->name.c_str());
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

// How many children `ia` has besides `except` (the consumer's async EVD, left for last).
std::size_t children_besides(Ia *ia, const Evd *except) noexcept {
    std::lock_guard lk(ia->children_mu);
    return ia->children.size() -
           (except != nullptr && ia->children.count(const_cast<Evd *>(except)) ? 1 : 0);
}

// Hands every pending connection request back to the transport (refused, freed). One
// that a consumer's answer is taking (its claim won) is left to it, and waited for: the
// answer still uses the transport, and may free the EP the provider made for it.
void close_crs(Ia *ia) noexcept {
    std::vector<Cr *> crs, answered;
    try {
        std::lock_guard lk(ia->crs_mu);
        crs.assign(ia->pending_crs.begin(), ia->pending_crs.end());
        answered.reserve(crs.size());
    } catch (...) {
        DAPL_TRC(trace::kError, "ia", "no memory to free the IA's connection requests");
        return;
    }
    for (Cr *cr : crs) {
        if (!claim(cr)) {
            answered.push_back(cr);  // reserved: cannot throw
            continue;
        }
        {
            std::lock_guard lk(ia->crs_mu);
            ia->pending_crs.erase(cr);
        }
        ia->transport->cr_destroy(cr);
        cr_forget_looks(cr);
        delete cr;
    }
    // An answer forgets its request (forget_cr) after it counted itself in.
    auto listed = [&] {
        std::lock_guard lk(ia->crs_mu);
        for (Cr *cr : answered)
            if (ia->pending_crs.count(cr) != 0) return true;
        return false;
    };
    while (listed() || ia->frees_in_flight.load() != 0)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
}

// Frees every child object of `ia` through the entry points, users before what they use:
// service points first (no request arrives after them), then the pending requests
// (close_crs: an answer under way still uses its EP), EPs (their EVDs and PZ), SRQs, RMRs
// (their LMR), LMRs, EVDs (their CNO), CNOs, PZs. Returns the consumer-made async EVD,
// left for the caller.
Evd *close_children(Ia *ia) noexcept {
    static constexpr DAT_HANDLE_TYPE kOrder[] = {
        DAT_HANDLE_TYPE_PSP, DAT_HANDLE_TYPE_RSP, DAT_HANDLE_TYPE_CR,  DAT_HANDLE_TYPE_EP,
        DAT_HANDLE_TYPE_SRQ, DAT_HANDLE_TYPE_RMR, DAT_HANDLE_TYPE_LMR, DAT_HANDLE_TYPE_EVD,
        DAT_HANDLE_TYPE_CNO, DAT_HANDLE_TYPE_PZ};
    Evd *async = nullptr;
    for (DAT_HANDLE_TYPE type : kOrder) {
        if (type == DAT_HANDLE_TYPE_CR) {  // not children: the IA's pending requests
            close_crs(ia);
            continue;
        }
        std::vector<Header *> batch;
        {
            std::lock_guard lk(ia->children_mu);
            try {
                for (Header *h : ia->children)
                    if (h->type == type) batch.push_back(h);
            } catch (...) {
                DAPL_TRC(trace::kError, "ia", "no memory to free the IA's objects: they stay");
                return nullptr;
            }
        }
        for (Header *h : batch) {
            if (h == ia->async_evd && !ia->own_async_evd) {
                async = static_cast<Evd *>(h);
                continue;
            }
            DAT_RETURN rc = DAT_SUCCESS;
            switch (type) {
                case DAT_HANDLE_TYPE_EP:
                    rc = ep_free(h);
                    break;
                case DAT_HANDLE_TYPE_SRQ:  // after its EPs
                    rc = srq_free(h);
                    break;
                case DAT_HANDLE_TYPE_PSP:
                    rc = psp_free(h);
                    break;
                case DAT_HANDLE_TYPE_RSP:
                    rc = rsp_free(h);
                    break;
                case DAT_HANDLE_TYPE_RMR:
                    rc = rmr_free(h);
                    break;
                case DAT_HANDLE_TYPE_LMR:
                    rc = lmr_free(h);
                    break;
                case DAT_HANDLE_TYPE_EVD:
                    rc = evd_free(h);
                    break;
                case DAT_HANDLE_TYPE_CNO:
                    rc = cno_free(h);
                    break;
                case DAT_HANDLE_TYPE_PZ:
                    rc = pz_free(h);
                    break;
                default:
                    break;
            }
            if (rc != DAT_SUCCESS)
                DAPL_TRC(trace::kError, "ia", "closing %s: freeing object %p (type %d): 0x%x",
                         ia->instance->name.c_str(), static_cast<void *>(h), static_cast<int>(type),
                         rc);
        }
        // A child the consumer freed at the same time (its claim won) is still on its way
        // out: what it uses is freed in a later pass, the transport after the last.
        settle_frees(ia, type);
    }
    return async;
}

}  // namespace

DAT_RETURN ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    // A graceful close requires the consumer to have freed everything; abrupt tears down.
    // Looked at before the claim (one atomic load, safe on any arena address): this common
    // refusal leaves the IA live throughout, so no other thread's call sees it gone.
    if (flags == DAT_CLOSE_GRACEFUL_FLAG && ia->objects.load() != 0)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_IA_IN_USE);
    // Of two closes at once (a consumer's misuse), one closes; the other is told the
    // handle is gone, and reads nothing more of an IA the winner may delete. From here the
    // IA takes no new objects (as<Ia> refuses it); the one refusal left, rare, gives the IA
    // its life back.
    if (!claim(ia)) return invalid_handle(DAT_HANDLE_TYPE_IA);
    auto refuse = [ia](DAT_RETURN rc) {
        ia->magic.store(arena::live_tag(ia));
        return rc;
    };
    // Even an abrupt close cannot take an EVD that another open IA posts its asynchronous
    // errors to: that IA would post into freed memory, and the EVD would name this IA and
    // its transport after both are gone. That IA closes first.
    if (const Evd *lent = lent_async_evd(ia); lent != nullptr) {
        DAPL_TRC(trace::kError, "ia",
                 "dat_ia_close: EVD %p of IA %p is another open IA's async EVD: close that IA "
                 "first",
                 static_cast<const void *>(lent), static_cast<void *>(ia));
        return refuse(err(DAT_INVALID_STATE, DAT_INVALID_STATE_IA_IN_USE));
    }
    DAPL_TRC(trace::kNormal, "ia", "closing %s (%d objects left)", ia->instance->name.c_str(),
             ia->objects.load());
    // What the consumer left, and the requests nobody answered: freed through the entry
    // points while the transport (the device) still runs, except a consumer-made async
    // EVD, which the transport may post to until it stops.
    // The async EVD dat_ia_open made is no child: a CNO it names would refuse its free.
    if (ia->own_async_evd) ia->async_evd->set_cno(nullptr);
    Evd *consumer_async = close_children(ia);
    // Calls on other threads that checked the IA or one of its objects before they died
    // (a post, a dequeue, a create, a free) return before the transport goes; what the
    // frees retired is deleted meanwhile (util/grace.hpp). A create among them may have
    // added a child after the pass above: freed by another pass, and waited for again.
    // No call that starts now gets past the IA's check, so this ends in a few rounds;
    // every way out follows a synchronize.
    for (std::size_t before = SIZE_MAX;;) {
        grace::synchronize();
        const std::size_t left = children_besides(ia, consumer_async);
        // Read after the children: a free that took one out counted itself in first.
        if (left == 0 && ia->frees_in_flight.load() == 0) break;
        if (left > 0 && left >= before) {  // a pass freed nothing: each was traced
            DAPL_TRC(trace::kError, "ia", "closing %s: %zu objects could not be freed",
                     ia->instance->name.c_str(), left);
            break;
        }
        before = left;
        if (left > 0)
            close_children(ia);
        else  // a free of a late child on another thread: its end, then look again
            std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    // Stops the progress engine and releases every socket.
    ia->transport.reset();
    // Nothing posts to a consumer's async EVD any more: the use dat_ia_open took goes.
    if (!ia->own_async_evd && ia->async_evd != nullptr) {
        ia->async_evd->lent_as_async.fetch_sub(1);
        ia->async_evd->users.drop();
    }
    if (consumer_async != nullptr) evd_free(consumer_async);
    if (ia->own_async_evd) {
        // A thread may wait on it: released first (evd_free). Never the consumer's to free.
        // A dequeue that checked it may still look at its ring (util/grace.hpp).
        if (ia->async_evd->retire()) grace::retire(ia->async_evd);
    }
    delete ia;
    return DAT_SUCCESS;
}

DAT_RETURN set_consumer_context(DAT_HANDLE h, DAT_CONTEXT ctx) noexcept {
    Header *hdr = as_header(h);
    if (hdr == nullptr) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    hdr->context = ctx;
    return DAT_SUCCESS;
}

DAT_RETURN get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *ctx) noexcept {
    Header *hdr = as_header(h);
    if (hdr == nullptr) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (ctx == nullptr) return bad_arg(2);
    *ctx = hdr->context;
    return DAT_SUCCESS;
}

DAT_RETURN get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *type) noexcept {
    Header *hdr = as_header(h);
    if (hdr == nullptr) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (type == nullptr) return bad_arg(2);
    *type = hdr->type;
    return DAT_SUCCESS;
}

DAT_RETURN pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE *out) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    if (out == nullptr) return bad_arg(2);
    Pz *pz = new (std::nothrow) Pz(ia->provider, ia);
    if (pz == nullptr) return kNoMemory;
    if (DAT_RETURN rc = ia->transport->pz_create(pz); rc != DAT_SUCCESS) {
        delete pz;
        return rc;
    }
    ia->adopt(pz);
    *out = pz;
    return DAT_SUCCESS;
}

DAT_RETURN pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param) noexcept {
    Pz *pz = as<Pz>(h);
    if (pz == nullptr) return invalid_handle(DAT_HANDLE_TYPE_PZ);
    if (param == nullptr) return bad_arg(3);
    if (mask & DAT_PZ_FIELD_IA_HANDLE) param->ia_handle = pz->ia->consumer_handle();
    return DAT_SUCCESS;
}

DAT_RETURN pz_free(DAT_PZ_HANDLE h) noexcept {
    Pz *pz = as<Pz>(h);
    if (pz == nullptr) return invalid_handle(DAT_HANDLE_TYPE_PZ);
    // From here no create takes a use of it (util/use_count.hpp).
    if (DAT_RETURN rc = begin_free(pz->users, err(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE),
                                   invalid_handle(DAT_HANDLE_TYPE_PZ));
        rc != DAT_SUCCESS)
        return rc;
    if (!claim(pz)) return invalid_handle(DAT_HANDLE_TYPE_PZ);  // another free won
    FreeInFlight flight(pz->ia);
    pz->ia->transport->pz_destroy(pz);
    pz->ia->release(pz);
    // A create that checked it and has yet to take its use still reads the use count
    // (freeing: the take fails) until it returns.
    grace::retire(pz);
    return DAT_SUCCESS;
}

DAT_RETURN cno_create(DAT_IA_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent,
                      DAT_CNO_HANDLE *out) noexcept {
    Ia *ia = as<Ia>(h);
    if (ia == nullptr) return invalid_handle(DAT_HANDLE_TYPE_IA);
    if (out == nullptr) return bad_arg(3);
    Cno *cno = new (std::nothrow) Cno(ia->provider, ia, agent);
    if (cno == nullptr) return kNoMemory;
    ia->adopt(cno);
    *out = cno;
    return DAT_SUCCESS;
}

DAT_RETURN cno_modify_agent(DAT_CNO_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent) noexcept {
    Cno *cno = as<Cno>(h);
    if (cno == nullptr) return invalid_handle(DAT_HANDLE_TYPE_CNO);
    // Refused if a dat_cno_free won the race since the check.
    if (!cno->set_agent(agent)) return invalid_handle(DAT_HANDLE_TYPE_CNO);
    return DAT_SUCCESS;
}

DAT_RETURN cno_query(DAT_CNO_HANDLE h, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *param) noexcept {
    Cno *cno = as<Cno>(h);
    if (cno == nullptr) return invalid_handle(DAT_HANDLE_TYPE_CNO);
    if (param == nullptr) return bad_arg(3);
    // The CNO masks are irregular (PROXY = 0x3 overlaps IA|PROXY_TYPE); fill everything asked.
    if (mask & (DAT_CNO_FIELD_IA_HANDLE | DAT_CNO_FIELD_ALL))
        param->ia_handle = cno->ia->consumer_handle();
    DAT_OS_WAIT_PROXY_AGENT agent = cno->agent();
    param->proxy_type =
        agent.proxy_agent_func != nullptr ? DAT_PROXY_TYPE_AGENT : DAT_PROXY_TYPE_NONE;
    param->proxy.agent = agent;
    return DAT_SUCCESS;
}

DAT_RETURN cno_free(DAT_CNO_HANDLE h) noexcept {
    Cno *cno = as<Cno>(h);
    if (cno == nullptr) return invalid_handle(DAT_HANDLE_TYPE_CNO);
    // From here no EVD attaches it (util/use_count.hpp).
    if (DAT_RETURN rc = begin_free(cno->users, err(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE),
                                   invalid_handle(DAT_HANDLE_TYPE_CNO));
        rc != DAT_SUCCESS)
        return rc;
    // A thread in dat_cno_wait: DAT_INTERRUPTED_CALL, then gone.
    if (!cno->retire()) return invalid_handle(DAT_HANDLE_TYPE_CNO);  // another free won
    {
        FreeInFlight flight(cno->ia);
        cno->wait_triggers();  // an EVD that detached it may still be triggering it
        cno->ia->release(cno);
    }
    // Not counted: stopping a CNO's agent joins its thread, and the agent may be the one
    // closing the IA, which waits for the frees counted in. (A close on another thread
    // may thus return while this still runs: the window any call racing a close has, and
    // it touches nothing of the IA.) Paused while it joins: an agent closing an IA waits
    // for the calls in flight (grace::synchronize), this one among them.
    {
        grace::Pause joining;
        cno->stop_agent();
    }
    grace::retire(cno);  // a dat_cno_modify_agent that checked it may still use it
    return DAT_SUCCESS;
}

DAT_RETURN cno_wait(DAT_CNO_HANDLE h, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd) noexcept {
    Cno *cno = as<Cno>(h);
    if (cno == nullptr) return invalid_handle(DAT_HANDLE_TYPE_CNO);
    if (evd == nullptr) return bad_arg(3);
    if (!cno->enter_wait()) return invalid_handle(DAT_HANDLE_TYPE_CNO);
    DAT_RETURN rc;
    {
        grace::Pause sleeping;  // held alive by the count (retire waits for it), not a Guard
        rc = cno->ia->transport->cno_wait(cno, timeout, evd);
    }
    cno->leave_wait();
    return rc;
}

}  // namespace opendat::util::entry

// The narrow interface a transport (tcp, verbs) implements underneath util's objects.
//
// util owns the DAT semantics: every entry point checks its handles and arguments, keeps
// the bookkeeping (use counts, the IA's object count, EP states, events) and then calls
// the transport only for what the wire or the device adds. So a transport never
// re-validates and never replaces a DAT_PROVIDER slot.
//
// Every call has a default, so a transport implements only what it does:
//  - the wire: EPs, connections, posts, service points. Default: DAT_NOT_IMPLEMENTED
//    for what moves data or connections (util's entry point returns it unchanged), no
//    per-object state for create/destroy;
//  - device hooks: attributes, PZ/LMR/RMR, DTO EVDs, CNO wait, EP reset. The defaults
//    are util's software behaviour — memory keys in the IA's MemTable, completions in the
//    EVD's ring — which is exactly the tcp provider's; a device transport (verbs)
//    overrides them.
// Only limits() and address() must be given. See docs/provider-guide.md §5.
//
// Ownership: util allocates and frees every object it hands out (EP, PSP, RSP, CR, ...);
// a transport keeps its own state in the object's `impl` and never deletes util's
// object. A free hook (ep_destroy, sp_close, cr_accept/cr_reject/cr_destroy, ...) tears
// down the transport's part; util frees its object when the hook returns — for an EP,
// when the transport hands it back through ep_release (a thread of the transport may
// still hold it).
#pragma once

#include <sys/socket.h>

#include <cstdint>

#include <dat2/udat.h>

#include "util/deferred_free.hpp"
#include "util/grace.hpp"
#include "util/status.hpp"

namespace opendat::util {

struct Header;
struct Ep;
struct Sp;
struct Cr;
struct Pz;
struct Lmr;
struct Rmr;
struct Evd;
struct Cno;
struct Srq;

// Limits a transport advertises; the attribute builders copy them into DAT_IA_ATTR,
// DAT_PROVIDER_ATTR and the default DAT_EP_ATTR.
struct Limits {
    DAT_COUNT max_eps = 4096;
    DAT_COUNT max_dto_per_ep = 4096;
    DAT_COUNT max_rdma_read_per_ep = 64;
    DAT_COUNT max_evds = 4096;
    DAT_COUNT max_evd_qlen = 1 << 20;
    DAT_COUNT max_iov = 16;
    DAT_COUNT max_lmrs = 1 << 20;
    DAT_SEG_LENGTH max_message_size = 0x7fffffff;
    DAT_SEG_LENGTH max_rdma_size = 0x7fffffff;
    DAT_COUNT transport_mtu = 65536;
    bool delayed_ack_supported = false;
    // Who may use a bound window's rmr_context (DAT_IA_ATTR.rmr_scope_supported,
    // DAT_RMR_PARAM.rmr_scope): the EP it was bound through only (util's access checks,
    // which tcp uses, enforce that), or any connection of its PZ (an IB type-1 memory
    // window, which the device checks against the PD only).
    DAT_RMR_SCOPE rmr_scope = DAT_RMR_SCOPE_EP;
    // Shared receive queues (util/srq.hpp): 0 = none, dat_srq_create answers
    // DAT_MODEL_NOT_SUPPORTED.
    DAT_COUNT max_srqs = 0;
    DAT_COUNT max_ep_per_srq = 0;
    DAT_COUNT max_recv_per_srq = 0;
    // DAT_PROVIDER_ATTR.completion_flags_supported: the DAT_COMPLETION_* flags the
    // transport honours on posted work (beyond the default, which every one does).
    DAT_COMPLETION_FLAGS completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    const char *transport_name = "";
    // IB extensions (<dat2/dat_ib_extensions.h>) the transport implements. Either one
    // makes dat_ia_query report DAT_EXTENSION_IB / DAT_IB_EXTENSION_VERSION and list the
    // DAT_IB_* attributes, so that libdat2 routes dat_extension_op to util (extension.cpp).
    bool immediate_data = false;  // dat_ib_post_rdma_write_immed
    bool atomics = false;         // dat_ib_post_fetch_and_add / _cmp_and_swap
};

// The remote atomic operations of the IB extensions (on an 8-byte aligned target).
enum class AtomicOp { FetchAdd, CmpSwap };

// What dat_ep_modify may change that a transport built an EP from: its PZ, its EVDs and
// the queue sizes in its attributes.
struct EpConfig {
    Pz *pz = nullptr;
    Evd *recv_evd = nullptr;
    Evd *request_evd = nullptr;
    Evd *connect_evd = nullptr;
    DAT_EP_ATTR attr{};
};

class Transport {
  public:
    virtual ~Transport() = default;
    virtual const Limits &limits() const noexcept = 0;
    // The IA's own address (DAT_IA_ATTR.ia_address_ptr); owned by the transport.
    virtual const sockaddr *address() const noexcept = 0;

    // --- The wire ------------------------------------------------------------------
    // dat_ep_create, after util built the EP (attributes, PZ, EVDs). Default: no
    // per-EP state.
    virtual DAT_RETURN ep_create(Ep * /*ep*/) noexcept { return DAT_SUCCESS; }
    // dat_ep_free (or an abrupt dat_ia_close): abrupt teardown of the transport's part, no
    // events. The handle is already dead. Default: nothing.
    virtual void ep_destroy(Ep * /*ep*/) noexcept {}
    // After ep_destroy: util's EP object, given back to be freed once no thread of the
    // transport can look at it any more. Call `free_ep()` then (or park it in a
    // DeferredFree that is drained at that point). Default: freed once no call that may
    // have checked it is in flight (util/grace.hpp).
    virtual void ep_release(Deferred free_ep) noexcept { grace::retire(free_ep); }
    virtual DAT_RETURN ep_connect(Ep * /*ep*/, const sockaddr * /*remote*/, DAT_CONN_QUAL /*qual*/,
                                  DAT_TIMEOUT /*timeout_us*/, DAT_COUNT /*pdata_len*/,
                                  const void * /*pdata*/) noexcept {
        return kNotImplemented;
    }
    virtual DAT_RETURN ep_disconnect(Ep * /*ep*/, DAT_CLOSE_FLAGS /*flags*/) noexcept {
        return kNotImplemented;
    }
    virtual DAT_RETURN ep_post_send(Ep * /*ep*/, DAT_COUNT /*n*/, const DAT_LMR_TRIPLET * /*iov*/,
                                    DAT_DTO_COOKIE /*cookie*/,
                                    DAT_COMPLETION_FLAGS /*flags*/) noexcept {
        return kNotImplemented;
    }
    virtual DAT_RETURN ep_post_recv(Ep * /*ep*/, DAT_COUNT /*n*/, const DAT_LMR_TRIPLET * /*iov*/,
                                    DAT_DTO_COOKIE /*cookie*/,
                                    DAT_COMPLETION_FLAGS /*flags*/) noexcept {
        return kNotImplemented;
    }
    virtual DAT_RETURN ep_post_rdma_write(Ep * /*ep*/, DAT_COUNT /*n*/,
                                          const DAT_LMR_TRIPLET * /*iov*/,
                                          DAT_DTO_COOKIE /*cookie*/,
                                          const DAT_RMR_TRIPLET * /*remote*/,
                                          DAT_COMPLETION_FLAGS /*flags*/) noexcept {
        return kNotImplemented;
    }
    virtual DAT_RETURN ep_post_rdma_read(Ep * /*ep*/, DAT_COUNT /*n*/,
                                         const DAT_LMR_TRIPLET * /*iov*/, DAT_DTO_COOKIE /*cookie*/,
                                         const DAT_RMR_TRIPLET * /*remote*/,
                                         DAT_COMPLETION_FLAGS /*flags*/) noexcept {
        return kNotImplemented;
    }
    // dat_ib_post_rdma_write_immed (util checked the EP, the IOV arguments and `remote`):
    // an RDMA write whose target then completes its next posted receive with a
    // DAT_IB_DTO_EVENT carrying `immed` (util::post_ext_dto, extension.hpp). The request
    // completes as DAT_IB_DTO_EVENT / DAT_IB_RDMA_WRITE_IMMED. Default: DAT_NOT_IMPLEMENTED.
    virtual DAT_RETURN ep_post_write_immed(Ep * /*ep*/, DAT_COUNT /*n*/,
                                           const DAT_LMR_TRIPLET * /*iov*/,
                                           DAT_DTO_COOKIE /*cookie*/,
                                           const DAT_RMR_TRIPLET * /*remote*/,
                                           std::uint32_t /*immed*/,
                                           DAT_COMPLETION_FLAGS /*flags*/) noexcept {
        return kNotImplemented;
    }
    // dat_ib_post_fetch_and_add (`add_or_compare` = the addend, `swap` unused) and
    // dat_ib_post_cmp_and_swap. util checked the EP, that `local` covers 8 bytes and that
    // remote->target_address is 8-byte aligned. The original remote value lands in the
    // local triplet's first 8 bytes; the request completes as DAT_IB_DTO_EVENT with ext
    // type DAT_IB_FETCH_AND_ADD / DAT_IB_CMP_AND_SWAP. Default: DAT_NOT_IMPLEMENTED.
    virtual DAT_RETURN ep_post_atomic(Ep * /*ep*/, AtomicOp /*op*/,
                                      std::uint64_t /*add_or_compare*/, std::uint64_t /*swap*/,
                                      const DAT_LMR_TRIPLET * /*local*/, DAT_DTO_COOKIE /*cookie*/,
                                      const DAT_RMR_TRIPLET * /*remote*/,
                                      DAT_COMPLETION_FLAGS /*flags*/) noexcept {
        return kNotImplemented;
    }
    // dat_ep_modify of the PZ, an EVD or a queue size (`next`; the EP still has the
    // current ones), with ep->mu held, the EP UNCONNECTED or RESERVED. DAT_SUCCESS: the
    // transport uses `next` from now on and util stores it; an error: nothing changes and
    // util returns it. Default: DAT_MODEL_NOT_SUPPORTED (a device binds them into its
    // queue pair at ep_create).
    virtual DAT_RETURN ep_modify(Ep * /*ep*/, const EpConfig & /*next*/) noexcept {
        return err(DAT_MODEL_NOT_SUPPORTED);
    }
    // Whether send/recv work is outstanding (dat_ep_get_status). Default: none.
    virtual void ep_idle(Ep * /*ep*/, bool *recv_idle, bool *request_idle) noexcept {
        *recv_idle = true;
        *request_idle = true;
    }

    // dat_psp_create(_any) / dat_rsp_create: listen on sp->qual (0: any qualifier; store
    // the one chosen in sp->qual). Default: DAT_NOT_IMPLEMENTED.
    virtual DAT_RETURN sp_listen(Sp * /*sp*/) noexcept { return kNotImplemented; }
    // dat_psp_free / dat_rsp_free: stop listening. When it returns, no request may reach
    // sp any more (util frees it). Default: nothing.
    virtual void sp_close(Sp * /*sp*/) noexcept {}
    // A request the transport offered (cr_new, post_cr_arrival) is answered; util frees
    // the CR when the hook returns (`pdata` may point into it). cr_destroy: freed
    // unanswered at an abrupt dat_ia_close (refuse the peer).
    virtual DAT_RETURN cr_accept(Cr * /*cr*/, Ep * /*ep*/, DAT_COUNT /*pdata_len*/,
                                 const void * /*pdata*/) noexcept {
        return kNotImplemented;
    }
    virtual DAT_RETURN cr_reject(Cr * /*cr*/, DAT_COUNT /*pdata_len*/,
                                 const void * /*pdata*/) noexcept {
        return kNotImplemented;
    }
    virtual void cr_destroy(Cr * /*cr*/) noexcept {}
    // A consumer polls an empty DTO EVD: make progress on its thread, without blocking,
    // so that polling costs no thread hop. May do nothing.
    virtual void progress_inline() noexcept {}
    // dat_evd_wait on a DTO EVD: microseconds to call progress_inline() and look again
    // before sleeping (0: sleep at once). end_inline_progress() follows a spin that found
    // nothing, so whoever progresses in the background takes over before the consumer sleeps.
    virtual std::uint32_t wait_spin_us() const noexcept { return 0; }
    virtual void end_inline_progress() noexcept {}
    // dat_evd_wait on a DTO EVD that still has to block: the consumer's thread may sleep in
    // the transport's own progress rather than on the EVD, so that the message it waits
    // for is received by the thread that waits for it (one wake-up, as a blocking recv()
    // has) instead of by a progress thread that then wakes it. wait_inline_begin(): true
    // if this thread now owns that progress (one thread at a time; false: wait the usual
    // way). wait_inline(us, seen): sleeps in it for at most `us` microseconds (UINT32_MAX:
    // no limit), handles what arrives, and returns (early after any of it); false means
    // the progress is wanted elsewhere: stop and wait the usual way. wait_inline_end()
    // gives it back. wait_inline_wake(), from any thread: the owner's current wait_inline
    // returns (an event was posted for it elsewhere), and so does its next one if the wake
    // came after wait_inline_wakes() returned `seen`: the owner reads that count before it
    // looks at its condition, so a wake between that look and its sleep is not lost.
    // Defaults: never.
    virtual bool wait_inline_begin() noexcept { return false; }
    virtual std::uint64_t wait_inline_wakes() const noexcept { return 0; }
    virtual bool wait_inline(std::uint32_t /*timeout_us*/, std::uint64_t /*seen*/) noexcept {
        return false;
    }
    virtual void wait_inline_end() noexcept {}
    virtual void wait_inline_wake() noexcept {}

    // --- Device hooks --------------------------------------------------------------
    // Each is called after util's checks, before util's object is handed out (create)
    // or after it stopped being usable (free); on a failed create util frees its object
    // and returns the hook's code unchanged. Per-object device state goes in the
    // object's `impl`.

    // dat_ia_query, after util filled every field from limits(): overwrite what the
    // device knows better (identity, limits with no Limits field). Each pointer is
    // nullptr when the consumer did not ask for that structure.
    virtual void ia_attributes(DAT_IA_ATTR * /*ia_attr*/,
                               DAT_PROVIDER_ATTR * /*prov_attr*/) noexcept {}

    // dat_pz_create / dat_pz_free (the latter once nothing uses the PZ).
    virtual DAT_RETURN pz_create(Pz * /*pz*/) noexcept { return DAT_SUCCESS; }
    virtual void pz_destroy(Pz * /*pz*/) noexcept {}

    // dat_lmr_create: `lmr` has mem_type, region, pz, va_type and range (address,
    // length, privileges; the base LMR's memory for DAT_MEM_TYPE_LMR). Sets lmr_context
    // and rmr_context. Default: random keys in the IA's MemTable (DAT_INSUFFICIENT_
    // RESOURCES | DAT_RESOURCE_MEMORY when none is left), checked by MemTable::check.
    virtual DAT_RETURN lmr_register(Lmr *lmr) noexcept;
    // dat_lmr_free: no access, local or remote, through the LMR after this. Default:
    // removes the keys.
    virtual void lmr_deregister(Lmr *lmr) noexcept;

    // dat_rmr_create: `rmr` has its pz. Default: nothing to do (a software window gets
    // its key when bound). A device without memory windows answers
    // DAT_MODEL_NOT_SUPPORTED (and reports max_rmrs 0 from ia_attributes).
    virtual DAT_RETURN rmr_create(Rmr * /*rmr*/) noexcept { return DAT_SUCCESS; }
    // dat_rmr_bind. util checked rmr and ep and, unless `lmr` is nullptr (an unbind),
    // that `triplet` is given and lmr is in the RMR's PZ. The hook binds, records
    // rmr_context (0 when unbound), triplet, priv and va_type, and delivers the bind
    // completion on ep's request EVD unless suppressed; util then returns rmr_context.
    // Default: a software key for the range (DAT_LENGTH_ERROR if outside the LMR), the
    // previous key revoked, the completion posted at once.
    virtual DAT_RETURN rmr_bind(Rmr *rmr, Lmr *lmr, const DAT_LMR_TRIPLET *triplet,
                                DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, Ep *ep,
                                DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept;
    // dat_rmr_free. Default: revokes the key.
    virtual void rmr_free(Rmr *rmr) noexcept;

    // dat_evd_create with DAT_EVD_DTO_FLAG: `evd` exists (flags, ring of qlen(), CNO).
    // A transport whose completions do not pass through post_dto gives it an EvdBackend
    // (evd->set_backend) that takes over dequeue, wait and resize. Default: none, the
    // ring is the queue.
    virtual DAT_RETURN evd_create_dto(Evd * /*evd*/) noexcept { return DAT_SUCCESS; }
    // dat_cno_wait (util checked cno and out). Default: util's CNO, triggered by events
    // posted to util's rings.
    virtual DAT_RETURN cno_wait(Cno *cno, DAT_TIMEOUT timeout_us, DAT_EVD_HANDLE *out) noexcept;
    // dat_ep_reset, after util moved the EP to UNCONNECTED; called without ep->mu.
    virtual void ep_reset(Ep * /*ep*/) noexcept {}

    // --- Shared receive queues (only when limits().max_srqs > 0) ----------------------
    // dat_srq_create, after util checked the attributes and sized srq->ring; srq_destroy
    // once no EP uses it (dat_srq_free). Default: util's software ring is the queue.
    virtual DAT_RETURN srq_create(Srq * /*srq*/) noexcept { return DAT_SUCCESS; }
    virtual void srq_destroy(Srq * /*srq*/) noexcept {}
    // dat_srq_post_recv (util checked the handle, n <= max_recv_iov and iov). Default:
    // srq_post_locked under srq->mu. A transport whose endpoints wait for receives wakes
    // them here.
    virtual DAT_RETURN srq_post_recv(Srq *srq, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                     DAT_DTO_COOKIE cookie) noexcept;
    // dat_srq_resize, after util's checks and before it resizes its ring: a transport with
    // a queue of its own makes it hold `max_recv_dtos`. Default: nothing to do.
    virtual DAT_RETURN srq_resize(Srq * /*srq*/, DAT_COUNT /*max_recv_dtos*/) noexcept {
        return DAT_SUCCESS;
    }
    // dat_ep_recv_query: receives the EP holds now (its own posted ones, or the ones it
    // took from its SRQ and has not completed) and the bytes they span. Default:
    // DAT_MODEL_NOT_SUPPORTED.
    virtual DAT_RETURN ep_recv_info(Ep * /*ep*/, DAT_COUNT * /*nbufs*/,
                                    DAT_COUNT * /*span*/) noexcept {
        return err(DAT_MODEL_NOT_SUPPORTED);
    }
};

}  // namespace opendat::util

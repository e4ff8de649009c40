// The verbs implementation of util::Transport: one per IA.
//
// It owns the IA's rdma_cm event channel and one thread that handles, in order, the
// connection-management events of every id of the IA and the device's asynchronous
// events. The data path (post_*) runs in the caller's thread straight into the queue
// pair; completions are polled by the CQ-backed EVDs (cq_evd.*), not by this thread.
// util's entry points do every DAT check; the device hooks below only add the device's
// part (ia_attrs.cpp, mem.cpp, cq_evd.cpp, cno_wait.cpp, cm.cpp).
#pragma once

#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "util/objects.hpp"
#include "verbs/cq_agent.hpp"
#include "verbs/device.hpp"
#include "verbs/ep_impl.hpp"

namespace opendat::verbs {

// Private data travels behind a 4-byte header of ours carrying its exact length (IB CM
// pads every message's private data to a fixed size). The consumer's limits are the
// RDMA_PS_TCP sizes (REQ 56, REP 196, REJ 148) less the header; DAT_PROVIDER_ATTR
// reports the smallest, the connect limit.
constexpr int kPdataHdr = 4;
constexpr int kPdataConnect = 56 - kPdataHdr;
constexpr int kPdataAccept = 196 - kPdataHdr;
constexpr int kPdataReject = 148 - kPdataHdr;

class VerbsTransport final : public util::Transport {
  public:
    explicit VerbsTransport(util::Ia *ia) : ia_(ia) {}
    ~VerbsTransport() override;
    // Everything that can fail: the device, the event channel, the CM thread.
    DAT_RETURN open(const util::ProviderInstance *inst) noexcept;

    const util::Limits &limits() const noexcept override { return limits_; }
    const sockaddr *address() const noexcept override {
        return reinterpret_cast<const sockaddr *>(&dev_.addr);
    }

    DAT_RETURN ep_create(util::Ep *ep) noexcept override;
    void ep_destroy(util::Ep *ep) noexcept override;
    // A CQ may still name a freed EP's slots, and the CM thread may hold it: util's EP
    // waits with its EpImpl until the transport goes.
    void ep_release(util::Deferred free_ep) noexcept override { graveyard_.park(free_ep); }
    DAT_RETURN ep_connect(util::Ep *ep, const sockaddr *remote, DAT_CONN_QUAL qual,
                          DAT_TIMEOUT timeout_us, DAT_COUNT pdata_len,
                          const void *pdata) noexcept override;
    DAT_RETURN ep_disconnect(util::Ep *ep, DAT_CLOSE_FLAGS flags) noexcept override;
    DAT_RETURN ep_post_send(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                            DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept override;
    DAT_RETURN ep_post_recv(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                            DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept override;
    DAT_RETURN ep_post_rdma_write(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                  DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                  DAT_COMPLETION_FLAGS flags) noexcept override;
    DAT_RETURN ep_post_rdma_read(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                 DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                 DAT_COMPLETION_FLAGS flags) noexcept override;
    // IB extensions (post.cpp): IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_ATOMIC_* (where the
    // device has atomics).
    DAT_RETURN ep_post_write_immed(util::Ep *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                                   DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                   std::uint32_t immed,
                                   DAT_COMPLETION_FLAGS flags) noexcept override;
    DAT_RETURN ep_post_atomic(util::Ep *ep, util::AtomicOp op, std::uint64_t add_or_compare,
                              std::uint64_t swap, const DAT_LMR_TRIPLET *local,
                              DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                              DAT_COMPLETION_FLAGS flags) noexcept override;
    void ep_idle(util::Ep *ep, bool *recv_idle, bool *request_idle) noexcept override;

    DAT_RETURN sp_listen(util::Sp *sp) noexcept override;
    void sp_close(util::Sp *sp) noexcept override;
    DAT_RETURN cr_accept(util::Cr *cr, util::Ep *ep, DAT_COUNT pdata_len,
                         const void *pdata) noexcept override;
    DAT_RETURN cr_reject(util::Cr *cr, DAT_COUNT pdata_len, const void *pdata) noexcept override;
    void cr_destroy(util::Cr *cr) noexcept override;

    // Device hooks (util/transport.hpp).
    void ia_attributes(DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR *prov_attr) noexcept override;
    DAT_RETURN pz_create(util::Pz *pz) noexcept override;
    void pz_destroy(util::Pz *pz) noexcept override;
    DAT_RETURN lmr_register(util::Lmr *lmr) noexcept override;
    void lmr_deregister(util::Lmr *lmr) noexcept override;
    DAT_RETURN rmr_create(util::Rmr *rmr) noexcept override;
    DAT_RETURN rmr_bind(util::Rmr *rmr, util::Lmr *lmr, const DAT_LMR_TRIPLET *triplet,
                        DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, util::Ep *ep,
                        DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags) noexcept override;
    void rmr_free(util::Rmr *rmr) noexcept override;
    DAT_RETURN evd_create_dto(util::Evd *evd) noexcept override;
    DAT_RETURN cno_wait(util::Cno *cno, DAT_TIMEOUT timeout_us,
                        DAT_EVD_HANDLE *out) noexcept override;
    // A disconnected EP's queue pair back to INIT, so receives posted from now on wait
    // for the next connection instead of being flushed.
    void ep_reset(util::Ep *ep) noexcept override;
    // Shared receive queues (srq.cpp).
    DAT_RETURN srq_create(util::Srq *srq) noexcept override;
    void srq_destroy(util::Srq *srq) noexcept override;
    DAT_RETURN srq_post_recv(util::Srq *srq, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                             DAT_DTO_COOKIE cookie) noexcept override;
    DAT_RETURN srq_resize(util::Srq *srq, DAT_COUNT max_recv_dtos) noexcept override;
    DAT_RETURN ep_recv_info(util::Ep *ep, DAT_COUNT *nbufs, DAT_COUNT *span) noexcept override;
    // dat_ep_modify of the PZ, the DTO EVDs or the queue sizes: a new queue pair.
    DAT_RETURN ep_modify(util::Ep *ep, const util::EpConfig &next) noexcept override;

    const Device &device() const noexcept { return dev_; }
    bool mw_supported() const noexcept {
        return (dev_.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) != 0;
    }

    // QP state changes shared by the connection paths (cm.cpp).
    // RTR/RTS from rdma_init_qp_attr; `rd_atom` (if non-negative) overrides the read
    // depth (RTR: responder resources, RTS: initiator depth) with what was negotiated.
    int qp_to(EpImpl *impl, rdma_cm_id *id, ibv_qp_state state, int rd_atom = -1) noexcept;
    // Flushes every posted work request (their completions carry DAT_DTO_ERR_FLUSHED).
    static void qp_to_error(EpImpl *impl) noexcept;
    // A work request failed (not flushed), or the QP reported an async error: an RC
    // connection does not survive that. Breaks it: QP to ERR, DREQ to the peer,
    // DAT_CONNECTION_EVENT_BROKEN here. Any thread; takes ep->mu. With `connection`, only
    // if that is still the EP's connection (EpImpl::connection: a failed request's own).
    void break_connection(EpImpl *impl,
                          std::optional<std::uint32_t> connection = std::nullopt) noexcept;
    int qp_reset_to_init(EpImpl *impl) noexcept;
    int qp_reset_to_init(ibv_qp *qp) noexcept;
    DAT_RETURN make_qp(EpImpl *impl, const util::EpConfig &c);  // may throw

    CqAgentWatch &agent_watch() noexcept { return agent_watch_; }

  private:
    void cm_thread() noexcept;
    // dat_ep_connect's timeout (connect_timer.cpp): the CM thread ends an attempt that
    // has no outcome by its deadline with DAT_CONNECTION_EVENT_TIMED_OUT.
    void queue_connect_deadline(EpImpl *impl, std::int64_t deadline_ms) noexcept;
    int expire_connect_deadlines() noexcept;  // what is due; returns the poll timeout (ms)
    void expire_connect(EpImpl *impl, std::int64_t deadline_ms) noexcept;
    struct CmEvent;
    void on_cm_event(rdma_cm_event *ev) noexcept;
    void on_connect_request(const CmEvent &ev) noexcept;
    void on_ep_event(EpImpl *impl, const CmEvent &ev) noexcept;
    void park(CrImpl *cr) noexcept;
    void on_async_event() noexcept;
    // An id a consumer call ended (a reset, a replaced or abandoned connect, a failed
    // accept) is destroyed by the CM thread, between two events, not by the caller. The
    // CM thread tells a stale event from a current one by the id's address (on_cm_event),
    // and it may hold an acknowledged event of the ended id while it waits for ep->mu: an
    // id destroyed at once could give its address to the EP's next id, and that late event
    // would then act on the new connection. Once the CM thread has destroyed it, it holds
    // no event of it, and none comes.
    void end_id(IdPtr id) noexcept;
    void destroy_ended_ids() noexcept;  // the CM thread, and the destructor after it

    util::Ia *const ia_;
    // Destruction order: ids (in the objects below and in dev_) before the channel.
    ChannelPtr ch_;
    Device dev_;
    util::Limits limits_;
    UniqueFd stop_;
    UniqueFd wake_;  // a new connect deadline: the CM thread recomputes its poll timeout
    std::thread thread_;

    std::mutex mu_;  // the object sets below (control path only)
    std::unordered_set<EpImpl *> eps_;
    std::unordered_set<SpImpl *> sps_;
    std::unordered_set<CrImpl *> crs_;
    struct Deadline {
        EpImpl *impl;  // freed EPs are parked (graveyard_), so the pointer stays valid
        std::int64_t at_ms;
    };
    std::vector<Deadline> deadlines_;
    std::mutex ended_mu_;  // ended_ids_ (end_id); never held with another lock
    std::vector<rdma_cm_id *> ended_ids_;
    // Freed EPs (their EpImpl, then util's Ep), service points and CRs: an EP's slots may
    // still be named by completions in a CQ, and the CM thread may still hold any of them;
    // freed with the transport (after its thread stopped).
    util::DeferredFree graveyard_;
    // Calls CNO agents for completions (cq_agent.hpp). Last: its thread stops first.
    CqAgentWatch agent_watch_{ia_};
};

// Milliseconds of the steady clock (connect deadlines).
std::int64_t steady_now_ms() noexcept;

DAT_RETURN make_transport(util::ProviderInstance *inst, util::Ia *ia,
                          std::unique_ptr<util::Transport> *out);

}  // namespace opendat::verbs

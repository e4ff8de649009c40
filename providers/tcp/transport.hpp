// The tcp implementation of util::Transport: one per IA, owning the progress engine, the
// listening sockets of PSPs/RSPs and the passive connections not yet accepted.
#pragma once

#include <memory>
#include <mutex>

#include "tcp/engine.hpp"
#include "tcp/net.hpp"
#include "tcp/peer_limits.hpp"
#include "tcp/wire.hpp"
#include "util/objects.hpp"

namespace opendat::tcp {

// Shared between a listener and the passive connections it accepted, so that a
// connection finishing its handshake after psp_free finds the service point gone.
struct ServicePoint {
    std::mutex mu;
    util::Sp *sp = nullptr;  // util's PSP or RSP; nullptr once sp_close ran (util frees it)
};

class TcpTransport final : public util::Transport {
  public:
    TcpTransport(util::Ia *ia, const IaParams &params);
    ~TcpTransport() override;
    bool ok() const noexcept { return engine_.ok(); }

    const util::Limits &limits() const noexcept override { return limits_; }
    const sockaddr *address() const noexcept override {
        return reinterpret_cast<const sockaddr *>(&params_.addr);
    }

    DAT_RETURN ep_create(util::Ep *ep) noexcept override;
    void ep_destroy(util::Ep *ep) noexcept override;
    // The progress thread may still hold the EP: freed with the TcpEp it parked.
    void ep_release(util::Deferred free_ep) noexcept override { engine_.defer(free_ep); }
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
    // IB extensions (ep_ext.cpp has the wire side).
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
    void progress_inline() noexcept override { engine_.poll_inline(); }
    std::uint32_t wait_spin_us() const noexcept override { return engine_.policy().wait_spin_us; }
    void end_inline_progress() noexcept override { engine_.hand_back(); }

    Engine &engine() noexcept { return engine_; }
    util::Ia *ia() const noexcept { return ia_; }
    const IaParams &params() const noexcept { return params_; }
    // Limits per peer: every pending passive connection of this IA (peer_limits.hpp).
    const std::shared_ptr<PendingSet> &pending() const noexcept { return pending_; }

  private:
    util::Ia *const ia_;
    IaParams params_;
    util::Limits limits_;
    std::shared_ptr<PendingSet> pending_ = std::make_shared<PendingSet>(PendingScope::Ia);
    Engine engine_;  // last member: destroyed (thread stopped) first
};

DAT_RETURN make_transport(util::ProviderInstance *inst, util::Ia *ia,
                          std::unique_ptr<util::Transport> *out);

}  // namespace opendat::tcp

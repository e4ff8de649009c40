// The tcp implementation of util::Transport: one per IA, owning the progress engine, the
// listening sockets of PSPs/RSPs and the passive connections not yet accepted.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tcp/engine.hpp"
#include "tcp/net.hpp"
#include "tcp/peer_limits.hpp"
#include "tcp/wire.hpp"
#include "util/objects.hpp"
#include "util/provider_table.hpp"

namespace opendat::tcp {

// The service points listening on one TCP port, shared between the port's listener and
// the passive connections it accepted, so that a connection finishing its handshake after
// psp_free finds the service point gone. A port serves at most one service point whose
// qualifier is the port (`direct`) and any number whose qualifiers beyond the port range
// hash to it (`beyond`, net.hpp demux_port); a CONN_REQ is routed by the qualifier it
// carries.
struct PortRoutes {
    std::mutex mu;
    util::Sp *direct = nullptr;
    std::vector<util::Sp *> beyond;
    // The service point a CONN_REQ carrying `qual` goes to, or nullptr (mu held). A
    // qualifier that fits the port range (or 0, as a version-1 peer sends) is routed by the
    // port, as before qualifiers were carried; one beyond it must match exactly.
    util::Sp *route(DAT_CONN_QUAL qual, std::uint16_t base) const noexcept;
    // Adds `sp` as the port's own service point (`is_direct`) or as one beyond the port
    // range; DAT_CONN_QUAL_IN_USE when its place is taken (mu held).
    DAT_RETURN add(util::Sp *sp, bool is_direct) noexcept;
    // Removes `sp`; true when the port serves no service point any more (mu held).
    bool remove(const util::Sp *sp) noexcept;
};

class Listener;

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
    DAT_RETURN ep_modify(util::Ep *ep, const util::EpConfig &next) noexcept override;
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
    // Shared receive queues: util's ring, plus the waiters' wake-up (tcp/srq.hpp).
    DAT_RETURN srq_create(util::Srq *srq) noexcept override;
    void srq_destroy(util::Srq *srq) noexcept override;
    DAT_RETURN srq_post_recv(util::Srq *srq, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                             DAT_DTO_COOKIE cookie) noexcept override;
    DAT_RETURN ep_recv_info(util::Ep *ep, DAT_COUNT *nbufs, DAT_COUNT *span) noexcept override;

    DAT_RETURN sp_listen(util::Sp *sp) noexcept override;
    // A new listening socket on `port` (0: psp_create_any) with `sp` in `*routes`.
    DAT_RETURN open_listener(util::Sp *sp, std::uint16_t port, bool direct) noexcept;
    void sp_close(util::Sp *sp) noexcept override;
    DAT_RETURN cr_accept(util::Cr *cr, util::Ep *ep, DAT_COUNT pdata_len,
                         const void *pdata) noexcept override;
    DAT_RETURN cr_reject(util::Cr *cr, DAT_COUNT pdata_len, const void *pdata) noexcept override;
    void cr_destroy(util::Cr *cr) noexcept override;
    [[gnu::hot]] void progress_inline() noexcept override { engine_.poll_inline(); }
    [[gnu::hot]] std::uint32_t wait_spin_us() const noexcept override {
        return engine_.policy().wait_spin_us;
    }
    void end_inline_progress() noexcept override { engine_.hand_back(); }
    [[gnu::hot]] bool wait_inline_begin() noexcept override { return engine_.begin_inline_wait(); }
    std::uint64_t wait_inline_wakes() const noexcept override { return engine_.inline_wakes(); }
    [[gnu::hot]] bool wait_inline(std::uint32_t timeout_us, std::uint64_t seen) noexcept override {
        return engine_.wait_inline(timeout_us, seen);
    }
    [[gnu::hot]] void wait_inline_end() noexcept override { engine_.end_inline_wait(); }
    void wait_inline_wake() noexcept override { engine_.wake_inline(); }

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
    // One listener per TCP port, shared by the service points routed through it.
    std::mutex ports_mu_;
    std::unordered_map<std::uint16_t, Listener *> ports_;
    Engine engine_;  // last member: destroyed (thread stopped) first
};

// dat_ep_post_send and dat_ep_post_recv for this provider's table, straight to the
// endpoint (util::HotEntries, transport.cpp).
extern const util::HotEntries kHotEntries;
DAT_RETURN make_transport(util::ProviderInstance *inst, util::Ia *ia,
                          std::unique_ptr<util::Transport> *out);

}  // namespace opendat::tcp

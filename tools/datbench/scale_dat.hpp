// The DAT side of datscale: one IA with one busy endpoint (its own EVDs) and many idle
// ones (sharing one connection EVD and one pair of DTO EVDs, each with one receive
// posted, as an idle connection of a real application would be).
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sock.hpp"

namespace datbench::scale {

class ScaleIa {
  public:
    ScaleIa() = default;
    ~ScaleIa();
    ScaleIa(const ScaleIa &) = delete;
    ScaleIa &operator=(const ScaleIa &) = delete;

    // IA, PZ, EVDs (the idle connection EVD holds `idle` events), buffer, busy EP.
    bool open(const std::string &ia, std::uint32_t idle);
    bool listen(DAT_CONN_QUAL qual);  // server
    // The busy connection.
    bool connect_busy(const sockaddr_storage &server, DAT_CONN_QUAL qual);
    bool accept_busy();
    // n idle endpoints, created before the timed set-up; dtos > 0: their request and
    // receive queue depth (else the provider's default).
    bool create_idle(std::uint32_t n, std::uint32_t dtos);
    // Connects every created idle endpoint, at most `window` connecting at once; all
    // ESTABLISHED on return.
    bool connect_idle(const sockaddr_storage &server, DAT_CONN_QUAL qual, std::uint32_t window);
    bool accept_idle();  // every created idle endpoint
    // Disconnects and frees the idle endpoints.
    bool drop_idle();
    std::size_t idle_count() const noexcept { return idle_.size(); }
    // One polled 8-byte send/recv round trip on the busy endpoint (client: send first).
    bool ping(bool client);
    // Of the idle endpoints.
    DAT_COUNT max_request_dtos() const noexcept { return max_req_; }
    DAT_COUNT max_recv_dtos() const noexcept { return max_recv_; }
    DAT_COUNT ia_max_eps() const noexcept { return max_eps_; }
    void close();

  private:
    bool new_ep(DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req, DAT_EVD_HANDLE conn,
                const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep);
    bool post_recv(DAT_EP_HANDLE ep, std::size_t at);
    bool established(DAT_EVD_HANDLE evd);

    DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_ = DAT_HANDLE_NULL, cr_ = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
    DAT_LMR_HANDLE lmr_ = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lmr_ctx_ = 0;
    // The busy endpoint and its EVDs.
    DAT_EVD_HANDLE conn_ = DAT_HANDLE_NULL, req_ = DAT_HANDLE_NULL, recv_ = DAT_HANDLE_NULL;
    DAT_EP_HANDLE busy_ = DAT_HANDLE_NULL;
    bool busy_connected_ = false;
    // The idle endpoints and the EVDs they share.
    DAT_EVD_HANDLE idle_conn_ = DAT_HANDLE_NULL, idle_req_ = DAT_HANDLE_NULL,
                   idle_recv_ = DAT_HANDLE_NULL;
    std::vector<DAT_EP_HANDLE> idle_;
    std::vector<unsigned char> buf_;  // [0,64): busy send, [64,128): busy recv, then idle recvs
    DAT_EP_ATTR default_attr_{};
    DAT_COUNT max_req_ = 0, max_recv_ = 0, max_eps_ = 0;
};

}  // namespace datbench::scale

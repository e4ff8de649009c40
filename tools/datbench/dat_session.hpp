// One DAT connection for the benchmark: IA, PZ, EVDs, one EP, one registered buffer, and
// the peer's RMR triplet. Only the DAT API is used, so it runs over any provider.
//
// The registered buffer has two halves of `half` bytes: `src` (what we send or write) and
// `dst` (where the peer writes and our receives land). Receives always cover all of dst,
// so a receive left posted by one test fits any later message.
#pragma once

#include <dat2/udat.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "sock.hpp"

namespace datbench {

class DatSession {
  public:
    DatSession() = default;
    ~DatSession();
    DatSession(const DatSession &) = delete;
    DatSession &operator=(const DatSession &) = delete;

    // Opens the IA and creates everything but the connection.
    bool open(const std::string &ia, bool wait, std::size_t half);
    bool listen(DAT_CONN_QUAL qual);  // server, before the client may connect
    bool accept(int timeout_ms);
    bool connect(const sockaddr_storage &server, DAT_CONN_QUAL qual);
    // Swaps RMR triplets of the dst halves over the control connection.
    bool exchange(const Sock &control);
    void close();

    // Work requests on the two halves. `remote_off` is an offset into the peer's dst.
    bool post_send(std::uint32_t len, bool signaled);
    bool post_write(std::uint32_t len, std::uint64_t remote_off, bool signaled);
    bool post_read(std::uint32_t len, std::uint64_t remote_off);
    // Keeps n receives posted (each covering all of dst).
    bool ensure_recvs(std::uint32_t n);

    // Next completion on the request / receive EVD (polling or waiting, as opened). A
    // receive completion reposts the receive. False on an error status or a timeout.
    bool next_request(DAT_EVENT *ev = nullptr);
    bool next_recv(DAT_EVENT *ev = nullptr);
    // Lets a polling consumer drive the provider while it spins on memory.
    void poke();
    // Sets the EP's delayed_ack attribute; false if the provider does not support it.
    bool set_delayed_ack(bool on);

    unsigned char *src() const noexcept { return buf_; }
    unsigned char *dst() const noexcept { return buf_ + half_; }
    std::size_t half() const noexcept { return half_; }
    DAT_COUNT max_requests() const noexcept { return max_req_; }
    DAT_COUNT max_recvs() const noexcept { return max_recv_; }
    DAT_COUNT max_reads() const noexcept { return max_rd_; }
    bool waiting() const noexcept { return wait_; }

  private:
    bool next(DAT_EVD_HANDLE evd, DAT_EVENT *ev);
    bool post_recv();
    bool finish_connection();

    bool wait_ = false;
    DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE cr_evd_ = DAT_HANDLE_NULL, conn_evd_ = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE req_evd_ = DAT_HANDLE_NULL, recv_evd_ = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep_ = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
    DAT_LMR_HANDLE lmr_ = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lmr_ctx_ = 0;
    DAT_RMR_CONTEXT rmr_ctx_ = 0;
    unsigned char *buf_ = nullptr;
    std::size_t half_ = 0;
    DAT_RMR_TRIPLET peer_{};
    DAT_COUNT max_req_ = 1, max_recv_ = 1, max_rd_ = 1;
    std::uint32_t recvs_posted_ = 0;
    bool connected_ = false;
};

}  // namespace datbench

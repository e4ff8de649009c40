#include "dat_session.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <dat2/dat_trace.h>  // DAT_EP_ATTR_DELAYED_ACK

namespace datbench {

namespace {

constexpr DAT_COUNT kReadDepth = 32;

// No single DTO should take this long; a stuck peer ends the run instead of hanging it.
constexpr DAT_TIMEOUT kEventTimeoutUs = 30'000'000;

bool ok(DAT_RETURN rc, const char *what) {
    if (rc == DAT_SUCCESS) return true;
    const char *major = "", *minor = "";
    dat_strerror(rc, &major, &minor);
    std::fprintf(stderr, "datbench: %s failed: %s %s (0x%x)\n", what, major, minor,
                 static_cast<unsigned>(rc));
    return false;
}

DAT_DTO_COOKIE cookie(std::uint64_t v) {
    DAT_DTO_COOKIE c;
    c.as_64 = v;
    return c;
}

}  // namespace

DatSession::~DatSession() {
    close();
}

bool DatSession::open(const std::string &ia, bool wait, std::size_t half) {
    wait_ = wait;
    half_ = half;
    if (!ok(dat_ia_open(const_cast<char *>(ia.c_str()), 16, &async_evd_, &ia_), "dat_ia_open"))
        return false;
    if (!ok(dat_pz_create(ia_, &pz_), "dat_pz_create")) return false;
    if (!ok(dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd_),
            "dat_evd_create") ||
        !ok(dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd_),
            "dat_evd_create") ||
        !ok(dat_evd_create(ia_, 1024, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req_evd_),
            "dat_evd_create") ||
        !ok(dat_evd_create(ia_, 1024, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv_evd_),
            "dat_evd_create"))
        return false;
    // The provider's default EP, with deeper RDMA read queues when the IA allows them
    // (bandwidth of small reads is bounded by reads in flight / round trip).
    if (!ok(dat_ep_create(ia_, pz_, recv_evd_, req_evd_, conn_evd_, nullptr, &ep_),
            "dat_ep_create"))
        return false;
    DAT_EP_PARAM p{};
    if (!ok(dat_ep_query(ep_, DAT_EP_FIELD_ALL, &p), "dat_ep_query")) return false;
    DAT_IA_ATTR ia_attr{};
    if (dat_ia_query(ia_, nullptr, DAT_IA_FIELD_ALL, &ia_attr, 0, nullptr) == DAT_SUCCESS) {
        DAT_EP_ATTR attr = p.ep_attr;
        attr.max_rdma_read_out = std::min<DAT_COUNT>(kReadDepth, ia_attr.max_rdma_read_per_ep_out);
        attr.max_rdma_read_in = std::min<DAT_COUNT>(kReadDepth, ia_attr.max_rdma_read_per_ep_in);
        if (attr.max_rdma_read_out > p.ep_attr.max_rdma_read_out) {
            DAT_EP_HANDLE deeper = DAT_HANDLE_NULL;
            if (dat_ep_create(ia_, pz_, recv_evd_, req_evd_, conn_evd_, &attr, &deeper) ==
                    DAT_SUCCESS &&
                dat_ep_query(deeper, DAT_EP_FIELD_ALL, &p) == DAT_SUCCESS) {
                dat_ep_free(ep_);
                ep_ = deeper;
            } else if (deeper != DAT_HANDLE_NULL) {
                dat_ep_free(deeper);
            }
        }
    }
    max_req_ = p.ep_attr.max_request_dtos;
    max_recv_ = p.ep_attr.max_recv_dtos;
    max_rd_ = p.ep_attr.max_rdma_read_out > 0 ? p.ep_attr.max_rdma_read_out : 1;
    // Page-aligned and touched, so page faults stay out of the measurements.
    buf_ = static_cast<unsigned char *>(std::aligned_alloc(4096, 2 * half_));
    if (buf_ == nullptr) return false;
    std::memset(buf_, 0, 2 * half_);
    DAT_REGION_DESCRIPTION region;
    region.for_va = buf_;
    DAT_VLEN reg_len = 0;
    DAT_VADDR reg_addr = 0;
    return ok(
        dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, region, 2 * half_, pz_, DAT_MEM_PRIV_ALL_FLAG,
                       DAT_VA_TYPE_VA, &lmr_, &lmr_ctx_, &rmr_ctx_, &reg_len, &reg_addr),
        "dat_lmr_create");
}

bool DatSession::listen(DAT_CONN_QUAL qual) {
    return ok(dat_psp_create(ia_, qual, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp_), "dat_psp_create");
}

bool DatSession::accept(int timeout_ms) {
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    if (!ok(dat_evd_wait(cr_evd_, static_cast<DAT_TIMEOUT>(timeout_ms) * 1000, 1, &ev, &nmore),
            "waiting for a connection request"))
        return false;
    if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) return false;
    if (!ok(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep_, 0, nullptr),
            "dat_cr_accept"))
        return false;
    return finish_connection();
}

bool DatSession::connect(const sockaddr_storage &server, DAT_CONN_QUAL qual) {
    sockaddr_storage a = server;
    if (!ok(dat_ep_connect(ep_, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a), qual, kEventTimeoutUs, 0,
                           nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
            "dat_ep_connect"))
        return false;
    return finish_connection();
}

bool DatSession::finish_connection() {
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    if (!ok(dat_evd_wait(conn_evd_, kEventTimeoutUs, 1, &ev, &nmore), "waiting for the connection"))
        return false;
    if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        std::fprintf(stderr, "datbench: connection failed (event 0x%x)\n", ev.event_number);
        return false;
    }
    connected_ = true;
    return true;
}

bool DatSession::exchange(const Sock &control) {
    DAT_RMR_TRIPLET mine{};
    mine.virtual_address = reinterpret_cast<std::uintptr_t>(dst());
    mine.segment_length = static_cast<DAT_SEG_LENGTH>(half_);
    mine.rmr_context = rmr_ctx_;
    return send_all(control, &mine, sizeof mine) && recv_all(control, &peer_, sizeof peer_);
}

void DatSession::close() {
    if (ep_ != DAT_HANDLE_NULL && connected_) {
        DAT_EVENT ev;
        DAT_COUNT nmore = 0;
        if (dat_ep_disconnect(ep_, DAT_CLOSE_GRACEFUL_FLAG) == DAT_SUCCESS)
            dat_evd_wait(conn_evd_, 5'000'000, 1, &ev, &nmore);
        connected_ = false;
    }
    if (ep_ != DAT_HANDLE_NULL) dat_ep_free(ep_);
    if (psp_ != DAT_HANDLE_NULL) dat_psp_free(psp_);
    if (lmr_ != DAT_HANDLE_NULL) dat_lmr_free(lmr_);
    for (DAT_EVD_HANDLE e : {cr_evd_, conn_evd_, req_evd_, recv_evd_})
        if (e != DAT_HANDLE_NULL) dat_evd_free(e);
    if (pz_ != DAT_HANDLE_NULL) dat_pz_free(pz_);
    if (ia_ != DAT_HANDLE_NULL) dat_ia_close(ia_, DAT_CLOSE_GRACEFUL_FLAG);
    ep_ = psp_ = lmr_ = cr_evd_ = conn_evd_ = req_evd_ = recv_evd_ = pz_ = ia_ = DAT_HANDLE_NULL;
    std::free(buf_);
    buf_ = nullptr;
}

bool DatSession::post_send(std::uint32_t len, bool signaled) {
    DAT_LMR_TRIPLET iov{reinterpret_cast<std::uintptr_t>(src()), len, lmr_ctx_};
    return ok(
        dat_ep_post_send(ep_, 1, &iov, cookie(1),
                         signaled ? DAT_COMPLETION_DEFAULT_FLAG : DAT_COMPLETION_SUPPRESS_FLAG),
        "dat_ep_post_send");
}

bool DatSession::post_write(std::uint32_t len, std::uint64_t remote_off, bool signaled) {
    DAT_LMR_TRIPLET iov{reinterpret_cast<std::uintptr_t>(src()), len, lmr_ctx_};
    DAT_RMR_TRIPLET r{peer_.virtual_address + remote_off, len, peer_.rmr_context};
    return ok(dat_ep_post_rdma_write(
                  ep_, 1, &iov, cookie(2), &r,
                  signaled ? DAT_COMPLETION_DEFAULT_FLAG : DAT_COMPLETION_SUPPRESS_FLAG),
              "dat_ep_post_rdma_write");
}

bool DatSession::post_read(std::uint32_t len, std::uint64_t remote_off) {
    DAT_LMR_TRIPLET iov{reinterpret_cast<std::uintptr_t>(dst()), len, lmr_ctx_};
    DAT_RMR_TRIPLET r{peer_.virtual_address + remote_off, len, peer_.rmr_context};
    return ok(dat_ep_post_rdma_read(ep_, 1, &iov, cookie(3), &r, DAT_COMPLETION_DEFAULT_FLAG),
              "dat_ep_post_rdma_read");
}

bool DatSession::post_recv() {
    DAT_LMR_TRIPLET iov{reinterpret_cast<std::uintptr_t>(dst()), static_cast<DAT_SEG_LENGTH>(half_),
                        lmr_ctx_};
    if (!ok(dat_ep_post_recv(ep_, 1, &iov, cookie(4), DAT_COMPLETION_DEFAULT_FLAG),
            "dat_ep_post_recv"))
        return false;
    ++recvs_posted_;
    return true;
}

bool DatSession::ensure_recvs(std::uint32_t n) {
    while (recvs_posted_ < n)
        if (!post_recv()) return false;
    return true;
}

bool DatSession::next(DAT_EVD_HANDLE evd, DAT_EVENT *ev) {
    DAT_RETURN rc;
    if (wait_) {
        DAT_COUNT nmore = 0;
        rc = dat_evd_wait(evd, kEventTimeoutUs, 1, ev, &nmore);
    } else {
        // The clock is read only once the EVD has stayed empty for a while: reading it on
        // every call cost the DAT side a clock_gettime per message that its raw-TCP twin
        // does not pay (3-5 % of the 8-byte message rate's time, perf). The timeout
        // starts after the first 4096 empty polls, which is microseconds.
        std::chrono::steady_clock::time_point deadline{};
        for (std::uint32_t spins = 1;; ++spins) {
            rc = dat_evd_dequeue(evd, ev);
            if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY) break;
            if (spins % 4096 != 0) continue;
            const auto now = std::chrono::steady_clock::now();
            if (spins == 4096)
                deadline = now + std::chrono::microseconds(kEventTimeoutUs);
            else if (now > deadline)
                break;
        }
    }
    if (!ok(rc, wait_ ? "dat_evd_wait" : "dat_evd_dequeue")) return false;
    if (ev->event_number != DAT_DTO_COMPLETION_EVENT ||
        ev->event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
        std::fprintf(stderr, "datbench: unexpected event 0x%x (DTO status %d)\n", ev->event_number,
                     ev->event_data.dto_completion_event_data.status);
        return false;
    }
    return true;
}

bool DatSession::next_request(DAT_EVENT *ev) {
    DAT_EVENT local;
    return next(req_evd_, ev != nullptr ? ev : &local);
}

bool DatSession::next_recv(DAT_EVENT *ev) {
    DAT_EVENT local;
    if (!next(recv_evd_, ev != nullptr ? ev : &local)) return false;
    --recvs_posted_;
    return post_recv();
}

void DatSession::poke() {
    // An empty dequeue is where a polling consumer lets the provider make progress. Only
    // the request EVD is poked: the benchmark's spins on memory expect no completion there.
    DAT_EVENT ev;
    if (dat_evd_dequeue(req_evd_, &ev) == DAT_SUCCESS) {
        std::fprintf(stderr, "datbench: unexpected request completion while polling memory\n");
        std::exit(1);
    }
}

bool DatSession::set_delayed_ack(bool on) {
    DAT_NAMED_ATTR na{const_cast<char *>(DAT_EP_ATTR_DELAYED_ACK),
                      const_cast<char *>(on ? "true" : "false")};
    DAT_EP_PARAM p{};
    p.ep_attr.ep_provider_specific_count = 1;
    p.ep_attr.ep_provider_specific = &na;
    return dat_ep_modify(ep_, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, &p) == DAT_SUCCESS;
}

}  // namespace datbench

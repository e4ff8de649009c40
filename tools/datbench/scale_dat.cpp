#include "scale_dat.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <tuple>

namespace datbench::scale {

namespace {

constexpr DAT_TIMEOUT kStallUs = 30'000'000;  // no event for this long: the peer is gone
constexpr std::size_t kSlot = 64;             // busy send, busy recv, shared idle recv
constexpr DAT_COUNT kMsg = 8;

bool ok(DAT_RETURN rc, const char *what) {
    if (rc == DAT_SUCCESS) return true;
    const char *major = "", *minor = "";
    dat_strerror(rc, &major, &minor);
    std::fprintf(stderr, "datscale: %s failed: %s %s (0x%x)\n", what, major, minor,
                 static_cast<unsigned>(rc));
    return false;
}

DAT_DTO_COOKIE cookie(std::uint64_t v) {
    DAT_DTO_COOKIE c;
    c.as_64 = v;
    return c;
}

DAT_EVENT next_event(DAT_EVD_HANDLE evd, DAT_TIMEOUT us, DAT_RETURN *rc) {
    DAT_EVENT ev{};
    DAT_COUNT nmore = 0;
    *rc = dat_evd_wait(evd, us, 1, &ev, &nmore);
    return ev;
}

}  // namespace

ScaleIa::~ScaleIa() {
    close();
}

bool ScaleIa::open(const std::string &ia, std::uint32_t idle) {
    const DAT_COUNT conn_q = static_cast<DAT_COUNT>(std::max<std::uint32_t>(idle, 16) + 16);
    if (!ok(dat_ia_open(const_cast<char *>(ia.c_str()), 16, &async_, &ia_), "dat_ia_open") ||
        !ok(dat_pz_create(ia_, &pz_), "dat_pz_create"))
        return false;
    for (auto [flags, qlen, out] : {std::tuple{DAT_EVD_CR_FLAG, DAT_COUNT{256}, &cr_},
                                    std::tuple{DAT_EVD_CONNECTION_FLAG, DAT_COUNT{16}, &conn_},
                                    std::tuple{DAT_EVD_DTO_FLAG, DAT_COUNT{64}, &req_},
                                    std::tuple{DAT_EVD_DTO_FLAG, DAT_COUNT{64}, &recv_},
                                    std::tuple{DAT_EVD_CONNECTION_FLAG, conn_q, &idle_conn_},
                                    std::tuple{DAT_EVD_DTO_FLAG, DAT_COUNT{64}, &idle_req_},
                                    std::tuple{DAT_EVD_DTO_FLAG, conn_q, &idle_recv_}})
        if (!ok(dat_evd_create(ia_, qlen, DAT_HANDLE_NULL, flags, out), "dat_evd_create"))
            return false;
    DAT_IA_ATTR attr{};
    if (dat_ia_query(ia_, nullptr, DAT_IA_FIELD_ALL, &attr, 0, nullptr) == DAT_SUCCESS)
        max_eps_ = attr.max_eps;
    buf_.assign(3 * kSlot, 0);
    DAT_REGION_DESCRIPTION region;
    region.for_va = buf_.data();
    DAT_RMR_CONTEXT rmr = 0;
    DAT_VLEN reg_len = 0;
    DAT_VADDR reg_addr = 0;
    if (!ok(dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, region, buf_.size(), pz_,
                           DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr_, &lmr_ctx_, &rmr, &reg_len,
                           &reg_addr),
            "dat_lmr_create") ||
        !new_ep(recv_, req_, conn_, nullptr, &busy_))
        return false;
    DAT_EP_PARAM p{};
    if (!ok(dat_ep_query(busy_, DAT_EP_FIELD_ALL, &p), "dat_ep_query")) return false;
    default_attr_ = p.ep_attr;
    max_req_ = p.ep_attr.max_request_dtos;
    max_recv_ = p.ep_attr.max_recv_dtos;
    return true;
}

bool ScaleIa::new_ep(DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req, DAT_EVD_HANDLE conn,
                     const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep) {
    // nullptr: the provider's default endpoint attributes, what an application that asks
    // for nothing in particular pays per endpoint.
    return ok(dat_ep_create(ia_, pz_, recv, req, conn, attr, ep), "dat_ep_create");
}

bool ScaleIa::listen(DAT_CONN_QUAL qual) {
    return ok(dat_psp_create(ia_, qual, cr_, DAT_PSP_CONSUMER_FLAG, &psp_), "dat_psp_create");
}

bool ScaleIa::established(DAT_EVD_HANDLE evd) {
    DAT_RETURN rc;
    DAT_EVENT ev = next_event(evd, kStallUs, &rc);
    if (!ok(rc, "waiting for a connection event")) return false;
    if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        std::fprintf(stderr, "datscale: connection failed (event 0x%x)\n", ev.event_number);
        return false;
    }
    return true;
}

bool ScaleIa::post_recv(DAT_EP_HANDLE ep, std::size_t at) {
    DAT_LMR_TRIPLET iov{reinterpret_cast<std::uintptr_t>(buf_.data() + at), kSlot, lmr_ctx_};
    return ok(dat_ep_post_recv(ep, 1, &iov, cookie(at), DAT_COMPLETION_DEFAULT_FLAG),
              "dat_ep_post_recv");
}

bool ScaleIa::connect_busy(const sockaddr_storage &server, DAT_CONN_QUAL qual) {
    sockaddr_storage a = server;
    busy_connected_ =
        ok(dat_ep_connect(busy_, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a), qual, kStallUs, 0,
                          nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
           "dat_ep_connect") &&
        established(conn_);
    return busy_connected_ && post_recv(busy_, kSlot);
}

bool ScaleIa::accept_busy() {
    DAT_RETURN rc;
    DAT_EVENT ev = next_event(cr_, kStallUs, &rc);
    if (!ok(rc, "waiting for the busy connection") ||
        ev.event_number != DAT_CONNECTION_REQUEST_EVENT ||
        !ok(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, busy_, 0, nullptr),
            "dat_cr_accept"))
        return false;
    busy_connected_ = established(conn_);
    return busy_connected_ && post_recv(busy_, kSlot);
}

bool ScaleIa::create_idle(std::uint32_t n, std::uint32_t dtos) {
    DAT_EP_ATTR attr = default_attr_;
    if (dtos > 0) {
        attr.max_request_dtos = attr.max_recv_dtos = static_cast<DAT_COUNT>(dtos);
        max_req_ = max_recv_ = attr.max_request_dtos;
    }
    idle_.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
        if (!new_ep(idle_recv_, idle_req_, idle_conn_, dtos > 0 ? &attr : nullptr, &ep)) {
            std::fprintf(stderr, "datscale: dat_ep_create refused endpoint %u\n", i + 1);
            return false;
        }
        idle_.push_back(ep);
    }
    return true;
}

bool ScaleIa::connect_idle(const sockaddr_storage &server, DAT_CONN_QUAL qual,
                           std::uint32_t window) {
    sockaddr_storage a = server;
    std::size_t started = 0, done = 0;
    while (done < idle_.size()) {
        while (started < idle_.size() && started - done < window) {
            if (!ok(dat_ep_connect(idle_[started], reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a), qual,
                                   kStallUs, 0, nullptr, DAT_QOS_BEST_EFFORT,
                                   DAT_CONNECT_DEFAULT_FLAG),
                    "dat_ep_connect"))
                return false;
            ++started;
        }
        if (!established(idle_conn_)) {
            std::fprintf(stderr, "datscale: after %zu idle connections\n", done);
            return false;
        }
        ++done;
    }
    // A receive on each, as an idle connection waiting for its next message has.
    for (DAT_EP_HANDLE ep : idle_)
        if (!post_recv(ep, 2 * kSlot)) return false;
    return true;
}

bool ScaleIa::accept_idle() {
    std::size_t accepted = 0, done = 0;
    DAT_EVENT ev{};
    while (done < idle_.size()) {
        bool moved = false;
        while (accepted < idle_.size() && dat_evd_dequeue(cr_, &ev) == DAT_SUCCESS) {
            if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT ||
                !ok(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, idle_[accepted], 0,
                                  nullptr),
                    "dat_cr_accept"))
                return false;
            ++accepted;
            moved = true;
        }
        while (dat_evd_dequeue(idle_conn_, &ev) == DAT_SUCCESS) {
            if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
                std::fprintf(stderr, "datscale: accepted connection failed (event 0x%x)\n",
                             ev.event_number);
                return false;
            }
            ++done;
            moved = true;
        }
        if (moved) continue;
        // Nothing ready: sleep on whichever EVD the next step needs.
        DAT_RETURN rc;
        if (accepted < idle_.size()) {
            ev = next_event(cr_, kStallUs, &rc);
            if (!ok(rc, "waiting for a connection request")) return false;
            if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT ||
                !ok(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, idle_[accepted], 0,
                                  nullptr),
                    "dat_cr_accept"))
                return false;
            ++accepted;
        } else if (!established(idle_conn_)) {
            return false;
        } else {
            ++done;
        }
    }
    for (DAT_EP_HANDLE ep : idle_)
        if (!post_recv(ep, 2 * kSlot)) return false;
    return true;
}

bool ScaleIa::drop_idle() {
    // Both peers drop at once, so an endpoint may already be disconnected by its peer: the
    // return code is not judged, the DISCONNECTED event (one per endpoint either way) is.
    for (DAT_EP_HANDLE ep : idle_) dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG);
    DAT_EVENT ev{};
    std::size_t seen = 0;
    while (seen < idle_.size()) {
        DAT_RETURN rc;
        ev = next_event(idle_conn_, 5'000'000, &rc);
        if (rc != DAT_SUCCESS) break;
        if (ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED) ++seen;
    }
    while (dat_evd_dequeue(idle_recv_, &ev) == DAT_SUCCESS) {
    }  // the flushed receives
    bool good = seen == idle_.size();
    if (!good)
        std::fprintf(stderr, "datscale: %zu of %zu idle endpoints reported DISCONNECTED\n", seen,
                     idle_.size());
    for (DAT_EP_HANDLE ep : idle_) good = ok(dat_ep_free(ep), "dat_ep_free") && good;
    idle_.clear();
    return good;
}

bool ScaleIa::ping(bool client) {
    DAT_LMR_TRIPLET iov{reinterpret_cast<std::uintptr_t>(buf_.data()), kMsg, lmr_ctx_};
    auto send = [&] {
        // Unsignaled: the reply proves delivery, and the request EVD never fills.
        return ok(dat_ep_post_send(busy_, 1, &iov, cookie(0), DAT_COMPLETION_SUPPRESS_FLAG),
                  "dat_ep_post_send");
    };
    if (client && !send()) return false;
    // Polling, as datbench's polling rows: an empty dequeue lets the provider progress.
    DAT_EVENT ev{};
    DAT_RETURN rc;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(kStallUs);
    for (std::uint32_t spins = 1;; ++spins) {
        rc = dat_evd_dequeue(recv_, &ev);
        if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY) break;
        if (spins % 4096 == 0 && std::chrono::steady_clock::now() > deadline) break;
    }
    if (!ok(rc, "dat_evd_dequeue")) return false;
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
        ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
        std::fprintf(stderr, "datscale: unexpected event 0x%x\n", ev.event_number);
        return false;
    }
    if (!post_recv(busy_, kSlot)) return false;
    return client || send();
}

void ScaleIa::close() {
    if (!idle_.empty()) drop_idle();
    if (busy_ != DAT_HANDLE_NULL && busy_connected_) {
        DAT_RETURN rc;
        if (dat_ep_disconnect(busy_, DAT_CLOSE_GRACEFUL_FLAG) == DAT_SUCCESS)
            next_event(conn_, 5'000'000, &rc);
        busy_connected_ = false;
    }
    if (busy_ != DAT_HANDLE_NULL) dat_ep_free(busy_);
    if (psp_ != DAT_HANDLE_NULL) dat_psp_free(psp_);
    if (lmr_ != DAT_HANDLE_NULL) dat_lmr_free(lmr_);
    for (DAT_EVD_HANDLE e : {cr_, conn_, req_, recv_, idle_conn_, idle_req_, idle_recv_})
        if (e != DAT_HANDLE_NULL) dat_evd_free(e);
    if (pz_ != DAT_HANDLE_NULL) dat_pz_free(pz_);
    if (ia_ != DAT_HANDLE_NULL) dat_ia_close(ia_, DAT_CLOSE_GRACEFUL_FLAG);
    busy_ = psp_ = lmr_ = cr_ = conn_ = req_ = recv_ = idle_conn_ = idle_req_ = idle_recv_ = pz_ =
        ia_ = DAT_HANDLE_NULL;
}

}  // namespace datbench::scale

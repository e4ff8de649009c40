// verbs_events: event delivery and completion flags of a verbs IA, through the DAT API
// only, in one process (two endpoints of one IA connected to each other over the device).
//
//   verbs_events -P <ia> [-n rounds] [-q qual]
//
// Checks (each prints "PASS <name>" or "FAIL <name>: why"; exit status 0 when all pass):
//  wake_sw_evd:   a thread blocked in dat_evd_wait on an EVD merging DTO, connection and
//                 software events gets a dat_evd_post_se event at once: median wake-up
//                 latency over `rounds` is printed and must be < 4 ms (the old 10 ms
//                 polling slice gave ~5 ms median), and no wait may time out;
//  wake_cno:      the same for a thread in dat_cno_wait on a CNO fed by a CQ-backed EVD
//                 and a software EVD;
//  conn_merged:   the connection events (ESTABLISHED, then DISCONNECTED when the peer
//                 disconnects) and a receive completion all arrive on the merged EVD the
//                 active EP uses for everything; the disconnect's delivery time is printed;
//  suppress:      sends posted with DAT_COMPLETION_SUPPRESS_FLAG produce no completion,
//                 the signalled send after them does, and the receiver got all of them;
//  solicited:     an EVD whose EP asked for DAT_COMPLETION_SOLICITED_WAIT_FLAG receives is
//                 not woken by an unsolicited message (dat_evd_wait runs to its timeout,
//                 then may hand it over) but is by a solicited one (sent with
//                 DAT_COMPLETION_SOLICITED_WAIT_FLAG).
//  wait_beside_agent: a thread blocked in dat_evd_wait on a receive EVD whose CNO has a
//                 proxy agent (so the provider's CQ agent thread sleeps on the same
//                 completion channel) is woken by every message: `rounds` x 4 messages,
//                 none may take a second, the median under 50 ms (the agent taking the
//                 channel event first left the waiter asleep to its 2 s timeout in 2 of
//                 3 runs of 120);
//  agent_after_waits: then a message with nobody waiting calls the CNO's agent within
//                 500 ms (a waiter that read the event the agent's arming waited for left
//                 the agent to its 1 s poll timeout).
#include <dat2/udat.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int g_failed = 0;

void result(const char *name, bool ok, const std::string &why = {}) {
    if (ok)
        std::printf("PASS %s\n", name);
    else
        std::printf("FAIL %s: %s\n", name, why.c_str());
    std::fflush(stdout);
    if (!ok) ++g_failed;
}

[[noreturn]] void die(const char *what, DAT_RETURN rc) {
    const char *major = "", *minor = "";
    dat_strerror(rc, &major, &minor);
    std::printf("FAIL setup: %s: 0x%x %s %s\n", what, rc, major, minor);
    std::exit(1);
}

void check(const char *what, DAT_RETURN rc) {
    if (rc != DAT_SUCCESS) die(what, rc);
}

double median_us(std::vector<double> v) {
    if (v.empty()) return -1;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Ia {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_SOCK_ADDR addr{};
};

DAT_EVD_HANDLE evd(const Ia &ia, int flags, DAT_CNO_HANDLE cno = DAT_HANDLE_NULL) {
    DAT_EVD_HANDLE h = DAT_HANDLE_NULL;
    check("dat_evd_create", dat_evd_create(ia.ia, 64, cno, static_cast<DAT_EVD_FLAGS>(flags), &h));
    return h;
}

void post_se(DAT_EVD_HANDLE h) {
    DAT_EVENT ev{};
    ev.event_number = DAT_SOFTWARE_EVENT;
    ev.event_data.software_event_data.pointer = nullptr;
    check("dat_evd_post_se", dat_evd_post_se(h, &ev));
}

// Wake-up latency: `waiter` blocks (wait() returns what it got), the main thread posts
// after a pause; the time from the post to the waiter's return.
template <class Wait, class Post>
std::vector<double> wake_latencies(int rounds, Wait wait, Post post, int *failures) {
    std::vector<double> us;
    for (int i = 0; i < rounds; ++i) {
        std::atomic<bool> done{false};
        std::atomic<long long> t_done{0};
        bool ok = false;
        std::thread waiter([&] {
            ok = wait();
            t_done = Clock::now().time_since_epoch().count();
            done = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(3 + i % 7));
        const auto t0 = Clock::now();
        post();
        waiter.join();
        if (!ok) {
            ++*failures;
            break;  // each failure costs a whole timeout
        }
        const auto t1 = Clock::time_point(Clock::duration(t_done.load()));
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return us;
}

void report_latency(const char *name, const std::vector<double> &us, int failures, int rounds,
                    double max_median_us = 4000) {
    double med = median_us(us);
    double mx = us.empty() ? -1 : *std::max_element(us.begin(), us.end());
    std::printf("FIGURE %s: wake-up latency median %.0f us, max %.0f us over %zu rounds\n", name,
                med, mx, us.size());
    char why[160];
    std::snprintf(why, sizeof why, "%d of %d waits failed or timed out; median %.0f us", failures,
                  rounds, med);
    result(name, failures == 0 && med >= 0 && med < max_median_us, why);
}

// One end of a connection: its EP and EVDs, a registered buffer.
struct End {
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE req = DAT_HANDLE_NULL, recv = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL;
    char buf[4096]{};
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lctx = 0;
    DAT_RMR_CONTEXT rctx = 0;

    void make(const Ia &ia, const DAT_EP_ATTR *attr) {
        check("dat_ep_create", dat_ep_create(ia.ia, ia.pz, recv, req, conn, attr, &ep));
        DAT_REGION_DESCRIPTION d;
        d.for_va = buf;
        DAT_VLEN len;
        DAT_VADDR va;
        check("dat_lmr_create",
              dat_lmr_create(ia.ia, DAT_MEM_TYPE_VIRTUAL, d, sizeof buf, ia.pz,
                             DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, &len, &va));
    }
    DAT_LMR_TRIPLET iov(std::size_t off, std::size_t n) {
        DAT_LMR_TRIPLET t;
        t.lmr_context = lctx;
        t.virtual_address = reinterpret_cast<DAT_VADDR>(buf + off);
        t.segment_length = n;
        return t;
    }
};

// Connects `a` (active) to `p` (passive, accepted through a PSP on qual). Returns the
// event the active side's connection EVD gave.
DAT_EVENT connect_pair(const Ia &ia, DAT_CONN_QUAL qual, End *a, End *p) {
    DAT_EVD_HANDLE cr = evd(ia, DAT_EVD_CR_FLAG);
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    check("dat_psp_create", dat_psp_create(ia.ia, qual, cr, DAT_PSP_CONSUMER_FLAG, &psp));
    check("dat_ep_connect",
          dat_ep_connect(a->ep, const_cast<DAT_IA_ADDRESS_PTR>(&ia.addr), qual, 10'000'000, 0,
                         nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
    DAT_EVENT ev;
    DAT_COUNT more;
    check("CR wait", dat_evd_wait(cr, 10'000'000, 1, &ev, &more));
    if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) die("CR event", DAT_INTERNAL_ERROR);
    check("dat_cr_accept",
          dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, p->ep, 0, nullptr));
    check("passive established", dat_evd_wait(p->conn, 10'000'000, 1, &ev, &more));
    DAT_EVENT act;
    check("active established", dat_evd_wait(a->conn, 10'000'000, 1, &act, &more));
    dat_psp_free(psp);
    dat_evd_free(cr);
    return act;
}

void test_wake_sw_evd(const Ia &ia, int rounds) {
    DAT_EVD_HANDLE merged =
        evd(ia, DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG | DAT_EVD_SOFTWARE_FLAG);
    int failures = 0;
    auto us = wake_latencies(
        rounds,
        [&] {
            DAT_EVENT ev;
            DAT_COUNT more;
            return dat_evd_wait(merged, 5'000'000, 1, &ev, &more) == DAT_SUCCESS &&
                   ev.event_number == DAT_SOFTWARE_EVENT;
        },
        [&] { post_se(merged); }, &failures);
    report_latency("wake_sw_evd", us, failures, rounds);
    dat_evd_free(merged);
}

void test_wake_cno(const Ia &ia, int rounds) {
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    check("dat_cno_create", dat_cno_create(ia.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));
    DAT_EVD_HANDLE dto = evd(ia, DAT_EVD_DTO_FLAG, cno);
    DAT_EVD_HANDLE sw = evd(ia, DAT_EVD_SOFTWARE_FLAG, cno);
    int failures = 0;
    auto us = wake_latencies(
        rounds,
        [&] {
            DAT_EVD_HANDLE got = DAT_HANDLE_NULL;
            if (dat_cno_wait(cno, 5'000'000, &got) != DAT_SUCCESS || got != sw) return false;
            DAT_EVENT ev;
            return dat_evd_dequeue(sw, &ev) == DAT_SUCCESS;
        },
        [&] { post_se(sw); }, &failures);
    report_latency("wake_cno", us, failures, rounds);
    dat_evd_free(sw);
    dat_evd_free(dto);
    dat_cno_free(cno);
}

DAT_EP_ATTR base_attr() {
    DAT_EP_ATTR at{};
    at.service_type = DAT_SERVICE_TYPE_RC;
    at.max_mtu_size = 4096;
    at.qos = DAT_QOS_BEST_EFFORT;
    at.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    at.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    at.max_recv_dtos = 16;
    at.max_request_dtos = 16;
    at.max_recv_iov = 1;
    at.max_request_iov = 1;
    at.max_rdma_read_in = 1;
    at.max_rdma_read_out = 1;
    at.max_rdma_read_iov = 1;
    at.max_rdma_write_iov = 1;
    at.ep_transport_specific_count = 0;
    at.ep_provider_specific_count = 0;
    return at;
}

void free_end(End *e) {
    DAT_EVENT ev;
    if (e->ep != DAT_HANDLE_NULL) {
        dat_ep_disconnect(e->ep, DAT_CLOSE_ABRUPT_FLAG);
        // Drain whatever the disconnect produced, then free.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        for (DAT_EVD_HANDLE h : {e->conn, e->req, e->recv})
            while (h != DAT_HANDLE_NULL && dat_evd_dequeue(h, &ev) == DAT_SUCCESS) {
            }
        dat_ep_free(e->ep);
    }
    if (e->lmr != DAT_HANDLE_NULL) dat_lmr_free(e->lmr);
}

void test_conn_merged(const Ia &ia, DAT_CONN_QUAL qual) {
    End a, p;
    DAT_EVD_HANDLE merged = evd(ia, DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG);
    a.req = a.recv = a.conn = merged;
    p.req = evd(ia, DAT_EVD_DTO_FLAG);
    p.recv = evd(ia, DAT_EVD_DTO_FLAG);
    p.conn = evd(ia, DAT_EVD_CONNECTION_FLAG);
    DAT_EP_ATTR at = base_attr();
    a.make(ia, &at);
    p.make(ia, &at);
    DAT_LMR_TRIPLET riov = a.iov(0, 64);
    DAT_DTO_COOKIE ck;
    ck.as_64 = 7;
    check("post_recv", dat_ep_post_recv(a.ep, 1, &riov, ck, DAT_COMPLETION_DEFAULT_FLAG));
    DAT_EVENT ev = connect_pair(ia, qual, &a, &p);
    bool ok = ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED;
    std::string why = ok ? "" : "first event on the merged EVD is not ESTABLISHED";
    // A message from the passive side: its receive completion comes on the merged EVD.
    DAT_LMR_TRIPLET siov = p.iov(0, 32);
    std::memcpy(p.buf, "hello", 6);
    check("post_send", dat_ep_post_send(p.ep, 1, &siov, ck, DAT_COMPLETION_DEFAULT_FLAG));
    DAT_COUNT more;
    DAT_RETURN rc = dat_evd_wait(merged, 5'000'000, 1, &ev, &more);
    if (rc != DAT_SUCCESS || ev.event_number != DAT_DTO_COMPLETION_EVENT ||
        ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS ||
        std::strcmp(a.buf, "hello") != 0) {
        ok = false;
        why += " receive completion missing on the merged EVD;";
    }
    // The peer disconnects: the merged EVD's waiter is woken by DISCONNECTED.
    const auto t0 = Clock::now();
    check("dat_ep_disconnect", dat_ep_disconnect(p.ep, DAT_CLOSE_GRACEFUL_FLAG));
    rc = dat_evd_wait(merged, 5'000'000, 1, &ev, &more);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (rc != DAT_SUCCESS || ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED) {
        ok = false;
        why += " no DISCONNECTED on the merged EVD (rc " + std::to_string(rc) + ");";
    }
    std::printf(
        "FIGURE conn_merged: peer's dat_ep_disconnect to DISCONNECTED out of "
        "dat_evd_wait on the merged EVD: %.0f us\n",
        us);
    result("conn_merged", ok, why);
    free_end(&p);
    free_end(&a);
    dat_evd_free(merged);
    dat_evd_free(p.req);
    dat_evd_free(p.recv);
    dat_evd_free(p.conn);
}

void separate_evds(const Ia &ia, End *e) {
    e->req = evd(ia, DAT_EVD_DTO_FLAG);
    e->recv = evd(ia, DAT_EVD_DTO_FLAG);
    e->conn = evd(ia, DAT_EVD_CONNECTION_FLAG);
}

void free_evds(End *e) {
    dat_evd_free(e->req);
    dat_evd_free(e->recv);
    dat_evd_free(e->conn);
}

void test_suppress(const Ia &ia, DAT_CONN_QUAL qual) {
    End a, p;
    separate_evds(ia, &a);
    separate_evds(ia, &p);
    DAT_EP_ATTR at = base_attr();
    at.request_completion_flags = DAT_COMPLETION_SUPPRESS_FLAG;
    a.make(ia, &at);
    p.make(ia, &at);
    DAT_DTO_COOKIE ck;
    for (int i = 0; i < 4; ++i) {
        DAT_LMR_TRIPLET r = p.iov(64 * i, 64);
        ck.as_64 = 100 + i;
        check("post_recv", dat_ep_post_recv(p.ep, 1, &r, ck, DAT_COMPLETION_DEFAULT_FLAG));
    }
    connect_pair(ia, qual, &a, &p);
    for (int i = 0; i < 4; ++i) {
        DAT_LMR_TRIPLET s = a.iov(64 * i, 16);
        ck.as_64 = i;
        check("post_send",
              dat_ep_post_send(a.ep, 1, &s, ck,
                               i < 3 ? DAT_COMPLETION_SUPPRESS_FLAG : DAT_COMPLETION_DEFAULT_FLAG));
    }
    bool ok = true;
    std::string why;
    DAT_EVENT ev;
    DAT_COUNT more;
    if (dat_evd_wait(a.req, 5'000'000, 1, &ev, &more) != DAT_SUCCESS ||
        ev.event_data.dto_completion_event_data.user_cookie.as_64 != 3) {
        ok = false;
        why += " the first request completion is not the signalled send's;";
    }
    if (dat_evd_wait(a.req, 300'000, 1, &ev, &more) == DAT_SUCCESS) {
        ok = false;
        why += " a suppressed send produced a completion;";
    }
    int got = 0;
    while (got < 4 && dat_evd_wait(p.recv, 5'000'000, 1, &ev, &more) == DAT_SUCCESS &&
           ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS)
        ++got;
    if (got != 4) {
        ok = false;
        why += " the receiver got " + std::to_string(got) + " of 4 messages;";
    }
    result("suppress", ok, why);
    free_end(&p);
    free_end(&a);
    free_evds(&a);
    free_evds(&p);
}

void test_solicited(const Ia &ia, DAT_CONN_QUAL qual) {
    End a, p;
    separate_evds(ia, &a);
    separate_evds(ia, &p);
    DAT_EP_ATTR at = base_attr();
    a.make(ia, &at);
    DAT_EP_ATTR pat = base_attr();
    pat.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
    p.make(ia, &pat);
    DAT_DTO_COOKIE ck;
    for (int i = 0; i < 2; ++i) {
        DAT_LMR_TRIPLET r = p.iov(64 * i, 64);
        ck.as_64 = 100 + i;
        check("post_recv", dat_ep_post_recv(p.ep, 1, &r, ck, DAT_COMPLETION_SOLICITED_WAIT_FLAG));
    }
    connect_pair(ia, qual, &a, &p);
    bool ok = true;
    std::string why;
    DAT_EVENT ev;
    DAT_COUNT more;
    // A waiter blocks first (the CQ is armed for solicited completions only), then an
    // unsolicited message arrives: the wait runs to its timeout.
    std::thread sender([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        DAT_LMR_TRIPLET s = a.iov(0, 16);
        DAT_DTO_COOKIE c;
        c.as_64 = 1;
        dat_ep_post_send(a.ep, 1, &s, c, DAT_COMPLETION_DEFAULT_FLAG);
    });
    // The wait must not end before its timeout (the message arrives at 100 ms); at the
    // timeout it may hand over the completion that is there (or say it timed out).
    const auto t0 = Clock::now();
    DAT_RETURN rc = dat_evd_wait(p.recv, 600'000, 1, &ev, &more);
    const double waited_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    sender.join();
    std::printf(
        "FIGURE solicited: the solicited-only wait with an unsolicited message ended "
        "after %.0f ms (timeout 600 ms), rc 0x%x\n",
        waited_ms, rc);
    if (waited_ms < 550) {
        ok = false;
        why += " an unsolicited message woke the solicited-only waiter;";
    }
    // The unsolicited message is delivered all the same.
    if (rc != DAT_SUCCESS && dat_evd_dequeue(p.recv, &ev) != DAT_SUCCESS) {
        ok = false;
        why += " the unsolicited message's completion is missing;";
    } else if (ev.event_data.dto_completion_event_data.user_cookie.as_64 != 100) {
        ok = false;
        why += " the unsolicited message's completion is not the first receive's;";
    }
    std::thread sender2([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        DAT_LMR_TRIPLET s = a.iov(64, 16);
        DAT_DTO_COOKIE c;
        c.as_64 = 2;
        dat_ep_post_send(a.ep, 1, &s, c, DAT_COMPLETION_SOLICITED_WAIT_FLAG);
    });
    rc = dat_evd_wait(p.recv, 5'000'000, 1, &ev, &more);
    sender2.join();
    if (rc != DAT_SUCCESS || ev.event_data.dto_completion_event_data.user_cookie.as_64 != 101) {
        ok = false;
        why += " a solicited message did not wake the waiter (rc " + std::to_string(rc) + ");";
    }
    result("solicited", ok, why);
    free_end(&p);
    free_end(&a);
    free_evds(&a);
    free_evds(&p);
}

std::atomic<long long> g_agent_called{0};  // steady_clock ticks of the agent's last call

void agent_note(DAT_PVOID, DAT_EVD_HANDLE) {
    g_agent_called = Clock::now().time_since_epoch().count();
}

void test_wait_beside_agent(const Ia &ia, DAT_CONN_QUAL qual, int rounds) {
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_OS_WAIT_PROXY_AGENT agent;
    agent.instance_data = nullptr;
    agent.proxy_agent_func = agent_note;
    check("dat_cno_create (with an agent)", dat_cno_create(ia.ia, agent, &cno));
    End a, p;
    separate_evds(ia, &a);
    separate_evds(ia, &p);
    dat_evd_free(p.recv);
    p.recv = evd(ia, DAT_EVD_DTO_FLAG, cno);
    DAT_EP_ATTR at = base_attr();
    a.make(ia, &at);
    p.make(ia, &at);
    connect_pair(ia, qual, &a, &p);
    const int messages = rounds * 4;
    int failures = 0;
    auto us = wake_latencies(
        messages,
        [&] {
            // A missed wake-up ends at the timeout with the completion there (the wait
            // looks once more): a wait of over a second fails too.
            DAT_EVENT ev;
            DAT_COUNT more;
            const auto t0 = Clock::now();
            DAT_RETURN rc = dat_evd_wait(p.recv, 2'000'000, 1, &ev, &more);
            return Clock::now() - t0 < std::chrono::seconds(1) && rc == DAT_SUCCESS &&
                   ev.event_number == DAT_DTO_COMPLETION_EVENT &&
                   ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS;
        },
        [&] {
            DAT_LMR_TRIPLET r = p.iov(0, 64);
            DAT_LMR_TRIPLET s = a.iov(0, 16);
            DAT_DTO_COOKIE c;
            c.as_64 = 1;
            check("post_recv", dat_ep_post_recv(p.ep, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG));
            check("post_send", dat_ep_post_send(a.ep, 1, &s, c, DAT_COMPLETION_DEFAULT_FLAG));
            DAT_EVENT ev;
            DAT_COUNT more;
            check("send completion", dat_evd_wait(a.req, 2'000'000, 1, &ev, &more));
        },
        &failures);
    // The time includes the send and its completion, not the wake-up alone: under TCG
    // beside other work the median reached 6 ms. What the check is about is the second.
    report_latency("wait_beside_agent", us, failures, messages, 50'000);
    // Then a message with nobody waiting: the agent is called for it. The waiter may have
    // read the channel event that the agent's arming was waiting for; the agent must not
    // be left to its 1 s poll timeout for this one.
    g_agent_called = 0;
    DAT_LMR_TRIPLET r = p.iov(0, 64);
    DAT_LMR_TRIPLET s = a.iov(0, 16);
    DAT_DTO_COOKIE c;
    c.as_64 = 2;
    check("post_recv", dat_ep_post_recv(p.ep, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG));
    const auto t0 = Clock::now();
    check("post_send", dat_ep_post_send(a.ep, 1, &s, c, DAT_COMPLETION_DEFAULT_FLAG));
    while (g_agent_called == 0 && Clock::now() - t0 < std::chrono::seconds(3))
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    const double agent_ms =
        g_agent_called == 0 ? -1
                            : std::chrono::duration<double, std::milli>(
                                  Clock::time_point(Clock::duration(g_agent_called.load())) - t0)
                                  .count();
    std::printf(
        "FIGURE wait_beside_agent: with nobody waiting, the agent was called after %.1f ms\n",
        agent_ms);
    result("agent_after_waits", agent_ms >= 0 && agent_ms < 500,
           "the CNO agent was not called within 500 ms of the message (" +
               std::to_string(agent_ms) + " ms)");
    free_end(&p);
    free_end(&a);
    free_evds(&a);
    free_evds(&p);
    dat_cno_free(cno);
}

}  // namespace

int main(int argc, char **argv) {
    std::string name = "ofa-v2-verbs-rxe";
    int rounds = 40;
    DAT_CONN_QUAL qual = 46100;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string o = argv[i];
        if (o == "-P")
            name = argv[i + 1];
        else if (o == "-n")
            rounds = std::atoi(argv[i + 1]);
        else if (o == "-q")
            qual = std::strtoull(argv[i + 1], nullptr, 0);
    }
    setvbuf(stdout, nullptr, _IOLBF, 0);
    Ia ia;
    check("dat_ia_open", dat_ia_open(const_cast<char *>(name.c_str()), 8, &ia.async, &ia.ia));
    DAT_IA_ATTR iat;
    check("dat_ia_query", dat_ia_query(ia.ia, nullptr, DAT_IA_FIELD_ALL, &iat, 0, nullptr));
    std::memcpy(&ia.addr, iat.ia_address_ptr, sizeof(sockaddr_in));
    check("dat_pz_create", dat_pz_create(ia.ia, &ia.pz));
    std::printf("verbs_events: IA %s (%s)\n", name.c_str(), iat.adapter_name);

    test_wake_sw_evd(ia, rounds);
    test_wake_cno(ia, rounds);
    test_conn_merged(ia, qual);
    test_suppress(ia, qual + 1);
    test_solicited(ia, qual + 2);
    test_wait_beside_agent(ia, qual + 3, rounds);

    dat_pz_free(ia.pz);
    dat_ia_close(ia.ia, DAT_CLOSE_ABRUPT_FLAG);
    std::printf("verbs_events: %d failed\n", g_failed);
    return g_failed == 0 ? 0 : 1;
}

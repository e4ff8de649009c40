// Helpers for two-process tests through the DAT API only (so they run under the reference
// libdat2 or ours): one Node per process, a pipe to exchange setup data, and a fork
// wrapper whose child reports failure through its exit status.
#pragma once

#include <dat2/udat.h>
#include <netinet/in.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dattest {

constexpr const char *kIa = "ofa-v2-tcp-lo";
constexpr const char *kIaThreadSafe = "ofa-v2-tcp-lo-ts";
constexpr DAT_TIMEOUT kWait = 10'000'000;  // 10 s in µs

// Where the two processes of a test live. By default both use loopback; the network
// namespace variant (netns_main.cpp) puts the parent and the forked child in two namespaces
// joined by a veth link, each with an IA on its end of it.
struct Topology {
    std::string parent_addr = "127.0.0.1";  // IPv4 address of the parent's IA
    std::string child_addr = "127.0.0.1";   // ... and of the child's
    std::string ia = kIa;                   // IA names standing in for kIa / kIaThreadSafe
    std::string ia_threadsafe = kIaThreadSafe;
    std::string child_netns;  // non-empty: spawn()'s child joins this namespace first
};
Topology &topology();

// What the IA under test offers, read once with dat_ia_query (in the parent, before any
// fork): the suite asks the provider instead of knowing providers by name. A case that
// needs what the IA does not offer is skipped with SKIP_UNSUPPORTED, so that a report
// lists it, with the reason, instead of dropping it.
struct Traits {
    bool open_ok = false;      // the IA opened (if not, every case fails on its own open)
    std::string transport;     // "tcp" or "verbs" for OpenDAT ("OpenDAT <transport>" vendor
                               // name); empty for another provider (DAPL's are verbs-based)
    std::string adapter;       // DAT_IA_ATTR.adapter_name, e.g. the verbs device
    bool delayed_ack = false;  // provider attribute delayed_ack_supported is "true"
    bool rmr = false;          // max_rmrs > 0: dat_rmr_create can succeed
    bool rdma = false;         // max_rdma_size > 0: RDMA write and read (a send/recv-only
                               // provider such as providers/sendrecv advertises 0)
    // A reliable-connected queue pair underneath (every provider but OpenDAT's tcp): an RDMA
    // write completes only once the target accepted it, so a refused one completes in error
    // and no asynchronous error follows; the end of a connection can reach the peer as a
    // disconnect request from the kernel (DISCONNECTED) rather than as a broken link.
    bool rc = false;
    // IB extensions (extension_supported = DAT_EXTENSION_IB and the provider attribute
    // DAT_IB_IMMED_DATA / DAT_IB_FETCH_AND_ADD + DAT_IB_CMP_AND_SWAP = "TRUE").
    bool immediate = false;
    bool atomics = false;
    bool rc_device_is_rxe() const { return adapter.rfind("rxe", 0) == 0; }
};
const Traits &traits();
bool in_child();         // true in a process made by spawn()
in_addr own_address();   // this process's IA address
in_addr peer_address();  // the other process's

struct Buffer {
    std::vector<unsigned char> mem;
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lmr_ctx = 0;
    DAT_RMR_CONTEXT rmr_ctx = 0;
    DAT_LMR_TRIPLET iov(std::size_t off = 0, std::size_t len = ~std::size_t{0}) const;
    DAT_RMR_TRIPLET rmr(std::size_t off = 0, std::size_t len = ~std::size_t{0}) const;
};

// One process's DAT objects: IA, PZ, EVDs and one EP.
class Node {
  public:
    Node() = default;
    ~Node();
    DAT_RETURN open(const char *ia = kIa, bool threadsafe = false);
    DAT_RETURN make_ep(const DAT_EP_ATTR *attr = nullptr);
    DAT_RETURN reg(Buffer *b, std::size_t size, DAT_MEM_PRIV_FLAGS priv = DAT_MEM_PRIV_ALL_FLAG);
    // Passive side: PSP on any qualifier; then accept the first request on `ep`.
    DAT_RETURN listen(DAT_CONN_QUAL *qual);
    DAT_RETURN accept_one(DAT_COUNT pdata_len = 0, const void *pdata = nullptr);
    // Active side: connect to the peer's address (peer_address()), qualifier qual, and wait
    // for the outcome.
    DAT_RETURN connect(DAT_CONN_QUAL qual, DAT_EVENT_NUMBER *outcome, DAT_COUNT pdata_len = 0,
                       const void *pdata = nullptr);
    // Waits for one event on `evd` (evd_wait with a timeout).
    DAT_RETURN next(DAT_EVD_HANDLE evd, DAT_EVENT *ev, DAT_TIMEOUT timeout = kWait);
    DAT_RETURN disconnect_and_wait(DAT_CLOSE_FLAGS flags, DAT_EVENT_NUMBER *event);
    // After an abrupt dat_ia_close, which freed every object: drop the stale handles.
    void forget();

    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE cr_evd = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE conn_evd = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE req_evd = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE recv_evd = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    std::vector<Buffer *> buffers;
};

// A pipe carrying fixed-size PODs between the two processes.
class Channel {
  public:
    Channel();
    ~Channel();
    void parent_side();  // call after fork in the parent
    void child_side();   // ... and in the child
    bool send(const void *p, std::size_t n);
    bool recv(void *p, std::size_t n, int timeout_ms = 15000);
    template <class T>
    bool send(const T &v) {
        return send(&v, sizeof v);
    }
    template <class T>
    bool recv(T *v, int timeout_ms = 15000) {
        return recv(v, sizeof *v, timeout_ms);
    }

  private:
    int down_[2]{-1, -1};  // parent -> child
    int up_[2]{-1, -1};    // child -> parent
    int rfd_ = -1, wfd_ = -1;
};

// Forks; the child runs `body` and exits with its return value (0 = success). Returns the
// child's pid.
int spawn(const std::function<int()> &body);
// Opens `s` with an EP, forks a child that connects to it and then waits (pause()) to be
// killed, and accepts. Returns the child's pid, or minus it if any step failed.
int connected_pair(Node &s, Channel &ch);
// The child's side of most two-process cases, after fork: takes its end of `ch`, opens `c`
// with an EP, registers `b` (`size` bytes), runs `before_connect` on it (if given),
// receives the parent's qualifier (into `*qual`, if given: to connect again) and connects.
// False (with the failed step printed) if any step fails.
bool child_connects(Channel &ch, Node &c, Buffer *b, std::size_t size,
                    const std::function<bool(Node &)> &before_connect = nullptr,
                    DAT_CONN_QUAL *qual = nullptr);
// The parent's side of child_connects: takes its end of `ch`, opens `s` with an EP,
// registers `b` (`size` bytes), listens, sends the qualifier and accepts. False (with the
// failed step printed) if any step fails.
bool parent_accepts(Channel &ch, Node &s, Buffer *b, std::size_t size);
// Waits for the child; returns its exit status (or 128+signal).
int reap(int pid, int timeout_s = 30);

// Before reading memory a peer wrote into through the provider (RDMA write placement):
// the progress thread placed it. A consumer that learns out of band (a pipe, a later
// message) that the data is there synchronizes with the provider through any DAT call on
// the endpoint before reading it, as on an HCA; without that, ThreadSanitizer rightly sees
// no ordering.
inline void sync_with_provider(DAT_EP_HANDLE ep) {
    DAT_EP_STATE st;
    dat_ep_get_status(ep, &st, nullptr, nullptr);
}

// Waits (up to timeout_ms) until the byte at `p` reads `value`: the first bytes of a
// peer's RDMA write into our memory, placed by the provider's progress thread. Polling
// memory for a write's arrival races with the writer by design, as with an adapter's DMA;
// test/tsan.supp names this function (and nothing of the caller's).
bool wait_for_placed_byte(DAT_EP_HANDLE ep, const unsigned char *p, unsigned char value,
                          int timeout_ms = 5000);

}  // namespace dattest

// In a test body: skip, reporting the case as one the IA under test cannot support.
#define SKIP_UNSUPPORTED(why) \
    GTEST_SKIP() << "UNSUPPORTED on " << ::dattest::topology().ia << ": " << why

// In a child process: fail with the line number as exit status.
#define CHILD_CHECK(cond)                                                                         \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            std::fprintf(stderr, "child check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            return __LINE__ % 250 + 1;                                                            \
        }                                                                                         \
    } while (0)

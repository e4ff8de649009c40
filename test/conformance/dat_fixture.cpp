#include "dat_fixture.hpp"

#include <dat2/dat_trace.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace dattest {

namespace {
bool g_in_child = false;

in_addr parse(const std::string &a) {
    in_addr r{};
    inet_pton(AF_INET, a.c_str(), &r);
    return r;
}
}  // namespace

Topology &topology() {
    static Topology t;
    return t;
}

const Traits &traits() {
    static const Traits t = [] {
        Traits r;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
        std::string name = topology().ia;
        if (dat_ia_open(name.data(), 8, &async, &ia) != DAT_SUCCESS) return r;
        r.open_ok = true;
        DAT_IA_ATTR ia_attr{};
        // DAT_PROVIDER_ATTR has a const member: not default-constructible in C++.
        alignas(DAT_PROVIDER_ATTR) unsigned char storage[sizeof(DAT_PROVIDER_ATTR)] = {};
        auto *pa = reinterpret_cast<DAT_PROVIDER_ATTR *>(storage);
        if (dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, pa) ==
            DAT_SUCCESS) {
            const std::string vendor = ia_attr.vendor_name;
            const std::string ours = "OpenDAT ";
            if (vendor.rfind(ours, 0) == 0) {
                r.transport = vendor.substr(ours.size());
                r.transport = r.transport.substr(0, r.transport.find(' '));
            }
            r.adapter = ia_attr.adapter_name;
            r.rmr = ia_attr.max_rmrs > 0;
            r.rdma = ia_attr.max_rdma_size > 0;
            for (DAT_COUNT i = 0; i < pa->num_provider_specific_attr; ++i) {
                const DAT_NAMED_ATTR &a = pa->provider_specific_attr[i];
                if (std::strcmp(a.name, DAT_VENDOR_ATTR_DELAYED_ACK_SUPPORTED) == 0)
                    r.delayed_ack = std::strcmp(a.value, "true") == 0;
            }
            // The IB extensions, as <dat2/dat_ib_extensions.h> names them.
            auto named_true = [&](const char *name) {
                for (DAT_COUNT i = 0; i < pa->num_provider_specific_attr; ++i) {
                    const DAT_NAMED_ATTR &a = pa->provider_specific_attr[i];
                    if (std::strcmp(a.name, name) == 0) return std::strcmp(a.value, "TRUE") == 0;
                }
                return false;
            };
            if (ia_attr.extension_supported == DAT_EXTENSION_IB) {
                r.immediate = named_true("DAT_IB_IMMED_DATA");
                r.atomics = named_true("DAT_IB_FETCH_AND_ADD") && named_true("DAT_IB_CMP_AND_SWAP");
            }
        }
        r.rc = r.transport != "tcp";
        dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
        return r;
    }();
    return t;
}

bool in_child() {
    return g_in_child;
}

in_addr own_address() {
    return parse(g_in_child ? topology().child_addr : topology().parent_addr);
}

in_addr peer_address() {
    return parse(g_in_child ? topology().parent_addr : topology().child_addr);
}

DAT_LMR_TRIPLET Buffer::iov(std::size_t off, std::size_t len) const {
    if (len == ~std::size_t{0}) len = mem.size() - off;
    DAT_LMR_TRIPLET t{};
    t.virtual_address = reinterpret_cast<std::uintptr_t>(mem.data() + off);
    t.segment_length = static_cast<DAT_SEG_LENGTH>(len);
    t.lmr_context = lmr_ctx;
    return t;
}

DAT_RMR_TRIPLET Buffer::rmr(std::size_t off, std::size_t len) const {
    if (len == ~std::size_t{0}) len = mem.size() - off;
    DAT_RMR_TRIPLET t{};
    t.virtual_address = reinterpret_cast<std::uintptr_t>(mem.data() + off);
    t.segment_length = static_cast<DAT_SEG_LENGTH>(len);
    t.rmr_context = rmr_ctx;
    return t;
}

Node::~Node() {
    if (ep != DAT_HANDLE_NULL) dat_ep_free(ep);
    if (psp != DAT_HANDLE_NULL) dat_psp_free(psp);
    for (Buffer *b : buffers)
        if (b->lmr != DAT_HANDLE_NULL) dat_lmr_free(b->lmr);
    for (DAT_EVD_HANDLE e : {cr_evd, conn_evd, req_evd, recv_evd})
        if (e != DAT_HANDLE_NULL) dat_evd_free(e);
    if (pz != DAT_HANDLE_NULL) dat_pz_free(pz);
    if (ia != DAT_HANDLE_NULL) dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
}

void Node::forget() {
    for (Buffer *b : buffers) b->lmr = DAT_HANDLE_NULL;
    buffers.clear();
    ia = async_evd = pz = cr_evd = conn_evd = req_evd = recv_evd = ep = psp = DAT_HANDLE_NULL;
}

DAT_RETURN Node::open(const char *name, bool threadsafe) {
    // The tests name the loopback IAs; another topology supplies its own.
    if (std::strcmp(name, kIa) == 0) name = topology().ia.c_str();
    if (std::strcmp(name, kIaThreadSafe) == 0) name = topology().ia_threadsafe.c_str();
    // dat_ia_open() always asks for the non-thread-safe entry; the thread-safe one is a
    // different registry key.
    DAT_RETURN rc = dat_ia_openv(const_cast<char *>(name), 8, &async_evd, &ia, DAT_VERSION_MAJOR,
                                 DAT_VERSION_MINOR, threadsafe ? DAT_TRUE : DAT_FALSE);
    if (rc != DAT_SUCCESS) return rc;
    if ((rc = dat_pz_create(ia, &pz)) != DAT_SUCCESS) return rc;
    if ((rc = dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd)) != DAT_SUCCESS)
        return rc;
    if ((rc = dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd)) !=
        DAT_SUCCESS)
        return rc;
    if ((rc = dat_evd_create(ia, 512, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req_evd)) != DAT_SUCCESS)
        return rc;
    return dat_evd_create(ia, 512, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv_evd);
}

DAT_RETURN Node::make_ep(const DAT_EP_ATTR *attr) {
    return dat_ep_create(ia, pz, recv_evd, req_evd, conn_evd, attr, &ep);
}

DAT_RETURN Node::reg(Buffer *b, std::size_t size, DAT_MEM_PRIV_FLAGS priv) {
    b->mem.assign(size, 0);
    DAT_REGION_DESCRIPTION region;
    region.for_va = b->mem.data();
    DAT_VLEN reg_len = 0;
    DAT_VADDR reg_addr = 0;
    DAT_RETURN rc = dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, size, pz, priv, DAT_VA_TYPE_VA,
                                   &b->lmr, &b->lmr_ctx, &b->rmr_ctx, &reg_len, &reg_addr);
    if (rc == DAT_SUCCESS) buffers.push_back(b);
    return rc;
}

DAT_RETURN Node::listen(DAT_CONN_QUAL *qual) {
    return dat_psp_create_any(ia, qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp);
}

DAT_RETURN Node::accept_one(DAT_COUNT pdata_len, const void *pdata) {
    DAT_EVENT ev;
    DAT_RETURN rc = next(cr_evd, &ev);
    if (rc != DAT_SUCCESS) return rc;
    if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) return DAT_INTERNAL_ERROR;
    rc = dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, pdata_len,
                       const_cast<void *>(pdata));
    if (rc != DAT_SUCCESS) return rc;
    if ((rc = next(conn_evd, &ev)) != DAT_SUCCESS) return rc;
    return ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED ? DAT_SUCCESS : DAT_INTERNAL_ERROR;
}

DAT_RETURN Node::connect(DAT_CONN_QUAL qual, DAT_EVENT_NUMBER *outcome, DAT_COUNT pdata_len,
                         const void *pdata) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = peer_address();
    DAT_RETURN rc =
        dat_ep_connect(ep, reinterpret_cast<sockaddr *>(&sin), qual, kWait, pdata_len,
                       const_cast<void *>(pdata), DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
    if (rc != DAT_SUCCESS) return rc;
    DAT_EVENT ev;
    if ((rc = next(conn_evd, &ev)) != DAT_SUCCESS) return rc;
    *outcome = ev.event_number;
    return DAT_SUCCESS;
}

DAT_RETURN Node::next(DAT_EVD_HANDLE evd, DAT_EVENT *ev, DAT_TIMEOUT timeout) {
    DAT_COUNT nmore = 0;
    return dat_evd_wait(evd, timeout, 1, ev, &nmore);
}

DAT_RETURN Node::disconnect_and_wait(DAT_CLOSE_FLAGS flags, DAT_EVENT_NUMBER *event) {
    DAT_RETURN rc = dat_ep_disconnect(ep, flags);
    if (rc != DAT_SUCCESS) return rc;
    DAT_EVENT ev;
    if ((rc = next(conn_evd, &ev)) != DAT_SUCCESS) return rc;
    *event = ev.event_number;
    return DAT_SUCCESS;
}

Channel::Channel() {
    if (pipe(down_) != 0 || pipe(up_) != 0) std::perror("pipe");
}

Channel::~Channel() {
    for (int fd : {down_[0], down_[1], up_[0], up_[1]})
        if (fd >= 0) close(fd);
}

void Channel::parent_side() {
    close(down_[0]);
    close(up_[1]);
    down_[0] = up_[1] = -1;
    wfd_ = down_[1];
    rfd_ = up_[0];
}

void Channel::child_side() {
    close(down_[1]);
    close(up_[0]);
    down_[1] = up_[0] = -1;
    wfd_ = up_[1];
    rfd_ = down_[0];
}

bool Channel::send(const void *p, std::size_t n) {
    const char *c = static_cast<const char *>(p);
    while (n > 0) {
        ssize_t w = write(wfd_, c, n);
        if (w <= 0) return false;
        c += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

bool Channel::recv(void *p, std::size_t n, int timeout_ms) {
    char *c = static_cast<char *>(p);
    while (n > 0) {
        pollfd pfd{rfd_, POLLIN, 0};
        if (poll(&pfd, 1, timeout_ms) <= 0) return false;
        ssize_t r = read(rfd_, c, n);
        if (r <= 0) return false;
        c += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

int spawn(const std::function<int()> &body) {
    std::fflush(nullptr);
    int pid = fork();
    if (pid == 0) {
        g_in_child = true;
        if (!topology().child_netns.empty()) {
            // Join the peer's network namespace before any socket exists.
            std::string path = "/var/run/netns/" + topology().child_netns;
            int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
                std::perror("child: setns");
                _exit(97);
            }
            close(fd);
        }
        int rc = 1;
        try {
            rc = body();
        } catch (...) {
            rc = 99;
        }
        std::fflush(nullptr);
        _exit(rc);
    }
    return pid;
}

int connected_pair(Node &s, Channel &ch) {
    int pid = spawn([&] {
        ch.child_side();
        Node c;
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        DAT_CONN_QUAL qual;
        CHILD_CHECK(ch.recv(&qual));
        DAT_EVENT_NUMBER outcome;
        CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                    outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        CHILD_CHECK(ch.send(1));
        pause();
        return 0;
    });
    ch.parent_side();
    DAT_CONN_QUAL qual = 0;
    if (s.open() != DAT_SUCCESS || s.make_ep() != DAT_SUCCESS || s.listen(&qual) != DAT_SUCCESS ||
        !ch.send(qual) || s.accept_one() != DAT_SUCCESS)
        return -pid;
    int ready = 0;
    return ch.recv(&ready) ? pid : -pid;
}

bool parent_accepts(Channel &ch, Node &s, Buffer *b, std::size_t size) {
    ch.parent_side();
    DAT_CONN_QUAL qual = 0;
    const char *failed = nullptr;
    if (s.open() != DAT_SUCCESS || s.make_ep() != DAT_SUCCESS)
        failed = "open or make_ep";
    else if (s.reg(b, size) != DAT_SUCCESS)
        failed = "reg";
    else if (s.listen(&qual) != DAT_SUCCESS || !ch.send(qual))
        failed = "listen";
    else if (s.accept_one() != DAT_SUCCESS)
        failed = "accept";
    if (failed != nullptr) std::fprintf(stderr, "parent: %s failed\n", failed);
    return failed == nullptr;
}

bool child_connects(Channel &ch, Node &c, Buffer *b, std::size_t size,
                    const std::function<bool(Node &)> &before_connect, DAT_CONN_QUAL *qual) {
    ch.child_side();
    if (c.open() != DAT_SUCCESS || c.make_ep() != DAT_SUCCESS) {
        std::fprintf(stderr, "child: open or make_ep failed\n");
        return false;
    }
    if (c.reg(b, size) != DAT_SUCCESS) {
        std::fprintf(stderr, "child: reg of %zu bytes failed\n", size);
        return false;
    }
    if (before_connect && !before_connect(c)) {
        std::fprintf(stderr, "child: the set-up before the connect failed\n");
        return false;
    }
    DAT_CONN_QUAL own = 0;
    if (qual == nullptr) qual = &own;
    if (!ch.recv(qual)) {
        std::fprintf(stderr, "child: no qualifier from the parent\n");
        return false;
    }
    DAT_EVENT_NUMBER outcome{};
    if (c.connect(*qual, &outcome) != DAT_SUCCESS || outcome != DAT_CONNECTION_EVENT_ESTABLISHED) {
        std::fprintf(stderr, "child: connect failed (event 0x%x)\n", outcome);
        return false;
    }
    return true;
}

int reap(int pid, int timeout_s) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    int status = 0;
    for (;;) {
        int r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (std::chrono::steady_clock::now() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return 200;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

__attribute__((noinline)) bool wait_for_placed_byte(DAT_EP_HANDLE ep, const unsigned char *p,
                                                    unsigned char value, int timeout_ms) {
    const volatile unsigned char *v = p;  // re-read on every round
    for (int waited = 0;; waited += 10) {
        sync_with_provider(ep);
        if (*v == value) return true;
        if (waited >= timeout_ms) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace dattest

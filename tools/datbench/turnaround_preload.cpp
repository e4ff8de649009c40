// datbench-turnaround: where a ping-pong's time goes between the kernel's calls.
//
// Loaded with LD_PRELOAD into datbench (tools/bench_turnaround.sh does it), it timestamps
// the calls a process makes from the recv() that brings a small message to the send of its
// answer, and splits that turnaround where the DAT API is crossed:
//
//   raw TCP        recv() -> send()                        (datbench's own baseline)
//   DAT send/recv  recv() -> dat_evd_dequeue() returns the receive
//                         -> dat_ep_post_send() is called
//                         -> the provider's sendmsg()
//                  ("sendmsg" in the labels: the provider's send of the answer's frame, by
//                  send() when the frames total at most 512 bytes, tcp/send_frames.hpp; a
//                  frame is told from datbench's raw message by the wire magic it starts with)
//   DAT RDMA write recv() -> dat_ep_post_rdma_write() -> sendmsg()
//   provider only  recv() -> sendmsg() with no DAT call between (a thread of the provider
//                  answering by itself: an RDMA read's response)
//
// The turnaround is the part of a round trip that is ours. The rest of the round trip is
// the kernel's and the poll loop's, and is timed too, raw and DAT alike:
//
//   send -> the answer's recv        the round trip less our own turnaround: the peer's
//                                    turnaround plus twice the one-way time outside both
//   empty recv -> empty recv         one round of the poll loop that finds nothing
//   inside send() / a recv() that brings data    the system calls themselves (on loopback
//                                    the peer's receive processing runs inside our send)
//   last empty recv -> the recv that brings data    what the poll loop did between its
//                                    last look at the socket and the look that found the
//                                    message, and how often that included an epoll_wait
//                                    (a DAT poller asks epoll every few rounds instead of
//                                    reading its busy socket, tcp/engine.cpp)
//
// The provider makes these system calls through syscall() (no cancellation point,
// providers/util/sys_io.hpp); the preload interposes syscall() too, so its recvfrom,
// sendto, sendmsg and epoll_pwait count as recv, send, sendmsg and epoll_wait.
//
// These add two clock reads to every recv(), empty or not (about 50 ns a poll round, raw
// and DAT alike), which moves where in the poll loop an answer tends to arrive.
//
// Each process prints its figures when it exits. Intervals above kMaxNs (a descheduled thread, a
// pause between phases) and receives above kMaxMsg bytes (the bandwidth phases) are not counted.
// Every timestamp is one clock_gettime; its cost, printed as "clock", is inside each interval.
#include <dlfcn.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <dat2/udat.h>

#include "tcp/wire.hpp"

namespace {

constexpr std::uint64_t kMaxNs = 50'000;
constexpr ssize_t kMaxMsg = 256;
constexpr std::uint64_t kBinNs = 10;
constexpr std::size_t kBins = kMaxNs / kBinNs;

std::uint64_t now_ns() noexcept {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(t.tv_nsec);
}

// One interval's distribution; added to from any thread (relaxed: counts only).
struct Stat {
    const char *name;
    std::atomic<std::uint64_t> n{0}, sum{0};
    std::atomic<std::uint32_t> bins[kBins]{};

    void add(std::uint64_t from, std::uint64_t to) noexcept {
        if (from == 0 || to < from || to - from >= kMaxNs) return;
        const std::uint64_t d = to - from;
        n.fetch_add(1, std::memory_order_relaxed);
        sum.fetch_add(d, std::memory_order_relaxed);
        bins[d / kBinNs].fetch_add(1, std::memory_order_relaxed);
    }
    std::uint64_t median() const noexcept {
        const std::uint64_t total = n.load(), half = (total + 1) / 2;
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < kBins; ++i) {
            seen += bins[i].load();
            if (seen >= half) return i * kBinNs + kBinNs / 2;
        }
        return kMaxNs;
    }
};

enum Which {
    kRaw,
    kSendTotal,
    kSendToDequeue,
    kDequeueToPost,
    kPostRecv,
    kPostToSendmsg,
    kWriteTotal,
    kWriteToPost,
    kWritePostToSendmsg,
    kProvider,
    kWaitRaw,
    kWaitDat,
    kWaitDatWrite,
    kWaitDatOther,
    kPollRaw,
    kPollDat,
    kSendRaw,
    kSendDat,
    kRecvRaw,
    kRecvDat,
    kGapRaw,
    kGapDat,
    kCount
};
Stat stats[kCount] = {{"raw TCP: recv -> send"},
                      {"DAT send/recv: recv -> sendmsg"},
                      {"  recv -> dat_evd_dequeue returns it"},
                      {"  -> dat_ep_post_send (the app's work)"},
                      {"    of which in dat_ep_post_recv"},
                      {"  dat_ep_post_send -> sendmsg"},
                      {"DAT RDMA write: recv -> sendmsg"},
                      {"  recv -> dat_ep_post_rdma_write"},
                      {"  dat_ep_post_rdma_write -> sendmsg"},
                      {"provider alone: recv -> sendmsg"},
                      {"raw: send -> the answer's recv"},
                      {"DAT send: sendmsg -> the answer's recv"},
                      {"DAT write: sendmsg -> the answer's recv"},
                      {"DAT other: sendmsg -> the next recv"},
                      {"raw: empty recv -> empty recv"},
                      {"DAT: empty recv -> empty recv"},
                      {"raw: inside send()"},
                      {"DAT: inside send()"},
                      {"raw: inside a recv() that brings data"},
                      {"DAT: inside a recv() that brings data"},
                      {"raw: last empty recv -> the recv that brings data"},
                      {"DAT: last empty recv -> the recv that brings data"}};

// The current turnaround of this thread: when its message came, and where it is now.
struct Turn {
    std::uint64_t in = 0, dequeued = 0, posted = 0;
    bool send = false, write = false;
    void reset() noexcept { *this = Turn{}; }
};
thread_local Turn turn;
// The wait for the answer: when this thread last sent (and what: kWaitRaw for datbench's
// raw message, else which DAT exchange), when its last empty recv() returned, and whether
// it called epoll_wait since.
thread_local std::uint64_t sent_at = 0, empty_at = 0;
thread_local int sent_kind = kWaitRaw;
thread_local bool epolled = false;
// Ping-pong messages (send/recv, RDMA write) found by a recv() right after an empty one,
// and how many of those had an epoll_wait in between.
std::atomic<std::uint64_t> found_after_epoll{0}, found_total{0};

using RecvFn = ssize_t (*)(int, void *, std::size_t, int);
using RecvChkFn = ssize_t (*)(int, void *, std::size_t, std::size_t, int);
using SendFn = ssize_t (*)(int, const void *, std::size_t, int);
using SendmsgFn = ssize_t (*)(int, const msghdr *, int);
using DequeueFn = DAT_RETURN (*)(DAT_EVD_HANDLE, DAT_EVENT *);
using PostFn = DAT_RETURN (*)(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
                              DAT_COMPLETION_FLAGS);
using ExitFn = void (*)(int);
using RecvPostFn = PostFn;
using WriteFn = DAT_RETURN (*)(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
                               const DAT_RMR_TRIPLET *, DAT_COMPLETION_FLAGS);

// The next definition of `name` after ours, found once (the first call may come from
// another library's constructor, before ours ran).
template <typename F>
F real(std::atomic<F> &cache, const char *name) noexcept {
    F f = cache.load(std::memory_order_relaxed);
    if (f == nullptr) {
        f = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
        cache.store(f, std::memory_order_relaxed);
    }
    return f;
}
std::atomic<RecvFn> real_recv;
std::atomic<RecvChkFn> real_recv_chk;
std::atomic<SendFn> real_send;
std::atomic<SendmsgFn> real_sendmsg;
std::atomic<DequeueFn> real_dequeue;
std::atomic<PostFn> real_post_send;
std::atomic<RecvPostFn> real_post_recv;
std::atomic<WriteFn> real_post_write;
std::atomic<ExitFn> real_exit;
// Resolved before anything runs: a dlsym from inside syscall() could recurse into it.
std::atomic<long (*)(long, ...)> real_syscall;
[[gnu::constructor]] void resolve_syscall() noexcept {
    real(real_syscall, "syscall");
}

// A receive returned: a small message starts a turnaround (any other data ends one).
ssize_t received(ssize_t r) noexcept {
    if (r > 0) {
        turn.reset();
        empty_at = 0;
        if (r <= kMaxMsg) {
            turn.in = now_ns();
            stats[sent_kind].add(sent_at, turn.in);
        }
        sent_at = 0;
    } else if (r < 0) {
        const std::uint64_t t = now_ns();
        stats[sent_kind == kWaitRaw ? kPollRaw : kPollDat].add(empty_at, t);
        empty_at = t;
        epolled = false;
    }
    return r;
}

// A recv() of either entry point (recv, or __recv_chk under _FORTIFY_SOURCE): the call
// itself and the poll loop's path to it are timed, then received() as above.
template <typename Call>
ssize_t timed_recv(Call call) noexcept {
    const std::uint64_t t0 = now_ns();
    const std::uint64_t last_empty = empty_at;
    const ssize_t r = received(call());
    if (r > 0 && r <= kMaxMsg) {
        const bool raw = sent_kind == kWaitRaw;
        stats[raw ? kRecvRaw : kRecvDat].add(t0, turn.in);
        stats[raw ? kGapRaw : kGapDat].add(last_empty, t0);
        // The ping-pongs' messages only: an RDMA read's initiator and the bandwidth runs
        // wait in other ways, and their epoll rounds are not the poll loop's.
        if ((sent_kind == kWaitDat || sent_kind == kWaitDatWrite) && last_empty != 0) {
            found_total.fetch_add(1);
            if (epolled) found_after_epoll.fetch_add(1);
        }
    }
    return r;
}

// An answer leaves: close the interval it ends.
void answered(bool provider_send) noexcept {
    const std::uint64_t t = now_ns();
    Turn &c = turn;
    sent_at = t;
    sent_kind = !provider_send ? kWaitRaw
                : c.send       ? kWaitDat
                : c.write      ? kWaitDatWrite
                               : kWaitDatOther;
    empty_at = 0;
    if (c.in == 0) return;
    if (!provider_send) {
        stats[kRaw].add(c.in, t);
    } else if (c.send) {
        stats[kSendTotal].add(c.in, t);
        stats[kSendToDequeue].add(c.in, c.dequeued);
        stats[kDequeueToPost].add(c.dequeued, c.posted);
        stats[kPostToSendmsg].add(c.posted, t);
    } else if (c.write) {
        stats[kWriteTotal].add(c.in, t);
        stats[kWriteToPost].add(c.in, c.posted);
        stats[kWritePostToSendmsg].add(c.posted, t);
    } else {
        stats[kProvider].add(c.in, t);
    }
    c.reset();
}

double clock_cost_ns() noexcept {
    constexpr int kReads = 10000;
    const std::uint64_t t0 = now_ns();
    for (int i = 0; i < kReads; ++i) (void)now_ns();
    return static_cast<double>(now_ns() - t0) / kReads;
}

void print_report() noexcept {
    bool any = false;
    for (const Stat &s : stats) any = any || s.n.load() > 0;
    if (!any) return;
    std::fprintf(stderr, "turnaround pid %d (clock %.0f ns a read):\n", static_cast<int>(getpid()),
                 clock_cost_ns());
    if (found_total.load() > 0)
        std::fprintf(stderr, "turnaround-epoll %llu of %llu\n",
                     static_cast<unsigned long long>(found_after_epoll.load()),
                     static_cast<unsigned long long>(found_total.load()));
    for (const Stat &s : stats) {
        const std::uint64_t n = s.n.load();
        if (n == 0) continue;
        std::fprintf(stderr, "turnaround   %-44s median %6llu ns  mean %6.0f ns  n %llu\n", s.name,
                     static_cast<unsigned long long>(s.median()),
                     static_cast<double>(s.sum.load()) / static_cast<double>(n),
                     static_cast<unsigned long long>(n));
    }
}

// The provider's frames start with the wire magic; datbench's raw messages do not.
bool provider_frame(const void *buf, std::size_t len) noexcept {
    std::uint32_t magic = 0;
    if (buf == nullptr || len < sizeof magic) return false;
    std::memcpy(&magic, buf, sizeof magic);
    return magic == opendat::tcp::kWireMagic;
}

// send(), or its syscall(): the provider's frames against datbench's raw messages.
template <typename Call>
auto timed_send(const void *buf, std::size_t len, Call call) noexcept {
    const bool prov = provider_frame(buf, len);
    answered(prov);
    const std::uint64_t t0 = now_ns();
    auto r = call();
    if (len <= kMaxMsg) stats[prov ? kSendDat : kSendRaw].add(t0, now_ns());
    return r;
}

std::atomic<bool> reported{false};
void report_once() noexcept {
    if (!reported.exchange(true)) print_report();
}

// A process that returns from main reports here; one that leaves by _exit (datbench's
// forked server) reports in our _exit below.
struct Report {
    ~Report() { report_once(); }
} report;

}  // namespace

// The build hides symbols by default; these must be seen to take the place of libc's.
#define TURNAROUND_EXPORT __attribute__((visibility("default")))

extern "C" {

TURNAROUND_EXPORT ssize_t recv(int fd, void *buf, std::size_t len, int flags) {
    return timed_recv([&] { return real(real_recv, "recv")(fd, buf, len, flags); });
}

// What recv() becomes under _FORTIFY_SOURCE when the buffer's size is known (Debian's
// packaging flags).
TURNAROUND_EXPORT ssize_t __recv_chk(int fd, void *buf, std::size_t len, std::size_t buflen,
                                     int flags) {
    return timed_recv(
        [&] { return real(real_recv_chk, "__recv_chk")(fd, buf, len, buflen, flags); });
}

TURNAROUND_EXPORT ssize_t send(int fd, const void *buf, std::size_t len, int flags) {
    return timed_send(buf, len, [&] { return real(real_send, "send")(fd, buf, len, flags); });
}

TURNAROUND_EXPORT ssize_t sendmsg(int fd, const msghdr *msg, int flags) {
    answered(true);
    return real(real_sendmsg, "sendmsg")(fd, msg, flags);
}

// Only noted: whether a poll round asked epoll before the recv() that found a message.
TURNAROUND_EXPORT int epoll_wait(int epfd, epoll_event *ev, int n, int ms) {
    static std::atomic<int (*)(int, epoll_event *, int, int)> real_epoll;
    epolled = true;
    return real(real_epoll, "epoll_wait")(epfd, ev, n, ms);
}

// The provider makes its hot system calls through syscall(), which is no cancellation
// point (providers/util/sys_io.hpp): the same timing for them. syscall() reads six
// argument registers whatever the call, as glibc's own does.
TURNAROUND_EXPORT long syscall(long nr, ...) noexcept {
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (long &x : a) x = va_arg(ap, long);
    va_end(ap);
    auto call = [&] {
        return real(real_syscall, "syscall")(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    };
    switch (nr) {
        case SYS_recvfrom:
            return timed_recv(call);
        case SYS_sendto: {
            const auto *buf = reinterpret_cast<const void *>(a[1]);
            return timed_send(buf, static_cast<std::size_t>(a[2]), call);
        }
        case SYS_sendmsg:
            answered(true);
            return call();
        case SYS_epoll_pwait:
            epolled = true;
            return call();
        default:
            return call();
    }
}

TURNAROUND_EXPORT DAT_RETURN dat_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *event) {
    const DAT_RETURN r = real(real_dequeue, "dat_evd_dequeue")(evd, event);
    if (r == DAT_SUCCESS && turn.in != 0 && turn.dequeued == 0) turn.dequeued = now_ns();
    return r;
}

TURNAROUND_EXPORT DAT_RETURN dat_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                              DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
    if (turn.in != 0 && turn.dequeued != 0) {
        turn.send = true;
        turn.posted = now_ns();
    }
    return real(real_post_send, "dat_ep_post_send")(ep, n, iov, cookie, flags);
}

// The receive a ping-pong re-posts before it answers: provider work inside the app's part.
TURNAROUND_EXPORT DAT_RETURN dat_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                              DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
    const bool timed = turn.in != 0 && turn.dequeued != 0;
    const std::uint64_t t0 = timed ? now_ns() : 0;
    const DAT_RETURN r = real(real_post_recv, "dat_ep_post_recv")(ep, n, iov, cookie, flags);
    if (timed) stats[kPostRecv].add(t0, now_ns());
    return r;
}

TURNAROUND_EXPORT DAT_RETURN dat_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n,
                                                    DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                                                    const DAT_RMR_TRIPLET *remote,
                                                    DAT_COMPLETION_FLAGS flags) {
    if (turn.in != 0) {
        turn.write = true;
        turn.posted = now_ns();
    }
    return real(real_post_write, "dat_ep_post_rdma_write")(ep, n, iov, cookie, remote, flags);
}

TURNAROUND_EXPORT [[noreturn]] void _exit(int status) {
    report_once();
    real(real_exit, "_exit")(status);
    __builtin_unreachable();
}

}  // extern "C"

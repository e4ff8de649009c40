// The system calls of a provider's hot paths (post, dequeue, wire I/O), made without
// glibc's cancellation-point wrappers.
//
// A consumer thread runs these inside dat_evd_dequeue and dat_ep_post_*; the entry points
// cannot hold cancellation off for them (two atomic operations per call, on the path a
// polling consumer takes millions of times a second), so the calls themselves must not be
// cancellation points (no_cancel.hpp says why a cancellation inside a provider is fatal).
// glibc's syscall() is not one, and it also skips the wrappers' per-call cancellation
// bookkeeping. ThreadSanitizer builds keep the libc functions: their interceptors are how
// it sees the ordering an eventfd or a socket creates between threads.
#pragma once

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <csignal>
#include <ctime>

#if defined(__SANITIZE_THREAD__)
#define OPENDAT_SYS_VIA_LIBC 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OPENDAT_SYS_VIA_LIBC 1
#endif
#endif

namespace opendat::sys {

#ifdef OPENDAT_SYS_VIA_LIBC
inline ssize_t recv(int fd, void *buf, size_t n, int flags) noexcept {
    return ::recv(fd, buf, n, flags);
}
inline ssize_t send(int fd, const void *buf, size_t n, int flags) noexcept {
    return ::send(fd, buf, n, flags);
}
inline ssize_t sendmsg(int fd, const msghdr *m, int flags) noexcept {
    return ::sendmsg(fd, m, flags);
}
inline ssize_t readv(int fd, const iovec *iov, int n) noexcept {
    return ::readv(fd, iov, n);
}
inline ssize_t read(int fd, void *buf, size_t n) noexcept {
    return ::read(fd, buf, n);
}
inline ssize_t write(int fd, const void *buf, size_t n) noexcept {
    return ::write(fd, buf, n);
}
inline int epoll_wait(int epfd, epoll_event *ev, int n, int timeout_ms) noexcept {
    return ::epoll_wait(epfd, ev, n, timeout_ms);
}
inline int close(int fd) noexcept {
    return ::close(fd);
}
inline int accept4(int fd, sockaddr *a, socklen_t *len, int flags) noexcept {
    return ::accept4(fd, a, len, flags);
}
inline int connect(int fd, const sockaddr *a, socklen_t len) noexcept {
    return ::connect(fd, a, len);
}
inline int poll(pollfd *fds, nfds_t n, int timeout_ms) noexcept {
    return ::poll(fds, n, timeout_ms);
}
inline int nanosleep(const timespec *t) noexcept {
    return ::nanosleep(t, nullptr);
}
#else
inline ssize_t recv(int fd, void *buf, size_t n, int flags) noexcept {
    return ::syscall(SYS_recvfrom, fd, buf, n, flags, nullptr, nullptr);
}
inline ssize_t send(int fd, const void *buf, size_t n, int flags) noexcept {
    return ::syscall(SYS_sendto, fd, buf, n, flags, nullptr, 0);
}
inline ssize_t sendmsg(int fd, const msghdr *m, int flags) noexcept {
    return ::syscall(SYS_sendmsg, fd, m, flags);
}
inline ssize_t readv(int fd, const iovec *iov, int n) noexcept {
    return ::syscall(SYS_readv, fd, iov, n);
}
inline ssize_t read(int fd, void *buf, size_t n) noexcept {
    return ::syscall(SYS_read, fd, buf, n);
}
inline ssize_t write(int fd, const void *buf, size_t n) noexcept {
    return ::syscall(SYS_write, fd, buf, n);
}
// epoll_pwait with no signal mask is epoll_wait, and exists on every architecture.
inline int epoll_wait(int epfd, epoll_event *ev, int n, int timeout_ms) noexcept {
    return static_cast<int>(
        ::syscall(SYS_epoll_pwait, epfd, ev, n, timeout_ms, nullptr, _NSIG / 8));
}
inline int close(int fd) noexcept {
    return static_cast<int>(::syscall(SYS_close, fd));
}
inline int accept4(int fd, sockaddr *a, socklen_t *len, int flags) noexcept {
    return static_cast<int>(::syscall(SYS_accept4, fd, a, len, flags));
}
inline int connect(int fd, const sockaddr *a, socklen_t len) noexcept {
    return static_cast<int>(::syscall(SYS_connect, fd, a, len));
}
// ppoll, which every architecture has (aarch64 has no poll); a negative timeout waits.
inline int poll(pollfd *fds, nfds_t n, int timeout_ms) noexcept {
    timespec ts{timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1000000L};
    return static_cast<int>(
        ::syscall(SYS_ppoll, fds, n, timeout_ms < 0 ? nullptr : &ts, nullptr, _NSIG / 8));
}
// clock_nanosleep on CLOCK_MONOTONIC, relative: every architecture has it.
inline int nanosleep(const timespec *t) noexcept {
    return static_cast<int>(::syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, t, nullptr));
}
#endif

// recv and send for the data path's hottest calls (a polled connection's every round and a
// ping-pong's every send), returning the kernel's answer as it is: the byte count, or
// -errno, with errno left alone. On x86-64 the system call is made in line: glibc's
// syscall() is one more function, one more PLT entry and GOT line, and errno one more
// thread-local store, each a line or two to fetch again after every system call on a
// machine whose system calls cool the caches (docs/benchmarks.md, "What a line costs").
// Elsewhere, in ThreadSanitizer builds, and where OPENDAT_SYS_VIA_SYSCALL_FN is defined
// (the copy of the tcp provider that tools/bench_turnaround.sh loads, whose preload times
// the provider's system calls by interposing syscall()), through the functions above.
#if defined(__x86_64__) && !defined(OPENDAT_SYS_VIA_LIBC) && !defined(OPENDAT_SYS_VIA_SYSCALL_FN)
[[gnu::always_inline]] inline long syscall6(long nr, long a1, long a2, long a3, long a4, long a5,
                                            long a6) noexcept {
    long ret;
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
[[gnu::always_inline]] inline long recv_raw(int fd, void *buf, size_t n, int flags) noexcept {
    return syscall6(SYS_recvfrom, fd, reinterpret_cast<long>(buf), static_cast<long>(n), flags, 0,
                    0);
}
[[gnu::always_inline]] inline long send_raw(int fd, const void *buf, size_t n, int flags) noexcept {
    return syscall6(SYS_sendto, fd, reinterpret_cast<long>(buf), static_cast<long>(n), flags, 0, 0);
}
#else
inline long recv_raw(int fd, void *buf, size_t n, int flags) noexcept {
    const ssize_t r = recv(fd, buf, n, flags);
    return r < 0 ? -errno : r;
}
inline long send_raw(int fd, const void *buf, size_t n, int flags) noexcept {
    const ssize_t r = send(fd, buf, n, flags);
    return r < 0 ? -errno : r;
}
#endif

// Adds one to an eventfd, waking whoever polls it; a failure (a full counter, a closed or
// negative fd) wakes nobody, which the callers' own looks cover.
inline void signal_eventfd(int fd) noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(fd, &one, sizeof one);
}

}  // namespace opendat::sys

#include "handle_check.hpp"

#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cancel/no_cancel.hpp>
#include <trace/trace.hpp>

#include <cerrno>
#include <mutex>

namespace opendat::dat::handles {

std::atomic<std::uintptr_t> g_readable[kCacheSlots];
std::atomic<const DAT_PROVIDER *> g_providers[kMaxProviders];
std::atomic<std::size_t> g_provider_slots{0};

namespace {
std::mutex g_providers_mu;  // writers only

// Our pid, so a probe is one system call. A forked child must not read its parent's memory:
// the child handler resets it.
std::atomic<pid_t> g_pid{0};
void reset_pid() noexcept {
    g_pid.store(0, std::memory_order_relaxed);
}
pid_t own_pid() noexcept {
    pid_t p = g_pid.load(std::memory_order_relaxed);
    if (p != 0) return p;
    static const bool registered = pthread_atfork(nullptr, nullptr, reset_pid) == 0;
    p = getpid();
    if (registered) g_pid.store(p, std::memory_order_relaxed);
    return p;
}

// Reads 8 bytes at `address` without faulting: process_vm_readv on ourselves answers
// EFAULT for an unmapped or unreadable address. Where the call is not allowed (a seccomp
// filter, an old kernel), write(2) into a pipe gives the same answer.
bool readable_by_kernel(std::uintptr_t address) noexcept {
    std::uint64_t word = 0;
    iovec local{&word, sizeof word};
    iovec remote{reinterpret_cast<void *>(address), sizeof word};
    const ssize_t n = process_vm_readv(own_pid(), &local, 1, &remote, 1, 0);
    if (n == static_cast<ssize_t>(sizeof word)) return true;
    if (n < 0 && errno == EFAULT) return false;
    // Reached from the hot calls (a post, a dequeue), which hold no cancellation off:
    // pipe, write and close are cancellation points (cancel/no_cancel.hpp).
    NoCancel nc;
    int fds[2];
    if (pipe(fds) != 0) return false;
    const ssize_t w = write(fds[1], reinterpret_cast<const void *>(address), sizeof word);
    close(fds[0]);
    close(fds[1]);
    return w == static_cast<ssize_t>(sizeof word);
}
}  // namespace

bool probe_readable(std::uintptr_t address) noexcept {
    const int saved = errno;
    const bool ok = readable_by_kernel(address);
    errno = saved;
    if (ok) {
        const std::uintptr_t page = address >> kPageShift;
        g_readable[slot_of(page)].store(page, std::memory_order_relaxed);
    }
    return ok;
}

void refused(const char *function, const void *handle, const char *why) noexcept {
    DAT_TRC(trace::kNormal, "api", "%s(%p): handle refused: %s", function, handle, why);
}

void provider_added(const DAT_PROVIDER *p) noexcept {
    std::lock_guard lk(g_providers_mu);
    const std::size_t n = g_provider_slots.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
        if (g_providers[i].load(std::memory_order_relaxed) == nullptr) {
            g_providers[i].store(p, std::memory_order_release);
            return;
        }
    }
    if (n == kMaxProviders) {
        DAT_TRC(trace::kError, "api", "more than %zu provider tables: handles of %p refused",
                kMaxProviders, static_cast<const void *>(p));
        return;
    }
    g_providers[n].store(p, std::memory_order_release);
    g_provider_slots.store(n + 1, std::memory_order_release);
}

void provider_removed(const DAT_PROVIDER *p) noexcept {
    std::lock_guard lk(g_providers_mu);
    const std::size_t n = g_provider_slots.load(std::memory_order_relaxed);
    // One slot per registration: a table registered twice stays known until both go.
    for (std::size_t i = 0; i < n; ++i) {
        if (g_providers[i].load(std::memory_order_relaxed) == p) {
            g_providers[i].store(nullptr, std::memory_order_release);
            break;
        }
    }
    forget_all_pages();
}

void forget_all_pages() noexcept {
    for (auto &s : g_readable) s.store(0, std::memory_order_relaxed);
}

}  // namespace opendat::dat::handles

// FutexMutex's contended paths: sleeping in the kernel and waking a sleeper.
#include "util/futex_mutex.hpp"

#include <linux/futex.h>
#include <cerrno>
#include <sys/syscall.h>
#include <unistd.h>

namespace opendat::util {

namespace {

// The kernel reads and compares the word as a plain 32-bit integer.
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
              std::atomic<std::uint32_t>::is_always_lock_free);

// syscall(), not a libc wrapper: no cancellation point (util/sys_io.hpp). errno is kept:
// FUTEX_WAIT fails routinely (EAGAIN, EINTR), and taking a lock must not change what the
// application or the provider's own code reads there, as pthread_mutex_lock does not.
void futex(std::atomic<std::uint32_t> *word, int op, std::uint32_t value) noexcept {
    const int saved = errno;
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t *>(word), op, value, nullptr, nullptr, 0);
    errno = saved;
}

}  // namespace

void FutexMutex::lock_slow() noexcept {
    // Marked 2 whenever this thread may sleep, so that the unlock wakes somebody. A thread
    // that takes the lock this way leaves it at 2 although nobody may sleep any more: its
    // unlock then makes one needless wake-up call, never a lost one. FUTEX_WAIT returns at
    // once if the word is no longer 2 (EAGAIN), on a signal (EINTR), or when woken; each
    // time the exchange decides again.
    while (word_.exchange(kSleepers, std::memory_order_acquire) != kFree)
        futex(&word_, FUTEX_WAIT_PRIVATE, kSleepers);
}

void FutexMutex::wake_one() noexcept {
    futex(&word_, FUTEX_WAKE_PRIVATE, 1);
}

}  // namespace opendat::util

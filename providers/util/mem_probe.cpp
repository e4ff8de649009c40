#include "util/mem_probe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "trace/trace.hpp"
#include "util/status.hpp"

namespace opendat::util {

namespace {

// Reads /proc/self/maps line by line into a fixed buffer (no allocation).
class MapsReader {
  public:
    MapsReader() : fd_(::open("/proc/self/maps", O_RDONLY | O_CLOEXEC)) {}
    ~MapsReader() {
        if (fd_ >= 0) ::close(fd_);
    }
    bool ok() const noexcept { return fd_ >= 0; }
    // One mapping: [lo, hi) and whether it is readable / writable.
    bool next(std::uint64_t *lo, std::uint64_t *hi, bool *r, bool *w) noexcept {
        for (;;) {
            char *nl = static_cast<char *>(std::memchr(buf_ + pos_, '\n', len_ - pos_));
            if (nl == nullptr) {
                if (!refill()) return false;
                continue;
            }
            *nl = '\0';
            const char *line = buf_ + pos_;
            pos_ = static_cast<std::size_t>(nl - buf_) + 1;
            unsigned long long a = 0, b = 0;
            char perms[8] = {};
            if (std::sscanf(line, "%llx-%llx %7s", &a, &b, perms) != 3) continue;
            *lo = a;
            *hi = b;
            *r = perms[0] == 'r';
            *w = perms[1] == 'w';
            return true;
        }
    }

  private:
    bool refill() noexcept {
        std::memmove(buf_, buf_ + pos_, len_ - pos_);
        len_ -= pos_;
        pos_ = 0;
        if (len_ == sizeof buf_) len_ = 0;  // an absurd line: drop it
        ssize_t n = ::read(fd_, buf_ + len_, sizeof buf_ - len_);
        if (n <= 0) return false;
        len_ += static_cast<std::size_t>(n);
        return true;
    }
    int fd_;
    char buf_[4096];
    std::size_t pos_ = 0, len_ = 0;
};

}  // namespace

DAT_RETURN probe_registration(std::uint64_t addr, std::uint64_t len,
                              DAT_MEM_PRIV_FLAGS priv) noexcept {
    if (len == 0) return DAT_SUCCESS;
    // A remote atomic (DAT_IB_MEM_PRIV_REMOTE_ATOMIC, 0x40) writes its result too.
    const bool need_write = (priv & (DAT_MEM_PRIV_LOCAL_WRITE_FLAG |
                                     DAT_MEM_PRIV_REMOTE_WRITE_FLAG | DAT_MEM_PRIV_EXTENSION_BASE));
    MapsReader maps;
    if (!maps.ok()) return DAT_SUCCESS;  // no procfs: nothing to check with, as before
    std::uint64_t cur = addr, end = addr + len;
    std::uint64_t lo, hi;
    bool r, w;
    // /proc/self/maps lists mappings in address order: walk them across the range.
    while (cur < end && maps.next(&lo, &hi, &r, &w)) {
        if (hi <= cur) continue;
        if (lo > cur) break;  // a hole
        if (!r) break;
        if (need_write && !w) {
            DAPL_TRC(trace::kInfo, "mem",
                     "dat_lmr_create: 0x%llx..0x%llx is read-only, cannot grant write access",
                     static_cast<unsigned long long>(addr), static_cast<unsigned long long>(end));
            return err(DAT_PRIVILEGES_VIOLATION);
        }
        cur = hi;
    }
    if (cur >= end) return DAT_SUCCESS;
    DAPL_TRC(trace::kInfo, "mem", "dat_lmr_create: 0x%llx..0x%llx is not mapped readable at 0x%llx",
             static_cast<unsigned long long>(addr), static_cast<unsigned long long>(end),
             static_cast<unsigned long long>(cur));
    return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
}

}  // namespace opendat::util

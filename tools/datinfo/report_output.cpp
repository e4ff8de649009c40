#include "report_output.hpp"

#include <cerrno>
#include <cstdio>

#include <fcntl.h>
#include <unistd.h>

namespace datinfo {

ReportOutput::ReportOutput() noexcept {
    std::fflush(stdout);
    saved_stdout_ = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (saved_stdout_ >= 0 && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        close(saved_stdout_);
        saved_stdout_ = -1;
    }
}

ReportOutput::~ReportOutput() {
    if (saved_stdout_ < 0) return;
    std::fflush(stdout);
    dup2(saved_stdout_, STDOUT_FILENO);
    close(saved_stdout_);
}

bool ReportOutput::write(const std::string &text) noexcept {
    std::fflush(stdout);  // provider output so far goes out first
    const int fd = saved_stdout_ >= 0 ? saved_stdout_ : STDOUT_FILENO;
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace datinfo

// Destinations of trace lines. Files are opened only while configuring; the emit path does
// nothing but write(2) (and syslog(3) when asked for).
#include "trace/sink.hpp"

#include "trace/environment.hpp"
#include "trace/line.hpp"
#include "trace/trace.hpp"

#include <cancel/no_cancel.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <syslog.h>
#include <unistd.h>

namespace opendat::trace::detail {

using opendat::NoCancel;

namespace {

constexpr SinkSet make_default() noexcept {
    SinkSet s;
    s.dests = kDestStderr;
    s.fds[0] = STDERR_FILENO;
    s.nfds = 1;
    return s;
}

constinit const SinkSet g_default_sinks = make_default();

void write_all(int fd, const char *p, std::size_t len) noexcept {
    while (len > 0) {
        const ssize_t n = ::write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;  // nowhere to report a failing trace destination; drop the line
        }
        p += n;
        len -= static_cast<std::size_t>(n);
    }
}

}  // namespace

const SinkSet &default_sinks() noexcept {
    return g_default_sinks;
}

void open_sinks(SinkSet &set, Warnings &warnings) noexcept {
    NoCancel nc;  // open(2) is a cancellation point (cancel/no_cancel.hpp)
    int opened = 0;
    for (int i = 0; i < set.nfiles; ++i) {
        // O_APPEND: concurrent processes appending to one file never overwrite each other.
        const int fd =
            ::open(set.paths[i], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0) {
            const int err = errno;
            char quoted[kQuotedMax];
            quote(set.paths[i], quoted, sizeof quoted);
            warnings.add("cannot open trace file %s (from %s): %s; using stderr instead", quoted,
                         set.source_env ? set.source_env : "?", std::strerror(err));
            set.dests |= kDestStderr;
            continue;
        }
        if (opened != i) std::memcpy(set.paths[opened], set.paths[i], sizeof set.paths[i]);
        set.fds[2 + opened] = fd;
        ++opened;
    }
    for (int i = opened; i < set.nfiles; ++i) set.paths[i][0] = '\0';
    set.nfiles = opened;
    if (opened > 0) set.dests |= kDestFile;

    // Pack the descriptors: stderr, stdout, files.
    int n = 0;
    int fds[2 + kMaxFiles] = {};
    if (set.dests & kDestStderr) fds[n++] = STDERR_FILENO;
    if (set.dests & kDestStdout) fds[n++] = STDOUT_FILENO;
    for (int i = 0; i < opened; ++i) fds[n++] = set.fds[2 + i];
    std::memcpy(set.fds, fds, sizeof fds);
    set.nfds = n;
}

void write_line(const SinkSet &set, int level, const char *line, std::size_t len) noexcept {
    // write(2) and syslog(3) are cancellation points, and a line may come from a hot path
    // (a frame, a refused post) that holds no cancellation off itself.
    NoCancel nc;
    for (int i = 0; i < set.nfds; ++i) write_all(set.fds[i], line, len);
    if (set.dests & kDestSyslog) {
        // No openlog(): the process's ident and options are its own business. syslog adds
        // its own time stamp, but we keep the full line so that it greps like the others.
        // (glibc's syslog() may allocate internally; the descriptor sinks never do.)
        const int body =
            len > 0 && line[len - 1] == '\n' ? static_cast<int>(len - 1) : static_cast<int>(len);
        ::syslog(LOG_USER | syslog_priority(level), "%.*s", body, line);
    }
}

}  // namespace opendat::trace::detail

// Formatting of one trace line into a caller-provided buffer. No heap, no locks: this runs on
// the emit path of every enabled trace point.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <ctime>

namespace opendat::trace::detail {

// A line never exceeds PIPE_BUF bytes, so even a write(2) to a pipe is atomic and lines of
// concurrent threads and processes never interleave.
constexpr std::size_t kLineMax = 4096;
// Appended (before the newline) to a message that did not fit.
constexpr char kTruncatedMarker[] = "...[truncated]";

// "ERR" for level <= 1, "WRN" for 2, "EVT" for 3 and above.
const char *kind_name(int level) noexcept;
// syslog(3) priority: LOG_ERR for level <= 1, LOG_WARNING for 2, LOG_INFO up to 5, LOG_DEBUG above.
int syslog_priority(int level) noexcept;

// "2026-11-21T14:20:01.123456Z" (27 chars + NUL; size must be >= 28). Returns the length.
std::size_t format_utc(char *out, std::size_t size, const timespec &ts) noexcept;

// Formats "<who> <kind> <UTC time> pid=<pid> tid=<tid> <where>: <message>\n" into buf
// ("<where>(<func>:<line>): " when func is not null)
// (size >= 256, usually kLineMax) and returns its length including the newline (no NUL is
// counted). Newlines inside the message become spaces and trailing ones are dropped, so
// one call is one line; a message that does not fit ends in kTruncatedMarker. errno is set to
// saved_errno before the message is formatted so that %m reports the caller's errno.
std::size_t format_line(char *buf, std::size_t size, const char *who, int level, const char *where,
                        const char *func, int line, int saved_errno, const char *fmt,
                        va_list ap) noexcept;

}  // namespace opendat::trace::detail

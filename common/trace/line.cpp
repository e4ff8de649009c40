// One trace line: prefix (who, kind, time, pid, tid, where) and the caller's message.
#include "trace/line.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <syslog.h>
#include <unistd.h>

namespace opendat::trace::detail {

const char *kind_name(int level) noexcept {
    if (level <= 1) return "ERR";
    if (level == 2) return "WRN";
    return "EVT";
}

int syslog_priority(int level) noexcept {
    if (level <= 1) return LOG_ERR;
    if (level == 2) return LOG_WARNING;
    if (level <= 5) return LOG_INFO;
    return LOG_DEBUG;
}

namespace {

// Days since 1970-01-01 -> civil date (H. Hinnant's algorithm). Done by hand rather than
// with gmtime_r, whose first call may take glibc's timezone lock and allocate.
void civil_from_days(long long z, int &y, unsigned &m, unsigned &d) noexcept {
    z += 719468;
    const long long era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const long long yy = static_cast<long long>(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = static_cast<int>(yy + (m <= 2 ? 1 : 0));
}

}  // namespace

std::size_t format_utc(char *out, std::size_t size, const timespec &ts) noexcept {
    long long secs = ts.tv_sec;
    long long days = secs / 86400;
    long long rem = secs % 86400;
    if (rem < 0) {  // floor division for times before 1970
        rem += 86400;
        --days;
    }
    int y;
    unsigned mo, d;
    civil_from_days(days, y, mo, d);
    const int n = std::snprintf(out, size, "%04d-%02u-%02uT%02lld:%02lld:%02lld.%06ldZ", y, mo, d,
                                rem / 3600, rem / 60 % 60, rem % 60, ts.tv_nsec / 1000);
    if (n < 0) return 0;
    return static_cast<std::size_t>(n) < size ? static_cast<std::size_t>(n) : size - 1;
}

std::size_t format_line(char *buf, std::size_t size, const char *who, int level, const char *where,
                        const char *func, int line, int saved_errno, const char *fmt,
                        va_list ap) noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    char when[40];
    format_utc(when, sizeof when, ts);

    // `where` is a short tag; cap it so the prefix always leaves room for the message.
    // The function name is capped too (a lambda's or template's can be long).
    int n = func ? std::snprintf(buf, size,
                                 "%s %s %s pid=%ld tid=%ld %.64s(%.64s:%d): ", who ? who : "?",
                                 kind_name(level), when, static_cast<long>(getpid()),
                                 static_cast<long>(gettid()), where ? where : "-", func, line)
                 : std::snprintf(buf, size, "%s %s %s pid=%ld tid=%ld %.64s: ", who ? who : "?",
                                 kind_name(level), when, static_cast<long>(getpid()),
                                 static_cast<long>(gettid()), where ? where : "-");
    if (n < 0) n = 0;
    const std::size_t pos =
        static_cast<std::size_t>(n) < size ? static_cast<std::size_t>(n) : size - 1;

    // room counts the NUL vsnprintf writes; that slot becomes our newline.
    const std::size_t room = size - pos;
    errno = saved_errno;  // for %m
    int m = fmt ? std::vsnprintf(buf + pos, room, fmt, ap) : 0;
    std::size_t msg_len;
    if (m < 0) {  // encoding error: say so rather than dropping the line
        static constexpr char kBad[] = "(unformattable trace message)";
        msg_len = sizeof kBad - 1 < room - 1 ? sizeof kBad - 1 : room - 1;
        std::memcpy(buf + pos, kBad, msg_len);
    } else if (static_cast<std::size_t>(m) > room - 1) {
        constexpr std::size_t marker = sizeof kTruncatedMarker - 1;
        msg_len = room - 1 - marker;
        std::memcpy(buf + pos + msg_len, kTruncatedMarker, marker);
    } else {
        msg_len = static_cast<std::size_t>(m);
        // Callers used to printf-style tracing often end with "\n"; we add our own.
        while (msg_len > 0 && (buf[pos + msg_len - 1] == '\n' || buf[pos + msg_len - 1] == '\r'))
            --msg_len;
    }
    // Keep one record per line for whoever parses the output.
    for (std::size_t i = pos; i < pos + msg_len; ++i)
        if (buf[i] == '\n' || buf[i] == '\r') buf[i] = ' ';
    std::size_t end = pos + msg_len;
    if (m >= 0 && static_cast<std::size_t>(m) > room - 1) end += sizeof kTruncatedMarker - 1;
    buf[end] = '\n';
    return end + 1;
}

}  // namespace opendat::trace::detail

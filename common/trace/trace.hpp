// OpenDAT trace facility: levelled, timestamped trace lines for the front end (domain "DAT")
// and for providers (domain "DAPL").
//
// Levels are 0..10: 0 off, 1 errors, 3 normal, 7 detail, 10 everything (data dumps).
// A disabled trace point costs one relaxed atomic load: OPENDAT_TRACE tests the level
// before it evaluates any argument.
//
// Configuration (read at load, see environment.cpp): <WHO>_TRACE_LEVEL, <WHO>_TRACE_DEST and
// the reference's <WHO>_DBG_TYPE / <WHO>_DBG_DEST, with WHO = DAT or DAPL.
// Line format (line.cpp), one write(2) per line:
//   DAT ERR 2026-11-21T14:20:01.123456Z pid=1234 tid=1235 registry: message
// At a domain level of 7 (detail) or more every line also names its source:
//   DAPL EVT 2026-11-21T14:20:01.123456Z pid=1234 tid=1235 tcp(rx_progress:161): message
// <WHO>_TRACE_SUBSYS=tag,tag keeps only those tags (and their "tag.*" children) above
// warning level. Level 10 (kData) traces every frame of the tcp provider (tag tcp.frame).
// Per-frame errors use the rate-limited macros (DAPL_TRC_RL): at most N lines per second
// per call site, then one line saying how many were suppressed.
#pragma once

#include <atomic>
#include <cstdarg>

namespace opendat::trace {

namespace detail {
struct SinkSet;  // sink.hpp: an immutable set of destinations
}

// The "one relaxed load" promise only holds if the level is a lock-free atomic.
static_assert(std::atomic<int>::is_always_lock_free, "trace level must be a lock-free atomic");

// Destinations a domain writes to (Domain::destinations() returns a bit set of these).
enum Destination : unsigned {
    kDestStderr = 1u << 0,
    kDestStdout = 1u << 1,
    kDestSyslog = 1u << 2,
    kDestFile = 1u << 3,
};

enum Level : int {
    kOff = 0,
    kError = 1,
    kWarn = 2,
    kNormal = 3,
    kInfo = 5,
    kDetail = 7,
    kDebug = 9,
    kData = 10,
};

constexpr int kMinLevel = 0;
constexpr int kMaxLevel = 10;

// Names of the environment variables that configure one domain.
struct DomainSpec {
    const char *who;        // "DAT" or "DAPL": first word of every line
    const char *level_env;  // DAT_TRACE_LEVEL / DAPL_TRACE_LEVEL (0..10)
    const char *dest_env;   // DAT_TRACE_DEST / DAPL_TRACE_DEST (stderr|stdout|syslog|file path)
    const char *legacy_type_env;  // DAT_DBG_TYPE / DAPL_DBG_TYPE (reference bit mask)
    const char *legacy_dest_env;  // DAT_DBG_DEST / DAPL_DBG_DEST (1 stdout, 2 syslog, 3 both)
    const char *subsys_env;       // DAT_TRACE_SUBSYS / DAPL_TRACE_SUBSYS (tag filter)
    int default_level;
};

class Domain {
  public:
    explicit constexpr Domain(const DomainSpec &spec)
        : spec_(spec), level_(spec.default_level), sinks_(nullptr) {}
    Domain(const Domain &) = delete;
    Domain &operator=(const Domain &) = delete;

    bool enabled(int level) const noexcept {
        return level <= level_.load(std::memory_order_relaxed);
    }
    int level() const noexcept { return level_.load(std::memory_order_relaxed); }
    // Clamps to 0..10 and returns the level now in force.
    int set_level(int level) noexcept;

    // Reads the domain's environment variables (level and destination). Called once when
    // the module loads; tests call it again after changing the environment. The result
    // depends only on the environment: unset variables give the defaults (level
    // spec.default_level, destination stderr), and a level set with set_level() is
    // replaced. With the four variables unchanged since the last call, only the level is
    // re-applied: files are not reopened and warnings are not repeated. Safe against
    // concurrent emit(): new destinations are published atomically and the old ones stay
    // valid until exit. Not safe against a concurrent setenv() (getenv is not).
    void configure_from_environment() noexcept;

    // Bit set of Destination values now in force.
    unsigned destinations() const noexcept;
    // Path (after %p/%h expansion) of the index-th file destination now in force, or
    // nullptr. The string stays valid until exit.
    const char *file_path(int index = 0) const noexcept;

    const DomainSpec &spec() const noexcept { return spec_; }

    // Frees every destination set and closes the trace files. Only for the module's
    // destructor (dlclose of a provider, exit): nothing of this module can trace any more.
    void release_at_unload() noexcept;

    // Writes one line: "<who> <ERR|WRN|EVT> <UTC time> pid=<pid> tid=<tid> <where>: <message>".
    void emit(int level, const char *where, const char *fmt, ...) noexcept
        __attribute__((format(printf, 4, 5)));
    void vemit(int level, const char *where, const char *fmt, va_list ap) noexcept;
    // A configuration problem (a variable the user set to a value that cannot be used):
    // one kWarn line whenever the domain is on at all, so also at the default level 1
    // where other warnings are dropped, by the rule configure_from_environment() applies
    // to the trace variables themselves (the user asked for something and did not get it).
    void config_warning(const char *where, const char *fmt, ...) noexcept
        __attribute__((format(printf, 3, 4)));
    // The same, from a call site: at domain level >= kDetail the line shows func and line
    // ("<where>(<func>:<line>): ..."). Lines above kWarn whose tag the subsystem filter does
    // not select are dropped. The macros below use this.
    void emit_at(int level, const char *where, const char *func, int line, const char *fmt,
                 ...) noexcept __attribute__((format(printf, 6, 7)));

    // True if the subsystem filter in force lets a line of this tag and level through.
    bool selects(int level, const char *where) const noexcept;

  private:
    const detail::SinkSet &sinks() const noexcept;

    DomainSpec spec_;
    std::atomic<int> level_;
    // nullptr until configured: stderr. Sets are never freed (each links its predecessor),
    // so an emitter that loaded an old pointer can finish its write safely.
    std::atomic<const detail::SinkSet *> sinks_;
};

// The front end and registry trace through dat_domain(); providers through dapl_domain().
extern constinit Domain g_dat_domain;
extern constinit Domain g_dapl_domain;
inline Domain &dat_domain() noexcept {
    return g_dat_domain;
}
inline Domain &dapl_domain() noexcept {
    return g_dapl_domain;
}

// Admits at most `per_second` lines per second for one call site (the macros give each
// call site its own static RateLimit) and counts the rest. Lock-free; approximate under
// contention (a few lines more or less at a second's edge), never blocking.
class RateLimit {
  public:
    constexpr RateLimit() = default;
    // True if this line may be written; *suppressed is then the number of lines dropped
    // since the last admitted one (0 most of the time).
    bool admit(unsigned per_second, unsigned *suppressed) noexcept;

  private:
    std::atomic<long long> second_{-1};
    std::atomic<unsigned> used_{0};
    std::atomic<unsigned> dropped_{0};
};

}  // namespace opendat::trace

#define OPENDAT_TRACE(domain, lvl, where, ...)                                 \
    do {                                                                       \
        if ((domain).enabled(lvl))                                             \
            (domain).emit_at((lvl), (where), __func__, __LINE__, __VA_ARGS__); \
    } while (0)

// For errors that can repeat per frame or per request: at most `per_second` lines per second
// from this call site; the next admitted line is preceded by "<n> similar lines suppressed".
#define OPENDAT_TRACE_RL(domain, lvl, where, per_second, ...)                                    \
    do {                                                                                         \
        if ((domain).enabled(lvl)) {                                                             \
            static constinit ::opendat::trace::RateLimit opendat_trace_rl_;                      \
            unsigned opendat_trace_dropped_ = 0;                                                 \
            if (opendat_trace_rl_.admit((per_second), &opendat_trace_dropped_)) {                \
                if (opendat_trace_dropped_ != 0)                                                 \
                    (domain).emit_at((lvl), (where), __func__, __LINE__,                         \
                                     "%u similar lines suppressed (limit %u per second)",        \
                                     opendat_trace_dropped_, static_cast<unsigned>(per_second)); \
                (domain).emit_at((lvl), (where), __func__, __LINE__, __VA_ARGS__);               \
            }                                                                                    \
        }                                                                                        \
    } while (0)

// Front end / registry: DAT_TRC(opendat::trace::kError, "registry", "bad line %d", n)
#define DAT_TRC(lvl, where, ...) \
    OPENDAT_TRACE(::opendat::trace::g_dat_domain, lvl, where, __VA_ARGS__)
// Providers
#define DAPL_TRC(lvl, where, ...) \
    OPENDAT_TRACE(::opendat::trace::g_dapl_domain, lvl, where, __VA_ARGS__)
// Rate-limited variants: DAPL_TRC_RL(kError, "tcp", 10, "EP %p: bad frame", ep)
#define DAT_TRC_RL(lvl, where, per_second, ...) \
    OPENDAT_TRACE_RL(::opendat::trace::g_dat_domain, lvl, where, per_second, __VA_ARGS__)
#define DAPL_TRC_RL(lvl, where, per_second, ...) \
    OPENDAT_TRACE_RL(::opendat::trace::g_dapl_domain, lvl, where, per_second, __VA_ARGS__)
// Every frame a provider sends or receives, at kData (level 10), tag "<provider>.frame".
#define DAPL_TRC_FRAME(tag, ...) DAPL_TRC(::opendat::trace::kData, tag, __VA_ARGS__)

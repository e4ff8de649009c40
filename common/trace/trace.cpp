// Domain: run-time level, configuration from the environment and the emit path. The two
// domain objects themselves are in dat_domain.cpp and dapl_domain.cpp.
//
// Emit path (only reached when a trace point is enabled): format into a stack buffer,
// load the current sink set with one acquire load, one write(2) per destination. No heap,
// no lock, errno preserved.
#include "trace/trace.hpp"

#include <unistd.h>

#include <cstdlib>

#include "trace/environment.hpp"
#include "trace/line.hpp"
#include "trace/sink.hpp"

#include <cerrno>
#include <ctime>
#include <new>

namespace opendat::trace {

namespace {

void emit_to(const detail::SinkSet &sinks, const char *who, int level, const char *where,
             const char *func, int source_line, const char *fmt, va_list ap) noexcept {
    const int saved = errno;
    char line[detail::kLineMax];
    const std::size_t len = detail::format_line(line, sizeof line, who, level, where, func,
                                                source_line, saved, fmt, ap);
    detail::write_line(sinks, level, line, len);
    errno = saved;
}

void emit_warning(const detail::SinkSet &sinks, const char *who, const char *fmt, ...) noexcept
    __attribute__((format(printf, 3, 4)));
void emit_warning(const detail::SinkSet &sinks, const char *who, const char *fmt, ...) noexcept {
    va_list ap;
    va_start(ap, fmt);
    emit_to(sinks, who, kWarn, "trace", nullptr, 0, fmt, ap);
    va_end(ap);
}

}  // namespace

int Domain::set_level(int level) noexcept {
    if (level < kMinLevel) level = kMinLevel;
    if (level > kMaxLevel) level = kMaxLevel;
    level_.store(level, std::memory_order_relaxed);
    return level;
}

const detail::SinkSet &Domain::sinks() const noexcept {
    // Acquire pairs with the release in configure_from_environment(): the set's contents
    // (descriptors, paths) are visible before its address is.
    const detail::SinkSet *s = sinks_.load(std::memory_order_acquire);
    return s ? *s : detail::default_sinks();
}

unsigned Domain::destinations() const noexcept {
    return sinks().dests;
}

const char *Domain::file_path(int index) const noexcept {
    const detail::SinkSet &s = sinks();
    return index >= 0 && index < s.nfiles ? s.paths[index] : nullptr;
}

void Domain::release_at_unload() noexcept {
    const detail::SinkSet *set = sinks_.exchange(nullptr, std::memory_order_acq_rel);
    while (set != nullptr) {
        const detail::SinkSet *previous = set->previous;
        // The files are the last `nfiles` descriptors; stderr and stdout are not ours to close.
        for (int i = set->nfds - set->nfiles; i < set->nfds; ++i)
            if (i >= 0 && set->fds[i] > STDERR_FILENO) ::close(set->fds[i]);
        for (char *value : set->env_values) std::free(value);
        delete set;
        set = previous;
    }
}

void Domain::configure_from_environment() noexcept {
    const int saved = errno;
    detail::Warnings warnings;
    const int level = detail::resolve_level(spec_, warnings);

    // Unchanged environment (e.g. libdat2's own constructor configuring again after ours):
    // keep the destinations, re-apply the level, and do not repeat the warnings.
    const detail::SinkSet *current = sinks_.load(std::memory_order_acquire);
    if (current && detail::same_environment(spec_, *current)) {
        set_level(level);
        errno = saved;
        return;
    }

    if (auto *set = new (std::nothrow) detail::SinkSet) {
        detail::record_environment(spec_, *set);
        detail::resolve_dests(spec_, *set, warnings);
        detail::resolve_subsys(spec_, *set, warnings);
        detail::open_sinks(*set, warnings);
        // Superseded sets are never freed: an emitter may still be writing through one. Each
        // set links its predecessor so that they all stay reachable (no leak reports) until
        // exit. The CAS only fills `previous` before the set is published.
        set->previous = sinks_.load(std::memory_order_relaxed);
        while (!sinks_.compare_exchange_weak(set->previous, set, std::memory_order_release,
                                             std::memory_order_relaxed)) {
        }
    } else {
        warnings.add(
            "out of memory while configuring trace destinations; keeping the previous ones");
    }
    set_level(level);

    // Configuration problems are reported even when only errors are traced (the user asked
    // for something and did not get it), but not when the domain is switched off: the rule
    // config_warning() offers everyone else.
    if (level > kOff)
        for (int i = 0; i < warnings.count; ++i)
            emit_warning(sinks(), spec_.who, "%s", warnings.text[i]);
    errno = saved;
}

void Domain::emit(int level, const char *where, const char *fmt, ...) noexcept {
    va_list ap;
    va_start(ap, fmt);
    vemit(level, where, fmt, ap);
    va_end(ap);
}

void Domain::vemit(int level, const char *where, const char *fmt, va_list ap) noexcept {
    const detail::SinkSet &s = sinks();
    if (level > kWarn && !detail::subsys_selects(s.subsys, where)) return;
    emit_to(s, spec_.who, level, where, nullptr, 0, fmt, ap);
}

void Domain::config_warning(const char *where, const char *fmt, ...) noexcept {
    if (level() <= kOff) return;
    va_list ap;
    va_start(ap, fmt);
    vemit(kWarn, where, fmt, ap);
    va_end(ap);
}

void Domain::emit_at(int level, const char *where, const char *func, int line, const char *fmt,
                     ...) noexcept {
    const detail::SinkSet &s = sinks();
    if (level > kWarn && !detail::subsys_selects(s.subsys, where)) return;
    va_list ap;
    va_start(ap, fmt);
    emit_to(s, spec_.who, level, where, this->level() >= kDetail ? func : nullptr, line, fmt, ap);
    va_end(ap);
}

bool Domain::selects(int level, const char *where) const noexcept {
    return level <= kWarn || detail::subsys_selects(sinks().subsys, where);
}

bool RateLimit::admit(unsigned per_second, unsigned *suppressed) noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    const long long now = ts.tv_sec;
    long long seen = second_.load(std::memory_order_relaxed);
    // The first caller of a new second opens it; the losers of the race count in it too.
    if (seen != now && second_.compare_exchange_strong(seen, now, std::memory_order_relaxed))
        used_.store(0, std::memory_order_relaxed);
    if (used_.fetch_add(1, std::memory_order_relaxed) < per_second) {
        *suppressed = dropped_.exchange(0, std::memory_order_relaxed);
        return true;
    }
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
}

}  // namespace opendat::trace

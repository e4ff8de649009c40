// Minimal first implementation; destinations and legacy variables are filled in by the
// trace work (see trace.hpp for the contract).
#include "trace/trace.hpp"

#include <cstdio>
#include <cstdlib>

namespace opendat::trace {

constinit Domain g_dat_domain{DomainSpec{"DAT", "DAT_TRACE_LEVEL", "DAT_TRACE_DEST", "DAT_DBG_TYPE",
                                         "DAT_DBG_DEST", kError}};
constinit Domain g_dapl_domain{DomainSpec{"DAPL", "DAPL_TRACE_LEVEL", "DAPL_TRACE_DEST",
                                          "DAPL_DBG_TYPE", "DAPL_DBG_DEST", kError}};

int Domain::set_level(int level) noexcept {
    if (level < kMinLevel) level = kMinLevel;
    if (level > kMaxLevel) level = kMaxLevel;
    level_.store(level, std::memory_order_relaxed);
    return level;
}

void Domain::configure_from_environment() noexcept {
    if (const char *v = std::getenv(spec_.level_env)) set_level(std::atoi(v));
}

void Domain::emit(int level, const char *where, const char *fmt, ...) noexcept {
    va_list ap;
    va_start(ap, fmt);
    vemit(level, where, fmt, ap);
    va_end(ap);
}

void Domain::vemit(int level, const char *where, const char *fmt, va_list ap) noexcept {
    std::fprintf(stderr, "%s %s %s: ", spec_.who, level <= kError ? "ERR" : "EVT", where);
    std::vfprintf(stderr, fmt, ap);
    std::fputc('\n', stderr);
}

namespace {
__attribute__((constructor)) void configure_domains() {
    g_dat_domain.configure_from_environment();
    g_dapl_domain.configure_from_environment();
}
}  // namespace

}  // namespace opendat::trace

// Provider-side readers: the environment's value if it is valid, otherwise the default and
// one DAPL warning that names the variable, the value and what is used instead.
#include "tunables/tunables.hpp"

#include "trace/environment.hpp"
#include "trace/trace.hpp"

#include <atomic>
#include <cstdlib>
#include <iterator>

namespace opendat::tunables {
namespace {

// One flag per declared variable: a provider reads most of them at every dat_ia_open, and
// the operator needs to hear about a bad value once, not once per IA.
// (64: room to spare over the table in table.cpp; a variable beyond it simply warns each time.)
std::atomic<bool> g_warned[64];

void warn_rejected(const Spec &spec, const char *value) noexcept {
    const auto specs = all();
    for (std::size_t i = 0; i < specs.size() && i < std::size(g_warned); ++i)
        if (specs[i] == &spec && g_warned[i].exchange(true, std::memory_order_relaxed)) return;
    char why[160];
    char quoted[trace::detail::kQuotedMax];
    check(spec, value, why, sizeof why);
    trace::detail::quote(value, quoted, sizeof quoted);
    // A configuration warning, like a bad DAPL_TRACE_LEVEL: seen at the default level too.
    trace::dapl_domain().config_warning("tunables", "%s=%s: %s; using the default %s", spec.name,
                                        quoted, why, spec.default_text);
}

}  // namespace

long read_int(const Spec &spec) noexcept {
    const char *v = std::getenv(spec.name);
    if (!v) return spec.default_value;
    long out = 0;
    if (parse_int(spec, v, &out)) return out;
    warn_rejected(spec, v);
    return spec.default_value;
}

int read_choice(const Spec &spec) noexcept {
    const char *v = std::getenv(spec.name);
    if (!v) return static_cast<int>(spec.default_value);
    const int i = choice_index(spec, v);
    if (i >= 0) return i;
    warn_rejected(spec, v);
    return static_cast<int>(spec.default_value);
}

Keepalive read_keepalive(const Spec &spec) noexcept {
    Keepalive k;
    const char *v = std::getenv(spec.name);
    if (!v) return k;
    if (parse_keepalive(v, &k)) return k;
    warn_rejected(spec, v);
    return Keepalive{};
}

}  // namespace opendat::tunables

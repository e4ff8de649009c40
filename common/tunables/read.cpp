// Provider-side readers: the environment's value if it is valid, otherwise the default and
// one DAPL warning that names the variable, the value and what is used instead.
#include "tunables/tunables.hpp"

#include "trace/environment.hpp"
#include "trace/trace.hpp"

#include <cstdlib>

namespace opendat::tunables {
namespace {

void warn_rejected(const Spec &spec, const char *value) noexcept {
    char why[160];
    char quoted[trace::detail::kQuotedMax];
    check(spec, value, why, sizeof why);
    trace::detail::quote(value, quoted, sizeof quoted);
    DAPL_TRC(trace::kWarn, "tunables", "%s=%s: %s; using the default %s", spec.name, quoted, why,
             spec.default_text);
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

// The table itself, and the judgement of a value: pure functions, no trace, no heap, so
// libdat2, the providers and datinfo all judge a value with the same code.
#include "tunables/tunables.hpp"

#include "trace/environment.hpp"
#include "trace/sink.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace opendat::tunables {
namespace {

constexpr const Spec *kAll[] = {
    &kDatOverride,      &kDatTraceLevel,      &kDatTraceDest,   &kDatTraceSubsys,
    &kDatDbgType,       &kDatDbgDest,         &kDaplTraceLevel, &kDaplTraceDest,
    &kDaplTraceSubsys,  &kDaplDbgType,        &kDaplDbgDest,    &kTcpKeepalive,
    &kTcpUserTimeoutMs, &kTcpConnectRetryMs,  &kTcpProgress,    &kTcpSpinUs,
    &kTcpWaitSpinUs,    &kTcpWaitSleep,       &kTcpTxBatch,     &kTcpTxBurstGapNs,
    &kTcpCorkWrites,    &kTcpCorkHoldMs,      &kTcpWireVersion, &kTcpIpv4Sockets,
    &kTcpHandshakeMs,   &kTcpMaxPending,      &kTcpCloseMs,     &kTcpConnectAnswerMs,
    &kTcpDrainMs,       &kTcpAcceptBackoffMs, &kVerbsMaxInline,
};

void say(char *why, std::size_t size, const char *text) noexcept {
    if (why && size > 0) std::snprintf(why, size, "%s", text);
}

// Decimal digits only (an optional leading '-'), nothing else: "12ms" and "" are refused.
bool parse_decimal(const char *value, long *out) noexcept {
    if (!value || !*value) return false;
    const char *p = value;
    if (*p == '-') ++p;
    if (*p < '0' || *p > '9') return false;
    for (const char *q = p; *q; ++q)
        if (*q < '0' || *q > '9') return false;
    errno = 0;
    const long v = std::strtol(value, nullptr, 10);
    if (errno == ERANGE) return false;
    *out = v;
    return true;
}

}  // namespace

const char *type_name(Type t) noexcept {
    switch (t) {
        case Type::kInt:
            return "int";
        case Type::kPath:
            return "path";
        case Type::kTraceLevel:
            return "level";
        case Type::kTraceDest:
            return "destinations";
        case Type::kTraceSubsys:
            return "tags";
        case Type::kDebugMask:
            return "mask";
        case Type::kDestMask:
            return "dest mask";
        case Type::kKeepalive:
            return "keepalive";
        case Type::kChoice:
            return "choice";
    }
    return "?";
}

std::span<const Spec *const> all() noexcept {
    return kAll;
}

const Spec *find(const char *name) noexcept {
    if (!name) return nullptr;
    for (const Spec *s : kAll)
        if (std::strcmp(s->name, name) == 0) return s;
    return nullptr;
}

bool parse_int(const Spec &spec, const char *value, long *out) noexcept {
    long v = 0;
    if (!parse_decimal(value, &v) || v < spec.min || v > spec.max) return false;
    *out = v;
    return true;
}

bool parse_keepalive(const char *value, Keepalive *out) noexcept {
    if (!value) return false;
    if (std::strcmp(value, "0") == 0) {
        *out = Keepalive{};
        out->on = false;
        return true;
    }
    long part[3] = {};
    const char *p = value;
    for (int i = 0; i < 3; ++i) {
        const char *end = std::strchr(p, ',');
        if ((i < 2) != (end != nullptr)) return false;  // exactly two commas
        char buf[16];
        const std::size_t len = end ? static_cast<std::size_t>(end - p) : std::strlen(p);
        if (len == 0 || len >= sizeof buf) return false;
        std::memcpy(buf, p, len);
        buf[len] = '\0';
        if (!parse_decimal(buf, &part[i]) || part[i] <= 0 || part[i] > 32767) return false;
        p = end ? end + 1 : p + len;
    }
    out->on = true;
    out->idle = static_cast<int>(part[0]);
    out->interval = static_cast<int>(part[1]);
    out->probes = static_cast<int>(part[2]);
    return true;
}

int choice_index(const Spec &spec, const char *value) noexcept {
    if (!value || !spec.choices) return -1;
    const std::size_t len = std::strlen(value);
    int i = 0;
    for (const char *p = spec.choices; *p; ++i) {
        const char *end = std::strchr(p, ',');
        const std::size_t n = end ? static_cast<std::size_t>(end - p) : std::strlen(p);
        if (n == len && std::strncmp(p, value, n) == 0) return i;
        if (!end) break;
        p = end + 1;
    }
    return -1;
}

bool check(const Spec &spec, const char *value, char *why, std::size_t why_size) noexcept {
    namespace env = opendat::trace::detail;
    if (!value) {
        say(why, why_size, "unset");
        return true;
    }
    switch (spec.type) {
        case Type::kInt: {
            long v = 0;
            if (!parse_decimal(value, &v)) {
                say(why, why_size, "not a whole decimal number");
                return false;
            }
            if (v < spec.min || v > spec.max) {
                if (why && why_size > 0)
                    std::snprintf(why, why_size, "outside %ld..%ld", spec.min, spec.max);
                return false;
            }
            return true;
        }
        case Type::kPath:
            if (!*value) {
                say(why, why_size, "empty file name");
                return false;
            }
            return true;
        case Type::kTraceLevel: {
            int level = 0;
            if (!env::parse_level(value, &level)) {
                say(why, why_size, "not a trace level (decimal 0..10)");
                return false;
            }
            return true;
        }
        case Type::kTraceDest: {
            for (const char *p = value; *p; ++p)
                if (*p != ',' && *p != ' ' && *p != '\t') return true;
            say(why, why_size, "names no destination");
            return false;
        }
        case Type::kTraceSubsys: {
            char tags[env::SinkSet::kSubsysMax];
            switch (env::parse_tag_list(value, tags, sizeof tags)) {
                case env::TagListError::kNone:
                    return true;
                case env::TagListError::kBadChar:
                    say(why, why_size, "a tag may hold only letters, digits, '.', '_' and '-'");
                    return false;
                case env::TagListError::kNoTag:
                    say(why, why_size, "names no tag");
                    return false;
                case env::TagListError::kTooLong:
                    say(why, why_size, "is too long");
                    return false;
            }
            return false;
        }
        case Type::kDebugMask: {
            unsigned long mask = 0;
            if (!env::parse_mask(value, &mask)) {
                say(why, why_size, "not a number (bit mask, e.g. 0x3)");
                return false;
            }
            return true;
        }
        case Type::kDestMask: {
            unsigned long mask = 0;
            unsigned dests = 0;
            if (!env::parse_mask(value, &mask) || !env::dests_from_legacy_mask(mask, &dests)) {
                say(why, why_size, "not a destination mask (1 stdout, 2 syslog, 3 both)");
                return false;
            }
            return true;
        }
        case Type::kKeepalive: {
            Keepalive k;
            if (!parse_keepalive(value, &k)) {
                say(why, why_size,
                    "neither \"0\" nor three positive numbers \"idle,interval,probes\"");
                return false;
            }
            return true;
        }
        case Type::kChoice:
            if (choice_index(spec, value) < 0) {
                if (why && why_size > 0)
                    std::snprintf(why, why_size, "not one of %s", spec.choices);
                return false;
            }
            return true;
    }
    return false;
}

}  // namespace opendat::tunables

// <WHO>_TRACE_LEVEL, <WHO>_TRACE_DEST and the reference's <WHO>_DBG_TYPE / <WHO>_DBG_DEST.
#include "trace/environment.hpp"

#include "trace/sink.hpp"
#include "trace/trace.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <unistd.h>

namespace opendat::trace::detail {

void Warnings::add(const char *fmt, ...) noexcept {
    if (count >= kMax) return;  // more than kMax problems: the first ones say enough
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(text[count], kLen, fmt, ap);
    va_end(ap);
    ++count;
}

void quote(const char *value, char *out, std::size_t size) noexcept {
    if (size < 8) {
        if (size > 0) out[0] = '\0';
        return;
    }
    std::size_t o = 0;
    out[o++] = '"';
    const std::size_t limit = size - 5;  // room for `..."` and NUL
    for (const char *p = value; *p; ++p) {
        if (o >= limit) {
            std::memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        const unsigned char c = static_cast<unsigned char>(*p);
        out[o++] = (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    out[o++] = '"';
    out[o] = '\0';
}

bool parse_level(const char *text, int *level) noexcept {
    if (!text || !*text) return false;
    int v = 0;
    for (const char *p = text; *p; ++p) {
        if (*p < '0' || *p > '9') return false;
        v = v * 10 + (*p - '0');
        if (v > kMaxLevel) return false;  // also stops overflow on long digit strings
    }
    *level = v;
    return true;
}

bool parse_mask(const char *text, unsigned long *mask) noexcept {
    if (!text || !*text) return false;
    errno = 0;
    char *end = nullptr;
    const long v = std::strtol(text, &end, 0);
    if (errno != 0 || end == text || *end != '\0') return false;
    // The reference keeps the value in an int: -1 means "all bits".
    *mask = static_cast<unsigned long>(static_cast<unsigned int>(v));
    return true;
}

int level_from_legacy_mask(unsigned long mask) noexcept {
    if (mask == 0) return kOff;
    if (__builtin_popcountl(mask) >= 8) return kData;
    if (mask & ~0x3ul) return kDetail;
    if (mask & 0x2ul) return kNormal;
    return kError;
}

bool dests_from_legacy_mask(unsigned long mask, unsigned *dests) noexcept {
    unsigned d = 0;
    if (mask & 0x1ul) d |= kDestStdout;
    if (mask & 0x2ul) d |= kDestSyslog;
    if (d == 0) return false;
    *dests = d;
    return true;
}

bool expand_path(const char *pattern, char *out, std::size_t size) noexcept {
    std::size_t o = 0;
    auto put = [&](const char *s, std::size_t n) noexcept {
        if (o + n >= size) return false;
        std::memcpy(out + o, s, n);
        o += n;
        return true;
    };
    for (const char *p = pattern; *p; ++p) {
        bool ok;
        if (p[0] == '%' && p[1] == 'p') {
            char pid[24];
            const int n = std::snprintf(pid, sizeof pid, "%ld", static_cast<long>(getpid()));
            ok = put(pid, static_cast<std::size_t>(n));
            ++p;
        } else if (p[0] == '%' && p[1] == 'h') {
            char host[256] = {};
            if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown-host");
            ok = put(host, std::strlen(host));
            ++p;
        } else if (p[0] == '%' && p[1] == '%') {
            ok = put("%", 1);
            ++p;
        } else {
            ok = put(p, 1);  // any other '%' is kept as written
        }
        if (!ok) return false;
    }
    if (o >= size) return false;
    out[o] = '\0';
    return true;
}

int resolve_level(const DomainSpec &spec, Warnings &warnings) noexcept {
    char quoted[kQuotedMax];
    if (const char *v = std::getenv(spec.level_env)) {
        int level;
        if (parse_level(v, &level)) return level;
        quote(v, quoted, sizeof quoted);
        warnings.add("%s=%s is not a trace level (decimal 0..10); using the default level %d",
                     spec.level_env, quoted, spec.default_level);
        return spec.default_level;
    }
    if (const char *v = std::getenv(spec.legacy_type_env)) {
        unsigned long mask;
        if (parse_mask(v, &mask)) return level_from_legacy_mask(mask);
        quote(v, quoted, sizeof quoted);
        warnings.add("%s=%s is not a number (bit mask, e.g. 0x3); using the default level %d",
                     spec.legacy_type_env, quoted, spec.default_level);
        return spec.default_level;
    }
    return spec.default_level;
}

namespace {

// One comma-separated item of <WHO>_TRACE_DEST, already trimmed (not NUL-terminated).
void add_dest_token(const char *tok, std::size_t len, SinkSet &set, Warnings &warnings,
                    const char *env) noexcept {
    auto is = [&](const char *name) noexcept {
        return std::strlen(name) == len && strncasecmp(tok, name, len) == 0;
    };
    if (is("stderr")) {
        set.dests |= kDestStderr;
        return;
    }
    if (is("stdout")) {
        set.dests |= kDestStdout;
        return;
    }
    if (is("syslog")) {
        set.dests |= kDestSyslog;
        return;
    }
    char pattern[PATH_MAX];
    char quoted[kQuotedMax];
    if (len >= sizeof pattern) {
        warnings.add("%s: a file name is longer than %zu bytes; ignoring it", env,
                     sizeof pattern - 1);
        return;
    }
    std::memcpy(pattern, tok, len);
    pattern[len] = '\0';
    char path[PATH_MAX];
    if (!expand_path(pattern, path, sizeof path)) {
        quote(pattern, quoted, sizeof quoted);
        warnings.add("%s: file name %s is too long once expanded; ignoring it", env, quoted);
        return;
    }
    for (int i = 0; i < set.nfiles; ++i)
        if (std::strcmp(set.paths[i], path) == 0) return;  // named twice: write once
    if (set.nfiles >= kMaxFiles) {
        quote(path, quoted, sizeof quoted);
        warnings.add("%s: more than %d files; ignoring %s", env, kMaxFiles, quoted);
        return;
    }
    std::memcpy(set.paths[set.nfiles++], path, std::strlen(path) + 1);
}

}  // namespace

void resolve_dests(const DomainSpec &spec, SinkSet &set, Warnings &warnings) noexcept {
    char quoted[kQuotedMax];
    set.dests = 0;
    set.nfiles = 0;
    if (const char *v = std::getenv(spec.dest_env)) {
        set.source_env = spec.dest_env;
        // Comma-separated; a file name therefore cannot contain a comma.
        const char *p = v;
        while (true) {
            const char *end = std::strchr(p, ',');
            if (!end) end = p + std::strlen(p);
            const char *b = p;
            const char *e = end;
            while (b < e && (*b == ' ' || *b == '\t')) ++b;
            while (e > b && (e[-1] == ' ' || e[-1] == '\t')) --e;
            if (e > b)
                add_dest_token(b, static_cast<std::size_t>(e - b), set, warnings, spec.dest_env);
            if (*end == '\0') break;
            p = end + 1;
        }
        if (set.dests == 0 && set.nfiles == 0) {
            quote(v, quoted, sizeof quoted);
            warnings.add("%s=%s names no usable destination; using stderr", spec.dest_env, quoted);
            set.dests = kDestStderr;
        }
        return;
    }
    if (const char *v = std::getenv(spec.legacy_dest_env)) {
        set.source_env = spec.legacy_dest_env;
        unsigned long mask;
        unsigned dests;
        if (parse_mask(v, &mask) && dests_from_legacy_mask(mask, &dests)) {
            set.dests = dests;
            return;
        }
        quote(v, quoted, sizeof quoted);
        warnings.add("%s=%s is not a destination mask (1 stdout, 2 syslog, 3 both); using stderr",
                     spec.legacy_dest_env, quoted);
        set.dests = kDestStderr;
        return;
    }
    set.dests = kDestStderr;
}

namespace {

void env_names(const DomainSpec &spec, const char *(&names)[SinkSet::kEnvCount]) noexcept {
    names[0] = spec.level_env;
    names[1] = spec.dest_env;
    names[2] = spec.legacy_type_env;
    names[3] = spec.legacy_dest_env;
    names[4] = spec.subsys_env;
}

}  // namespace

void record_environment(const DomainSpec &spec, SinkSet &set) noexcept {
    const char *names[SinkSet::kEnvCount];
    env_names(spec, names);
    set.env_recorded = false;
    for (int i = 0; i < SinkSet::kEnvCount; ++i) {
        const char *v = names[i] ? std::getenv(names[i]) : nullptr;
        set.env_values[i] = nullptr;
        // Never freed, like the set that holds them (still reachable: no leak reports).
        if (v && !(set.env_values[i] = ::strdup(v))) return;
    }
    set.env_recorded = true;
}

bool same_environment(const DomainSpec &spec, const SinkSet &set) noexcept {
    if (!set.env_recorded) return false;
    const char *names[SinkSet::kEnvCount];
    env_names(spec, names);
    for (int i = 0; i < SinkSet::kEnvCount; ++i) {
        const char *v = names[i] ? std::getenv(names[i]) : nullptr;
        const char *old = set.env_values[i];
        if ((v == nullptr) != (old == nullptr)) return false;
        if (v && std::strcmp(v, old) != 0) return false;
    }
    return true;
}

namespace {

bool tag_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

bool tag_separator(char c) noexcept {
    return c == ',' || c == ' ' || c == '\t';
}

}  // namespace

TagListError parse_tag_list(const char *value, char *out, std::size_t out_size) noexcept {
    if (out_size == 0) return TagListError::kTooLong;
    out[0] = '\0';
    std::size_t o = 0;
    for (const char *p = value; *p;) {
        while (tag_separator(*p)) ++p;
        const char *b = p;
        while (*p && !tag_separator(*p)) {
            if (!tag_char(*p)) {
                out[0] = '\0';
                return TagListError::kBadChar;
            }
            ++p;
        }
        const std::size_t len = static_cast<std::size_t>(p - b);
        if (len == 0) continue;
        if (o + len + 2 > out_size) {
            out[0] = '\0';
            return TagListError::kTooLong;
        }
        if (o > 0) out[o++] = ',';
        std::memcpy(out + o, b, len);
        o += len;
        out[o] = '\0';
    }
    return o == 0 ? TagListError::kNoTag : TagListError::kNone;
}

void resolve_subsys(const DomainSpec &spec, SinkSet &set, Warnings &warnings) noexcept {
    set.subsys[0] = '\0';
    const char *v = spec.subsys_env ? std::getenv(spec.subsys_env) : nullptr;
    if (!v) return;
    const TagListError e = parse_tag_list(v, set.subsys, sizeof set.subsys);
    if (e == TagListError::kNone) return;
    char quoted[kQuotedMax];
    quote(v, quoted, sizeof quoted);
    if (e == TagListError::kBadChar)
        warnings.add(
            "%s=%s: a tag may hold only letters, digits, '.', '_' and '-'; tracing every tag",
            spec.subsys_env, quoted);
    else
        warnings.add("%s=%s %s; tracing every tag", spec.subsys_env, quoted,
                     e == TagListError::kNoTag ? "names no tag" : "is too long");
}

bool subsys_selects(const char *filter, const char *where) noexcept {
    if (!filter || !*filter) return true;
    if (!where) return false;
    const std::size_t wlen = std::strlen(where);
    for (const char *p = filter; *p;) {
        const char *end = std::strchr(p, ',');
        const std::size_t len = end ? static_cast<std::size_t>(end - p) : std::strlen(p);
        if (wlen >= len && std::strncmp(where, p, len) == 0 && (wlen == len || where[len] == '.'))
            return true;
        if (!end) break;
        p = end + 1;
    }
    return false;
}

}  // namespace opendat::trace::detail

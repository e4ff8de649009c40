#include "conf_parser.hpp"

#include "field_syntax.hpp"

#include <array>
#include <optional>

namespace opendat::registry {
namespace {

constexpr std::array<const char *, 8> kFieldNames = {
    "ia_name", "api_version",      "thread_safety", "default",
    "library", "provider_version", "ia_params",     "platform_params"};

bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

struct LineError {
    std::string field;
    std::string message;
};

struct Tokens {
    std::vector<std::string> fields;
    std::optional<LineError> error;
};

// Splits one line (without its terminator) into fields: blanks separate, '#' where a
// field may start ends the line, '"' starts a quoted field in which '\' escapes the next
// byte; quotes are stripped. Stops early once one field more than the record needs is seen.
Tokens tokenize(std::string_view line) {
    Tokens t;
    std::size_t i = 0;
    const std::size_t n = line.size();
    while (true) {
        while (i < n && is_blank(line[i])) ++i;
        if (i >= n || line[i] == '#') break;
        const std::size_t index = t.fields.size();
        const char *name = index < kFieldNames.size() ? kFieldNames[index] : "EOR";
        if (index >= kFieldNames.size()) {
            std::string_view extra = line.substr(i, 40);
            t.error = LineError{name, "unexpected extra field '" + std::string(extra) +
                                          (n - i > 40 ? "...'" : "'")};
            return t;
        }
        std::string value;
        if (line[i] == '"') {
            ++i;
            bool closed = false;
            while (i < n) {
                char c = line[i++];
                if (c == '"') {
                    closed = true;
                    break;
                }
                if (c == '\\' && i < n) c = line[i++];
                value.push_back(c);
            }
            if (!closed) {
                t.error = LineError{name, "unterminated quote"};
                return t;
            }
            if (i < n && !is_blank(line[i]) && line[i] != '#') {
                t.error = LineError{name, "text directly after closing quote"};
                return t;
            }
        } else {
            const std::size_t start = i;
            while (i < n && !is_blank(line[i])) ++i;
            value.assign(line.substr(start, i - start));
        }
        t.fields.push_back(std::move(value));
    }
    return t;
}

// Validates the fields of one record in order and builds the entry. Like the reference
// parser, the first bad field is the one reported; a short record that is fine as far as
// it goes is reported as missing its next field.
std::optional<LineError> build_entry(std::vector<std::string> &f, ConfigEntry &e) {
    auto missing = [&](std::size_t k) -> std::optional<LineError> {
        if (k < f.size()) return std::nullopt;
        return LineError{kFieldNames[k], std::string("missing field ") + kFieldNames[k]};
    };
    for (std::size_t k = 0; k < f.size(); ++k) {
        auto err = check_length(f[k], k == 0 ? kMaxIaNameLength : kMaxFieldLength);
        if (!err.empty()) return LineError{kFieldNames[k], std::move(err)};
    }
    if (f[0].empty()) return LineError{"ia_name", "empty IA name"};
    e.ia_name = f[0];

    if (auto m = missing(1)) return m;
    auto api = parse_api_version(f[1]);
    if (!api)
        return LineError{"api_version", "api version must look like u2.0 (got '" + f[1] + "')"};
    e.user_level = api->user_level;
    e.api_major = api->major;
    e.api_minor = api->minor;

    // Prefix comparisons, as the reference tokenizer does ("threadsafeXYZ" is thread-safe).
    if (auto m = missing(2)) return m;
    if (f[2].starts_with("threadsafe"))
        e.thread_safe = true;
    else if (f[2].starts_with("nonthreadsafe"))
        e.thread_safe = false;
    else
        return LineError{"thread_safety",
                         "must be threadsafe or nonthreadsafe (got '" + f[2] + "')"};

    if (auto m = missing(3)) return m;
    if (f[3].starts_with("default"))
        e.is_default = true;
    else if (f[3].starts_with("nondefault"))
        e.is_default = false;
    else
        return LineError{"default", "must be default or nondefault (got '" + f[3] + "')"};

    if (auto m = missing(4)) return m;
    if (f[4].empty()) return LineError{"library", "empty library path"};
    e.library = f[4];

    if (auto m = missing(5)) return m;
    auto pv = parse_provider_version(f[5]);
    if (!pv)
        return LineError{
            "provider_version",
            "provider version must look like <id>.<major>.<minor>, e.g. dapl.2.0 (got '" + f[5] +
                "')"};
    e.provider_id = std::move(pv->id);
    e.provider_major = pv->major;
    e.provider_minor = pv->minor;

    if (auto m = missing(6)) return m;
    e.ia_params = f[6];
    if (auto m = missing(7)) return m;
    e.platform_params = f[7];
    return std::nullopt;
}

}  // namespace

ParseResult parse_dat_conf(std::string_view text, const std::string &file) {
    ParseResult r;
    int line_no = 0;
    std::size_t pos = 0;
    // A UTF-8 byte order mark (editors on other systems write one) is not part of the first
    // field: kept, it silently renamed the first IA ("\xEF\xBB\xBFofa-v2-ib0") or turned a
    // leading comment into a malformed entry.
    if (text.starts_with("\xEF\xBB\xBF")) pos = 3;
    while (pos < text.size()) {
        ++line_no;
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();  // missing final newline
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF files

        auto fail = [&](std::string field, std::string message) {
            r.diagnostics.push_back(
                ConfigDiagnostic{file, line_no, std::move(field), std::move(message)});
        };

        // Control bytes other than tab mean the file is not text: the line is rejected as a
        // whole (no field attribution) rather than guessing where its fields are.
        if (std::string bad = check_text(line); !bad.empty()) {
            fail("line", std::move(bad));
            continue;
        }

        Tokens t = tokenize(line);
        if (t.error) {
            fail(std::move(t.error->field), std::move(t.error->message));
            continue;
        }
        if (t.fields.empty()) continue;  // blank or comment-only line

        ConfigEntry e;
        if (auto err = build_entry(t.fields, e)) {
            fail(std::move(err->field), std::move(err->message));
            continue;
        }
        e.file = file;
        e.line = line_no;
        r.entries.push_back(std::move(e));
    }
    return r;
}

}  // namespace opendat::registry

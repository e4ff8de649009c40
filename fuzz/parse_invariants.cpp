#include "parse_invariants.hpp"

#include "registry/conf_parser.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace opendat::fuzz {
namespace {

[[noreturn]] void violated(const char *what, const std::string &detail = {}) {
    std::fprintf(stderr, "parse invariant violated: %s %s\n", what, detail.c_str());
    std::abort();
}

void expect(bool ok, const char *what, const std::string &detail = {}) {
    if (!ok) violated(what, detail);
}

bool has_nul(const std::string &s) {
    return s.find('\0') != std::string::npos;
}

std::string quoted(const std::string &s) {
    std::string q = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') q.push_back('\\');
        q.push_back(c);
    }
    q.push_back('"');
    return q;
}

}  // namespace

std::string to_dat_conf_line(const registry::ConfigEntry &e) {
    std::string api = std::string(e.user_level ? "u" : "k") + std::to_string(e.api_major) + "." +
                      std::to_string(e.api_minor);
    std::string pv = e.provider_id + "." + std::to_string(e.provider_major) + "." +
                     std::to_string(e.provider_minor);
    return quoted(e.ia_name) + " " + quoted(api) + " " +
           (e.thread_safe ? "threadsafe" : "nonthreadsafe") + " " +
           (e.is_default ? "default" : "nondefault") + " " + quoted(e.library) + " " + quoted(pv) +
           " " + quoted(e.ia_params) + " " + quoted(e.platform_params) + "\n";
}

void check_parse_result(const registry::ParseResult &r, std::string_view text,
                        const std::string &file, Format format) {
    const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
    int previous_line = 0;
    for (const auto &e : r.entries) {
        expect(e.file == file, "entry file name", e.file);
        expect(e.line >= 1 && e.line <= lines, "entry line in range", std::to_string(e.line));
        expect(e.line >= previous_line, "entries in file order", std::to_string(e.line));
        if (format == Format::kClassic)  // one record per line
            expect(e.line > previous_line, "one dat.conf entry per line", std::to_string(e.line));
        previous_line = e.line;
        expect(!e.ia_name.empty() && e.ia_name.size() <= registry::kMaxIaNameLength,
               "ia_name length", std::to_string(e.ia_name.size()));
        expect(!e.library.empty() && e.library.size() <= registry::kMaxFieldLength,
               "library length", std::to_string(e.library.size()));
        for (const std::string *s :
             {&e.ia_name, &e.library, &e.provider_id, &e.ia_params, &e.platform_params}) {
            expect(s->size() <= registry::kMaxFieldLength, "field length");
            expect(!has_nul(*s), "NUL in a field", *s);
        }
        expect(e.trace_level >= -1 && e.trace_level <= 10, "trace_level range");
        if (format == Format::kClassic) {
            expect(e.trace_level == -1 && e.settings.empty(), "classic entry has YAML fields");
            // Writing the entry back as a dat.conf line and parsing it gives the same entry.
            const std::string line = to_dat_conf_line(e);
            const auto again = registry::parse_dat_conf(line, file);
            expect(again.diagnostics.empty() && again.entries.size() == 1, "round trip parses",
                   line);
            const auto &a = again.entries.front();
            expect(a.ia_name == e.ia_name && a.user_level == e.user_level &&
                       a.api_major == e.api_major && a.api_minor == e.api_minor &&
                       a.thread_safe == e.thread_safe && a.is_default == e.is_default &&
                       a.library == e.library && a.provider_id == e.provider_id &&
                       a.provider_major == e.provider_major &&
                       a.provider_minor == e.provider_minor && a.ia_params == e.ia_params &&
                       a.platform_params == e.platform_params,
                   "round trip gives the same entry", line);
        }
    }
    for (const auto &d : r.diagnostics) {
        expect(d.file == file, "diagnostic file name", d.file);
        expect(d.line >= 0 && d.line <= lines, "diagnostic line in range", std::to_string(d.line));
        expect(!d.field.empty() || format == Format::kYaml, "diagnostic names a field");
        expect(!d.message.empty(), "diagnostic has a message");
        if (format == Format::kClassic) expect(!d.warning, "classic parser gives no warnings");
    }
    if (format == Format::kClassic) {
        // Every line is a record, a diagnostic, or nothing (blank/comment).
        expect(r.entries.size() + r.diagnostics.size() <= static_cast<std::size_t>(lines),
               "at most one result per line");
    }
}

}  // namespace opendat::fuzz

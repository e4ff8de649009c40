// Reading a domain's configuration from the environment. The parsing helpers are pure
// functions (tests call them directly); resolve_* apply the precedence rules:
//
//   level:        <WHO>_TRACE_LEVEL  >  <WHO>_DBG_TYPE (mapped)  >  DomainSpec::default_level
//   destinations: <WHO>_TRACE_DEST   >  <WHO>_DBG_DEST (mapped)  >  stderr
//
// A variable that is set but invalid is not skipped in favour of the next one: its
// default is used and one warning names the variable, the bad value and what is used.
#pragma once

#include <cstddef>

namespace opendat::trace {
struct DomainSpec;
}

namespace opendat::trace::detail {

struct SinkSet;

// Warning texts collected while configuring; written once the new destinations are in force.
struct Warnings {
    static constexpr int kMax = 8;
    static constexpr std::size_t kLen = 512;
    char text[kMax][kLen] = {};
    int count = 0;
    void add(const char *fmt, ...) noexcept __attribute__((format(printf, 2, 3)));
};

// Size for quote(): a bad value is shown in at most this many bytes.
constexpr std::size_t kQuotedMax = 96;
// Writes `"value"` into out, with non-printable bytes as '?' and long values cut with "...".
void quote(const char *value, char *out, std::size_t size) noexcept;

// Strict decimal 0..10 (digits only: no sign, space or suffix). False for anything else.
bool parse_level(const char *text, int *level) noexcept;
// strtol(text, 0) semantics (decimal, 0x hex, 0 octal) but the whole string must be a number.
// A negative value is taken as its two's-complement bit pattern, as the reference's int mask.
bool parse_mask(const char *text, unsigned long *mask) noexcept;

// Reference DBG_TYPE bit mask -> level (bit names: docs/dat-abi.md §6.3):
//   0                          -> 0  (off)
//   8 or more bits set (0xff…) -> 10 (everything)
//   any bit above 0x2          -> 7  (detail: registry, provider/consumer API, EVD, CM, …)
//   0x2 (warnings / generic)   -> 3  (normal)
//   0x1 only (errors)          -> 1
int level_from_legacy_mask(unsigned long mask) noexcept;
// Reference DBG_DEST mask -> Destination bits: 0x1 stdout, 0x2 syslog (3 both); other bits
// are ignored. False when neither bit is set.
bool dests_from_legacy_mask(unsigned long mask, unsigned *dests) noexcept;

// Expands %p (pid), %h (host name) and %% in a file path. False if the result does not fit.
bool expand_path(const char *pattern, char *out, std::size_t size) noexcept;

// The level the environment asks for (see the precedence above).
int resolve_level(const DomainSpec &spec, Warnings &warnings) noexcept;
// Fills set.dests / set.paths / set.source_env from the environment; files are not opened here.
void resolve_dests(const DomainSpec &spec, SinkSet &set, Warnings &warnings) noexcept;

// A trace-tag list ("tcp,cm util"): tags of letters, digits, '.', '_' and '-', separated by
// commas, spaces or tabs. The one parser both resolve_subsys and the tunables checker
// (datinfo --check-env) use, so the checker never accepts what tracing then ignores.
enum class TagListError { kNone, kBadChar, kNoTag, kTooLong };
// Writes the tags to `out`, trimmed and joined by single commas ("" on any error).
TagListError parse_tag_list(const char *value, char *out, std::size_t out_size) noexcept;

// Fills set.subsys from <WHO>_TRACE_SUBSYS: the tags, trimmed and joined by single commas.
// An unset variable selects everything; one with a bad tag (or none) selects everything
// and adds a warning.
void resolve_subsys(const DomainSpec &spec, SinkSet &set, Warnings &warnings) noexcept;
// True if `filter` (as in SinkSet::subsys) selects tag `where`: "" selects every tag, "tcp"
// selects "tcp" and "tcp.<anything>".
bool subsys_selects(const char *filter, const char *where) noexcept;

// Copies the domain's five variables into set.env_values (on failure env_recorded stays false).
void record_environment(const DomainSpec &spec, SinkSet &set) noexcept;
// True if the domain's five variables are exactly those recorded in `set`.
bool same_environment(const DomainSpec &spec, const SinkSet &set) noexcept;

}  // namespace opendat::trace::detail

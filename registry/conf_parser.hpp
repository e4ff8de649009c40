// The classic dat.conf format (docs/configuration.md, fact sheet §6.2): one 8-field record
// per line. A pure function from text to entries + diagnostics; it never touches files.
#pragma once

#include "parse_result.hpp"

#include <string>
#include <string_view>

namespace opendat::registry {

// `file` is only copied into entries and diagnostics. Every malformed line yields exactly
// one diagnostic and is skipped; parsing always continues with the next line. Any input
// (binary garbage, NULs, CRLF, huge lines, no final newline) is handled in linear time.
ParseResult parse_dat_conf(std::string_view text, const std::string &file);

}  // namespace opendat::registry

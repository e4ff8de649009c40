// The YAML configuration format (docs/configuration.md): the same entries as dat.conf
// under a top-level "providers" list, plus optional per-entry trace_level and settings.
// A pure function from text to entries + diagnostics; no yaml-cpp exception escapes it.
#pragma once

#include "parse_result.hpp"

#include <string>
#include <string_view>

namespace opendat::registry {

// A YAML syntax error gives one diagnostic for the whole file and no entries. A bad entry
// gives one diagnostic (line from yaml-cpp's mark, 1-based) and is skipped. Unknown keys
// give warnings; the entry is kept.
ParseResult parse_yaml_conf(std::string_view text, const std::string &file) noexcept;

}  // namespace opendat::registry

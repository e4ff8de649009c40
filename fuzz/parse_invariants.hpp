// What every configuration parse result must satisfy, whatever the input bytes were.
// A violated invariant prints what was wrong and aborts, which libFuzzer reports as a
// finding with the input that caused it.
#pragma once

#include "registry/parse_result.hpp"

#include <string>
#include <string_view>

namespace opendat::fuzz {

enum class Format { kClassic, kYaml };

void check_parse_result(const registry::ParseResult &r, std::string_view text,
                        const std::string &file, Format format);

// One dat.conf line that parse_dat_conf reads back as exactly `e` (every field quoted).
std::string to_dat_conf_line(const registry::ConfigEntry &e);

}  // namespace opendat::fuzz

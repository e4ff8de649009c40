// Reads one configuration file and hands it to the parser its extension selects
// (.yaml / .yml -> YAML, anything else -> classic dat.conf).
#pragma once

#include "parse_result.hpp"

#include <string>

namespace opendat::registry {

bool is_yaml_path(const std::string &path) noexcept;

struct FileParse {
    bool opened = false;  // false: could not open/read it (a diagnostic says why)
    ParseResult result;
};

FileParse read_config_file(const std::string &path) noexcept;

}  // namespace opendat::registry

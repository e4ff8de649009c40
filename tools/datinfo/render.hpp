// The three renderings of a report (document.hpp): text for people, YAML and JSON for
// scripts. YAML and JSON are complete documents that any parser accepts.
#pragma once

#include "document.hpp"

#include <string>

namespace datinfo {

std::string render_text(const Node &doc);
std::string render_yaml(const Node &doc);
std::string render_json(const Node &doc);

// Replaces bytes that are not valid UTF-8 with U+FFFD: configuration files and provider
// strings are arbitrary bytes, JSON and YAML documents must be UTF-8.
std::string valid_utf8(const std::string &s);

}  // namespace datinfo

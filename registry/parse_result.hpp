// What a configuration parser returns: the well-formed entries in file order and one
// diagnostic per problem. Shared by the dat.conf and YAML parsers.
#pragma once

#include "registry/registry.hpp"

#include <string>
#include <vector>

namespace opendat::registry {

struct ParseResult {
    std::vector<ConfigEntry> entries;
    std::vector<ConfigDiagnostic> diagnostics;
};

// Limits shared by both formats.
constexpr std::size_t kMaxIaNameLength = DAT_NAME_MAX_LENGTH - 1;  // 255: ia_name[256] with NUL
constexpr std::size_t kMaxFieldLength = 4095;                      // PATH_MAX - 1: any other field
constexpr std::size_t kMaxConfigFileSize = 16u << 20;              // 16 MiB: refuse bigger files

}  // namespace opendat::registry

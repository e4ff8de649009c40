// Validation of the individual field values both configuration formats share
// (API version "u2.0", provider version "dapl.2.0", field lengths). Pure functions.
#pragma once

#include <dat2/udat.h>

#include <optional>
#include <string>
#include <string_view>

namespace opendat::registry {

struct ApiVersion {
    bool user_level = true;
    DAT_UINT32 major = 0;
    DAT_UINT32 minor = 0;
};

struct ProviderVersion {
    std::string id;
    DAT_UINT32 major = 0;
    DAT_UINT32 minor = 0;
};

// Decimal digits only, no sign, must fit DAT_UINT32.
std::optional<DAT_UINT32> parse_u32(std::string_view s) noexcept;
// "u2.0" / "k1.2": one letter, major, '.', minor.
std::optional<ApiVersion> parse_api_version(std::string_view s) noexcept;
// "<id>.<major>.<minor>"; the id may itself contain dots ("my.prov.2.0" -> id "my.prov").
std::optional<ProviderVersion> parse_provider_version(std::string_view s);
// Empty string when `s` fits `limit`, else "field too long (N > limit)".
std::string check_length(std::string_view s, std::size_t limit);
// Empty string when `s` is text, else "binary/NUL byte at column N" or "binary/control
// byte at column N" for its first control byte other than tab (both formats refuse them:
// in an IA name they would split every trace line and report).
std::string check_text(std::string_view s);

}  // namespace opendat::registry

#include "field_syntax.hpp"

namespace opendat::registry {

std::optional<DAT_UINT32> parse_u32(std::string_view s) noexcept {
    if (s.empty()) return std::nullopt;
    unsigned long long v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<unsigned>(c - '0');
        if (v > 0xFFFFFFFFull) return std::nullopt;  // checked per digit: no overflow of v
    }
    return static_cast<DAT_UINT32>(v);
}

std::optional<ApiVersion> parse_api_version(std::string_view s) noexcept {
    if (s.size() < 4 || (s[0] != 'u' && s[0] != 'k')) return std::nullopt;
    const auto dot = s.find('.', 1);
    if (dot == std::string_view::npos) return std::nullopt;
    auto major = parse_u32(s.substr(1, dot - 1));
    auto minor = parse_u32(s.substr(dot + 1));
    if (!major || !minor) return std::nullopt;
    return ApiVersion{s[0] == 'u', *major, *minor};
}

std::optional<ProviderVersion> parse_provider_version(std::string_view s) {
    const auto last = s.rfind('.');
    if (last == std::string_view::npos || last == 0) return std::nullopt;
    const auto prev = s.rfind('.', last - 1);
    if (prev == std::string_view::npos || prev == 0) return std::nullopt;  // id must be non-empty
    auto major = parse_u32(s.substr(prev + 1, last - prev - 1));
    auto minor = parse_u32(s.substr(last + 1));
    if (!major || !minor) return std::nullopt;
    return ProviderVersion{std::string(s.substr(0, prev)), *major, *minor};
}

std::string check_length(std::string_view s, std::size_t limit) {
    if (s.size() <= limit) return {};
    return "field too long (" + std::to_string(s.size()) + " > " + std::to_string(limit) + ")";
}

std::string check_text(std::string_view s) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return std::string(c == 0 ? "binary/NUL byte" : "binary/control byte") + " at column " +
                   std::to_string(i + 1);
    }
    return {};
}

}  // namespace opendat::registry

// Fuzzer 2: the YAML configuration parser (registry/yaml_parser.cpp, yaml-cpp underneath)
// fed arbitrary bytes. Checks: no crash, no exception out of the noexcept parser, no leak,
// no sanitizer report, and the invariants of parse_invariants.cpp.
#include "fuzz/parse_invariants.hpp"
#include "registry/yaml_parser.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    const std::string file = "fuzz.yaml";
    const auto r = opendat::registry::parse_yaml_conf(text, file);
    opendat::fuzz::check_parse_result(r, text, file, opendat::fuzz::Format::kYaml);
    return 0;
}

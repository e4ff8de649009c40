// Fuzzer 1: the classic dat.conf parser (registry/conf_parser.cpp) fed arbitrary bytes.
// Checks: no crash, no leak, no sanitizer report, and the invariants of
// parse_invariants.cpp (entries well-formed and in line order, one result per line,
// every entry survives a write-back-and-reparse round trip unchanged).
#include "fuzz/parse_invariants.hpp"
#include "registry/conf_parser.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    const std::string file = "fuzz.conf";
    const auto r = opendat::registry::parse_dat_conf(text, file);
    opendat::fuzz::check_parse_result(r, text, file, opendat::fuzz::Format::kClassic);
    return 0;
}

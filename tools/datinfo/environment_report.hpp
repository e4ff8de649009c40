// -e: the environment variables that steer libdat2 and the providers, with their values and
// meaning; and a warning, with a nearest-name suggestion, for any DAT_* / DAPL_* variable
// that nothing reads (a typo silently does nothing otherwise).
#pragma once

#include "document.hpp"

#include <string>
#include <vector>

namespace datinfo {

struct UnknownVariable {
    std::string name;
    std::string suggestion;  // "" when nothing is close
};

Node environment_node();
std::vector<UnknownVariable> unknown_variables();
// "unknown environment variable DAT_TRACE_LEVL (did you mean DAT_TRACE_LEVEL?)"
std::string describe(const UnknownVariable &u);

// Edit distance, for the suggestions (exposed for tests of the tool's logic).
std::size_t edit_distance(const std::string &a, const std::string &b);

}  // namespace datinfo

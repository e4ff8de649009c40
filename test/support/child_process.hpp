// Runs real programs from tests: a child with extra environment variables, its stdout and
// stderr captured separately, and a deadline after which it is killed.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace opendat::testing {

struct ChildResult {
    int exit_code = -1;      // exit status, or 128 + signal number
    bool timed_out = false;  // killed at the deadline
    std::string out;         // everything written to stdout
    std::string err;         // everything written to stderr
};

struct ChildOptions {
    std::map<std::string, std::string> env;  // set (or override) in the child
    std::vector<std::string> unset_env;      // removed from the child's environment
    std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

// Runs argv[0] (searched in PATH) to completion or to the deadline.
ChildResult run_child(const std::vector<std::string> &argv, const ChildOptions &options = {});

// Environment that makes the non-instrumented programs of the system (e.g. /usr/bin/dtest)
// able to load a libdat2 built with a sanitizer: LD_PRELOAD of the runtime and options that
// keep the sanitizer from reporting the program's own leaks. Empty for plain builds.
std::map<std::string, std::string> sanitizer_env_for_system_binaries();

}  // namespace opendat::testing

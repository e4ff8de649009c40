// datinfo's command line.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace datinfo {

enum class Format { Text, Yaml, Json };

// One --trace dat=N / dapl=N request.
struct TraceChange {
    bool dapl = false;  // false: the DAT component (front end and registry)
    unsigned level = 0;
};

struct Options {
    std::optional<std::string> provider;  // -P NAME
    bool verbose = false;                 // -v: every attribute field
    bool list_only = false;               // -l: configuration only, open nothing
    bool env = false;                     // -e: environment variables
    bool trace = false;                   // --trace: show (and change) trace levels
    std::vector<TraceChange> trace_changes;
    Format format = Format::Text;
    bool help = false;
    bool version = false;
};

struct ParseOutcome {
    Options options;
    std::string error;  // non-empty: usage error, print it and exit kExitUsage
};

ParseOutcome parse_options(int argc, char **argv);

// The --help text.
std::string usage_text(const char *program);

}  // namespace datinfo

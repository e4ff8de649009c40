// Where trace lines go: an immutable set of destinations (stderr, stdout, files, syslog).
// A set is built once by configure_from_environment(), published through an atomic pointer
// and never modified or freed afterwards, so emitters need no lock.
#pragma once

#include <climits>
#include <cstddef>

namespace opendat::trace::detail {

struct Warnings;

constexpr int kMaxFiles = 4;

struct SinkSet {
    unsigned dests = 0;  // Destination bits actually in force
    // Descriptors every line is written to: 2 (stderr), 1 (stdout), then the files.
    int fds[2 + kMaxFiles] = {};
    int nfds = 0;
    // File destinations: requested by the parser, replaced by those that opened.
    int nfiles = 0;
    char paths[kMaxFiles][PATH_MAX] = {};
    const char *source_env = nullptr;  // variable that named the destinations, for warnings
    // Subsystem filter (<WHO>_TRACE_SUBSYS): tags separated by single commas, "" = all.
    static constexpr std::size_t kSubsysMax = 256;
    char subsys[kSubsysMax] = {};
    // The five variables this set was built from (nullptr: unset), so that configuring again
    // with an unchanged environment can keep the set and not repeat its warnings.
    static constexpr int kEnvCount = 5;
    char *env_values[kEnvCount] = {};
    bool env_recorded = false;
    const SinkSet *previous = nullptr;  // keeps superseded sets reachable until exit
};

// The set used before (or without) configuration: stderr only.
const SinkSet &default_sinks() noexcept;

// Opens the requested files (append, O_CLOEXEC) and fills fds. A file that cannot be opened
// is dropped, stderr is used instead and a warning says why.
void open_sinks(SinkSet &set, Warnings &warnings) noexcept;

// Writes one formatted line (ending in '\n') to every destination: one write(2) per
// descriptor, retried only on EINTR or a short write.
void write_line(const SinkSet &set, int level, const char *line, std::size_t len) noexcept;

}  // namespace opendat::trace::detail

// Helpers for the trace tests: a clean trace environment, temporary directories, running
// trace_helper as a child with its stdout and stderr captured through pipes.
#pragma once

#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace trace_test {

// Every variable the facility reads.
inline constexpr const char *kTraceVars[] = {
    "DAT_TRACE_LEVEL",  "DAT_TRACE_DEST",  "DAT_DBG_TYPE",  "DAT_DBG_DEST",  "DAT_TRACE_SUBSYS",
    "DAPL_TRACE_LEVEL", "DAPL_TRACE_DEST", "DAPL_DBG_TYPE", "DAPL_DBG_DEST", "DAPL_TRACE_SUBSYS",
};

// RAII: unsets every trace variable and reconfigures both domains (defaults); on
// destruction restores the variables as they were and reconfigures again.
class CleanEnvironment {
  public:
    CleanEnvironment();
    ~CleanEnvironment();
    CleanEnvironment(const CleanEnvironment &) = delete;
    CleanEnvironment &operator=(const CleanEnvironment &) = delete;

  private:
    std::vector<std::pair<std::string, std::string>> saved_;  // variables that were set
};

void set_env(const char *name, const std::string &value);
void reconfigure();  // both domains

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    const std::string &path() const { return path_; }
    std::string file(const std::string &name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

struct ChildResult {
    int pid = -1;
    int exit_code = -1;  // exit status, or 128 + signal
    std::string out;
    std::string err;
};

// Runs trace_helper with `args`. Its environment is ours without any trace variable,
// plus `env`.
ChildResult run_helper(const std::vector<std::string> &args,
                       const std::vector<std::pair<std::string, std::string>> &env);

std::string read_file(const std::string &path);
std::vector<std::string> split_lines(const std::string &text);

// One trace line. Groups: 1 who, 2 kind, 3 time, 4 pid, 5 tid, 6 where (at detail level
// followed by "(<function>:<line>)"), 7 message.
const std::regex &line_regex();

// Lines of `text` that are WRN lines from the "trace" tag (configuration warnings).
std::vector<std::string> warning_lines(const std::string &text);

}  // namespace trace_test

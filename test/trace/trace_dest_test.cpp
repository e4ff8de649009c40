// Destinations: stderr (default), stdout, syslog, files (%p, %h, append, O_CLOEXEC), lists,
// the legacy *_DBG_DEST mask and its precedence, and the fall-back to stderr.
// stdout / stderr are checked on a child process (trace_helper) whose output we read
// through pipes, so the test's own streams stay out of it.
#include "trace_test_util.hpp"

#include "trace/environment.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace tr = opendat::trace;
using namespace trace_test;

namespace {

class TraceDest : public ::testing::Test {
  protected:
    CleanEnvironment env_;
    TempDir dir_;
};

// The single trace line in `text` (asserting there is exactly one), or "".
std::string only_line(const std::string &text) {
    const auto lines = split_lines(text);
    EXPECT_EQ(lines.size(), 1u) << text;
    return lines.empty() ? std::string() : lines[0];
}

void expect_line(const std::string &line, const char *who, const char *kind, const char *where,
                 const char *message) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, line_regex())) << line;
    EXPECT_EQ(m[1], who);
    EXPECT_EQ(m[2], kind);
    // At detail level the tag is followed by "(<function>:<line>)" (trace_bad_day_test.cpp).
    const std::string tag = m[6].str();
    EXPECT_EQ(tag.substr(0, tag.find('(')), where);
    EXPECT_EQ(m[7], message);
}

TEST_F(TraceDest, StderrByDefault) {
    const auto r = run_helper({"emit", "dat", "1", "registry", "hello"}, {});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    expect_line(only_line(r.err), "DAT", "ERR", "registry", "hello");
}

TEST_F(TraceDest, DefaultLevelFiltersInChild) {
    const auto r = run_helper({"emit", "dat", "3", "registry", "hello"}, {});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
}

TEST_F(TraceDest, StdoutForBothDomains) {
    auto r = run_helper({"emit", "dat", "3", "ia", "to stdout"},
                        {{"DAT_TRACE_DEST", "stdout"}, {"DAT_TRACE_LEVEL", "3"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    expect_line(only_line(r.out), "DAT", "EVT", "ia", "to stdout");

    r = run_helper({"emit", "dapl", "2", "ucm", "provider warning"},
                   {{"DAPL_TRACE_DEST", "stdout"}, {"DAPL_TRACE_LEVEL", "7"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    expect_line(only_line(r.out), "DAPL", "WRN", "ucm", "provider warning");
    EXPECT_NE(r.out.find(" ucm(main:"), std::string::npos) << r.out;  // level 7: the source
}

TEST_F(TraceDest, ListOfDestinations) {
    const auto r =
        run_helper({"emit", "dat", "1", "x", "twice"}, {{"DAT_TRACE_DEST", " stderr , stdout ,"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_line(only_line(r.out), "DAT", "ERR", "x", "twice");
    expect_line(only_line(r.err), "DAT", "ERR", "x", "twice");
}

TEST_F(TraceDest, LegacyDbgDestAndPrecedence) {
    // DBG_DEST=1: stdout, as the reference did.
    auto r = run_helper({"emit", "dat", "1", "x", "legacy"}, {{"DAT_DBG_DEST", "1"}});
    EXPECT_EQ(r.err, "");
    expect_line(only_line(r.out), "DAT", "ERR", "x", "legacy");

    r = run_helper({"emit", "dapl", "1", "x", "legacy"}, {{"DAPL_DBG_DEST", "0x1"}});
    EXPECT_EQ(r.err, "");
    expect_line(only_line(r.out), "DAPL", "ERR", "x", "legacy");

    // *_TRACE_DEST wins over *_DBG_DEST.
    r = run_helper({"emit", "dat", "1", "x", "modern"},
                   {{"DAT_DBG_DEST", "1"}, {"DAT_TRACE_DEST", "stderr"}});
    EXPECT_EQ(r.out, "");
    expect_line(only_line(r.err), "DAT", "ERR", "x", "modern");

    // And the legacy pair works together: DBG_TYPE 0x3 (errors + warnings) -> level 3.
    r = run_helper({"emit", "dapl", "3", "x", "normal"},
                   {{"DAPL_DBG_TYPE", "0x3"}, {"DAPL_DBG_DEST", "1"}});
    EXPECT_EQ(r.err, "");
    expect_line(only_line(r.out), "DAPL", "EVT", "x", "normal");
}

TEST_F(TraceDest, LegacyDbgDestSelectsSyslog) {
    set_env("DAT_DBG_DEST", "2");
    set_env("DAPL_DBG_DEST", "3");
    reconfigure();
    EXPECT_EQ(tr::dat_domain().destinations(), unsigned{tr::kDestSyslog});
    EXPECT_EQ(tr::dapl_domain().destinations(), unsigned{tr::kDestSyslog | tr::kDestStdout});
    set_env("DAT_TRACE_DEST", "stderr");
    reconfigure();
    EXPECT_EQ(tr::dat_domain().destinations(), unsigned{tr::kDestStderr});
}

TEST_F(TraceDest, BadLegacyDbgDestFallsBackToStderrWithWarning) {
    for (const char *bad : {"0", "4", "x", ""}) {
        const auto r = run_helper({"emit", "dat", "1", "x", "m"}, {{"DAT_DBG_DEST", bad}});
        EXPECT_EQ(r.out, "");
        const auto w = warning_lines(r.err);
        ASSERT_EQ(w.size(), 1u) << r.err;
        EXPECT_NE(w[0].find(std::string("DAT_DBG_DEST=\"") + bad + "\""), std::string::npos)
            << w[0];
        EXPECT_NE(w[0].find("using stderr"), std::string::npos) << w[0];
        EXPECT_EQ(split_lines(r.err).size(), 2u) << r.err;  // warning + the line itself
    }
}

TEST_F(TraceDest, EmptyTraceDestFallsBackToStderrWithWarning) {
    const auto r = run_helper({"emit", "dat", "1", "x", "m"}, {{"DAT_TRACE_DEST", " , "}});
    EXPECT_EQ(r.out, "");
    const auto w = warning_lines(r.err);
    ASSERT_EQ(w.size(), 1u) << r.err;
    EXPECT_NE(w[0].find("DAT_TRACE_DEST=\" , \""), std::string::npos) << w[0];
}

TEST_F(TraceDest, SyslogIsSelectedAndDoesNotCrash) {
    set_env("DAT_TRACE_DEST", "syslog");
    set_env("DAPL_TRACE_DEST", "stderr,SYSLOG");
    reconfigure();
    EXPECT_EQ(tr::dat_domain().destinations(), unsigned{tr::kDestSyslog});
    EXPECT_EQ(tr::dapl_domain().destinations(), unsigned{tr::kDestSyslog | tr::kDestStderr});
    errno = 0;
    for (int level : {1, 2, 3, 5, 7, 10})
        tr::dat_domain().emit(level, "test", "opendat trace syslog test %d", level);
    EXPECT_EQ(errno, 0);

    // Also in a child (a process that never called openlog()).
    const auto r = run_helper({"emit", "dat", "1", "x", "opendat trace syslog test"},
                              {{"DAT_TRACE_DEST", "syslog"}});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "");
    const auto q = run_helper({"query", "dat"}, {{"DAT_TRACE_DEST", "syslog"}});
    EXPECT_EQ(q.out, "level=1 dests=" + std::to_string(tr::kDestSyslog) + " file=-\n");
}

TEST_F(TraceDest, FileWithPidAndHostExpansion) {
    char host[256] = {};
    ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
    set_env("DAT_TRACE_DEST", dir_.file("dat-%p-%h-100%%.log"));
    tr::dat_domain().configure_from_environment();
    const std::string expect =
        dir_.file("dat-" + std::to_string(getpid()) + "-" + host + "-100%.log");
    ASSERT_NE(tr::dat_domain().file_path(0), nullptr);
    EXPECT_EQ(tr::dat_domain().file_path(0), expect);
    EXPECT_EQ(tr::dat_domain().file_path(1), nullptr);
    EXPECT_EQ(tr::dat_domain().destinations(), unsigned{tr::kDestFile});
    DAT_TRC(tr::kError, "registry", "into the file");
    expect_line(only_line(read_file(expect)), "DAT", "ERR", "registry", "into the file");
}

TEST_F(TraceDest, FilePerProcessWithPid) {
    const std::string pattern = dir_.file("child-%p.log");
    const auto a = run_helper({"emit", "dapl", "1", "x", "from a"}, {{"DAPL_TRACE_DEST", pattern}});
    const auto b = run_helper({"emit", "dapl", "1", "x", "from b"}, {{"DAPL_TRACE_DEST", pattern}});
    ASSERT_GT(a.pid, 0);
    ASSERT_GT(b.pid, 0);
    EXPECT_EQ(a.out + a.err + b.out + b.err, "");
    const std::string fa = dir_.file("child-" + std::to_string(a.pid) + ".log");
    const std::string fb = dir_.file("child-" + std::to_string(b.pid) + ".log");
    expect_line(only_line(read_file(fa)), "DAPL", "ERR", "x", "from a");
    expect_line(only_line(read_file(fb)), "DAPL", "ERR", "x", "from b");
    // The pid in the line is the process's, matching the file name.
    std::smatch m;
    const std::string la = only_line(read_file(fa));
    ASSERT_TRUE(std::regex_match(la, m, line_regex()));
    EXPECT_EQ(m[4], std::to_string(a.pid));
}

TEST_F(TraceDest, FileIsAppendedAndCloseOnExec) {
    const std::string path = dir_.file("append.log");
    { std::ofstream(path) << "existing line\n"; }
    set_env("DAT_TRACE_DEST", path + ",stderr");
    tr::dat_domain().configure_from_environment();
    EXPECT_EQ(tr::dat_domain().destinations(), unsigned{tr::kDestFile | tr::kDestStderr});
    tr::dat_domain().set_level(tr::kOff);  // keep our stderr quiet; emit() itself is unconditional
    tr::dat_domain().emit(tr::kError, "x", "appended");
    const auto lines = split_lines(read_file(path));
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0], "existing line");
    expect_line(lines[1], "DAT", "ERR", "x", "appended");

    // Find our descriptor for the file and check O_APPEND and FD_CLOEXEC.
    bool found = false;
    for (const auto &e : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const auto target = std::filesystem::read_symlink(e.path(), ec);
        if (ec || target != path) continue;
        const int fd = std::stoi(e.path().filename());
        EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        EXPECT_TRUE(fcntl(fd, F_GETFL) & O_APPEND);
        found = true;
    }
    EXPECT_TRUE(found);
}

TEST_F(TraceDest, UnopenableFileFallsBackToStderrWithReason) {
    const std::string bad = dir_.file("no-such-dir/trace.log");
    const auto r =
        run_helper({"emit", "dat", "1", "registry", "still traced"}, {{"DAT_TRACE_DEST", bad}});
    EXPECT_EQ(r.out, "");
    const auto lines = split_lines(r.err);
    ASSERT_EQ(lines.size(), 2u) << r.err;
    const auto w = warning_lines(r.err);
    ASSERT_EQ(w.size(), 1u) << r.err;
    EXPECT_NE(w[0].find("\"" + bad + "\""), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("DAT_TRACE_DEST"), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("No such file or directory"), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("using stderr instead"), std::string::npos) << w[0];
    expect_line(lines[1], "DAT", "ERR", "registry", "still traced");

    const auto q = run_helper({"query", "dat"}, {{"DAT_TRACE_DEST", bad}});
    EXPECT_EQ(q.out, "level=1 dests=" + std::to_string(tr::kDestStderr) + " file=-\n");
}

TEST_F(TraceDest, QueryReportsFileDestination) {
    const std::string path = dir_.file("q.log");
    const auto q =
        run_helper({"query", "dapl"}, {{"DAPL_TRACE_DEST", path}, {"DAPL_TRACE_LEVEL", "7"}});
    EXPECT_EQ(q.out, "level=7 dests=" + std::to_string(tr::kDestFile) + " file=" + path + "\n");
    EXPECT_EQ(q.err, "");
}

TEST(TraceExpandPath, Expansions) {
    char out[64];
    ASSERT_TRUE(tr::detail::expand_path("/a/%x/b%", out, sizeof out));
    EXPECT_STREQ(out, "/a/%x/b%");  // unknown escapes are kept
    ASSERT_TRUE(tr::detail::expand_path("t-%p", out, sizeof out));
    EXPECT_EQ(std::string(out), "t-" + std::to_string(getpid()));
    EXPECT_FALSE(tr::detail::expand_path(std::string(100, 'x').c_str(), out, sizeof out));
}

}  // namespace

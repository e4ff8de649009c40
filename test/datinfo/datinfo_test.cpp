// datinfo against generated configurations: what it reports and its exit status.
#include "datinfo_run.hpp"

#include <gtest/gtest.h>

#include <net/if.h>
#include <sys/resource.h>
#include <unistd.h>

using datinfo_test::fake_line;
using datinfo_test::run_datinfo;
using datinfo_test::write_conf;

namespace {

bool contains(const std::string &hay, const std::string &needle) {
    return hay.find(needle) != std::string::npos;
}

#define EXPECT_HAS(text, needle) \
    EXPECT_TRUE(contains((text), (needle))) << "missing '" << (needle) << "' in:\n" << (text)

}  // namespace

TEST(Datinfo, GoodEntryShowsItsAttributes) {
    const auto conf = write_conf("good.conf", fake_line("fake0"));
    const auto r = run_datinfo(conf, {"-P", "fake0"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "file: " + conf);
    EXPECT_HAS(r.out, "reason: DAT_OVERRIDE");
    EXPECT_HAS(r.out, "status: ok");
    EXPECT_HAS(r.out, "adapter_name: fake-adapter");
    EXPECT_HAS(r.out, "ia_address: 127.0.0.1");
    EXPECT_HAS(r.out, "fake_vendor_attr: vendor-value");
    EXPECT_HAS(r.out, "fake_attr: hello");
    EXPECT_HAS(r.out, "vendor_extension: 1.0");
    // Function pointers are never printed as strings.
    EXPECT_HAS(r.out, "debug_query: (function)");
    EXPECT_HAS(r.out, "debug_modify: (function)");
    // Summary by default, everything with -v.
    EXPECT_FALSE(contains(r.out, "max_pzs"));
    const auto v = run_datinfo(conf, {"-P", "fake0", "-v"});
    ASSERT_EQ(v.exit_code, 0) << v.out << v.err;
    EXPECT_HAS(v.out, "max_pzs: 4");
    EXPECT_HAS(v.out, "evd_stream_merging_supported");
}

TEST(Datinfo, ThreadsafeEntryIsOpenedWithItsOwnKey) {
    const auto conf =
        write_conf("ts.conf", fake_line("fake-ts", "fake 0", "u2.0 threadsafe default"));
    const auto r = run_datinfo(conf, {"-P", "fake-ts"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "is_thread_safe: yes");
}

TEST(Datinfo, BadOverrideIsReportedWithExitStatus3) {
    const auto r = run_datinfo(std::string(DATINFO_TEST_DIR) + "/no-such-file.conf", {});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_HAS(r.out, "DAT_OVERRIDE, bad filename");
    EXPECT_HAS(r.out, "read: no");
}

TEST(Datinfo, MissingLibrary) {
    const auto conf =
        write_conf("missing.conf",
                   "gone u2.0 nonthreadsafe default /nonexistent/libgone.so x.1.0 \"a 0\" \"\"\n");
    const auto r = run_datinfo(conf, {"-P", "gone"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_HAS(r.out, "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED");
    EXPECT_HAS(r.out, "cause: library_not_found");
    EXPECT_HAS(r.out, "/nonexistent/libgone.so: cannot open shared object file");
    EXPECT_HAS(r.out, "correct the library field at " + conf + ":1");
}

// A relative library path is opened from the current directory, not dat.conf's: the
// diagnosis used to say only "cannot be found", which sends the operator looking in the
// wrong place.
TEST(Datinfo, RelativeLibraryPathSaysWhereItWasLookedFor) {
    const auto conf = write_conf(
        "relative.conf", "rel u2.0 nonthreadsafe default opendat/libgone.so x.1.0 \"a 0\" \"\"\n");
    const auto r = run_datinfo(conf, {"-P", "rel"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_HAS(r.out, "cause: library_not_found");
    EXPECT_HAS(r.out, "a relative path is opened from the current directory");
    EXPECT_HAS(r.out, "not from the directory of " + conf + ": give an absolute path");
}

// datinfo(1): libdat2's error lines are silenced while datinfo opens IAs, but a problem in
// the file is written by libdat2 as it loads, before main(): once on stderr, and in the report.
TEST(Datinfo, AProblemInTheFileIsOnStderrOnceAndInTheReport) {
    const auto conf =
        write_conf("oneproblem.conf", "bad x2.0 nonthreadsafe default a b \"\" \"\"\n");
    const auto r = run_datinfo(conf, {"-l"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "api version must look like u2.0 (got 'x2.0')");
    const std::string line = conf + ":1: api_version:";
    const auto first = r.err.find(line);
    EXPECT_NE(first, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(line, first + 1), std::string::npos) << r.err;
}

TEST(Datinfo, LibraryWithoutEntryPoint) {
    const auto conf =
        write_conf("noentry.conf", "noentry u2.0 nonthreadsafe default " DATINFO_NOT_A_PROVIDER
                                   " x.1.0 \"\" \"\"\n");
    const auto r = run_datinfo(conf, {"-P", "noentry"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_HAS(r.out, "cause: entry_point_missing");
    EXPECT_HAS(r.out, "no dat_provider_init");
}

TEST(Datinfo, ProviderThatRegistersNothing) {
    const auto conf = write_conf("noreg.conf", fake_line("quiet", "noregister"));
    const auto r = run_datinfo(conf, {"-P", "quiet"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_HAS(r.out, "cause: registered_nothing");
}

TEST(Datinfo, MalformedLinesAreListedWithFileAndLine) {
    const auto conf =
        write_conf("bad.conf", "# comment\n" + fake_line("fake0") +
                                   "broken x2.0 nonthreadsafe default /lib/x.so a.1.0 \"\" \"\"\n"
                                   "short u2.0 nonthreadsafe\n");
    const auto r = run_datinfo(conf, {});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "file: " + conf + "\n      line: 3\n      field: api_version");
    EXPECT_HAS(r.out, "line: 4");
    EXPECT_HAS(r.out, "effect: entry skipped");
    EXPECT_HAS(r.out, "- name: fake0");  // the good line still works
    EXPECT_HAS(r.out, "status: ok");
}

TEST(Datinfo, KernelAndNondefaultEntriesAreParsedNotLoaded) {
    const auto conf = write_conf(
        "k.conf", fake_line("fake0") + fake_line("kern", "fake 0", "k2.0 nonthreadsafe default") +
                      fake_line("nodef", "fake 0", "u2.0 nonthreadsafe nondefault"));
    const auto r = run_datinfo(conf, {});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "entries: 3");
    EXPECT_HAS(r.out, "loadable_entries: 1");
    EXPECT_HAS(r.out, "kernel-level (k) entry: parsed, never loaded");
    EXPECT_HAS(r.out, "nondefault entry: parsed, never loaded");
    // Asking for one of them by name: it exists but libdat2 never loads it.
    const auto p = run_datinfo(conf, {"-P", "nodef"});
    EXPECT_EQ(p.exit_code, 4) << p.out << p.err;
    EXPECT_HAS(p.out, "status: not loaded");
}

TEST(Datinfo, DuplicateKeyIsShownAsChained) {
    const auto conf = write_conf("dup.conf", fake_line("fake0") + fake_line("fake0"));
    const auto r = run_datinfo(conf, {});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "status: chained");
    EXPECT_HAS(r.out, "same key as " + conf + ":1");
}

TEST(Datinfo, YamlConfigurationWithAWarning) {
    const auto conf = write_conf("dat.yaml",
                                 "providers:\n"
                                 "  - name: fake-yaml\n"
                                 "    api: u2.0\n"
                                 "    library: " DATINFO_FAKE_PROVIDER
                                 "\n"
                                 "    ia_params: \"fake 0\"\n"
                                 "    colour: blue\n");
    const auto r = run_datinfo(conf, {"-P", "fake-yaml"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "format: yaml");
    EXPECT_HAS(r.out, "severity: warning");
    EXPECT_HAS(r.out, "effect: entry still used");
    EXPECT_HAS(r.out, "status: ok");
}

TEST(Datinfo, UnknownNameExitsWith4) {
    const auto conf = write_conf("one.conf", fake_line("fake0"));
    const auto r = run_datinfo(conf, {"-P", "nosuch"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_HAS(r.err, "no entry named 'nosuch'");
}

TEST(Datinfo, ListOnlyOpensNothing) {
    const auto conf = write_conf("list.conf", fake_line("fake0"));
    const auto r = run_datinfo(conf, {"-l"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "status: not opened (-l)");
    EXPECT_FALSE(contains(r.out, "adapter_name"));
}

// Debian's DAPL provider for the "ib0" netdev: on a host without ib0 its ia_open fails with
// DAT_INVALID_ADDRESS, and datinfo must name the missing interface.
TEST(Datinfo, DebianOfaProviderWithoutIb0) {
    if (access("/usr/lib/x86_64-linux-gnu/libdaplofa.so.2", R_OK) != 0)
        GTEST_SKIP() << "libdapl2 not installed";
    if (if_nametoindex("ib0") != 0) GTEST_SKIP() << "this host has ib0";
    const auto conf = write_conf(
        "ofa.conf",
        "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n");
    const auto r = run_datinfo(conf, {"-P", "ofa-v2-ib0"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_HAS(r.out, "DAT_INVALID_ADDRESS");
    EXPECT_HAS(r.out, "cause: interface_not_present");
    EXPECT_HAS(r.out, "network interface 'ib0'");
    EXPECT_HAS(r.out, "is not present on this host");
    // A verbs provider: a small locked-memory limit is reported once, with how to raise it.
    rlimit rl{};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t{64} << 20)) {
        EXPECT_HAS(r.out, "cause: memlock_too_small");
        EXPECT_HAS(r.out, "memlock unlimited");
    }
}

TEST(Datinfo, TraceChangesTheFakeProvidersLevel) {
    const auto conf = write_conf("trace.conf", fake_line("fake0"));
    const auto shown = run_datinfo(conf, {"-P", "fake0", "--trace"});
    ASSERT_EQ(shown.exit_code, 0) << shown.out << shown.err;
    EXPECT_HAS(shown.out, "trace:\n      supported: yes\n      level: 3");
    const auto r = run_datinfo(conf, {"-P", "fake0", "--trace", "dapl=7"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "level: 7\n      before: 3\n      after: 7");
    EXPECT_HAS(r.out, "cannot change the level of another running program");
}

TEST(Datinfo, TraceChangesTheDatLevelOfThisProcess) {
    const auto conf = write_conf("tracedat.conf", fake_line("fake0"));
    const auto r = run_datinfo(conf, {"-P", "fake0", "--trace=dat=7"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "after: 7");
    // The effect: libdat2 now traces the open at detail level on stderr.
    EXPECT_HAS(r.err, "DAT EVT");
    EXPECT_HAS(r.err, "fake0");
}

TEST(Datinfo, TraceLevelOutOfRangeIsAUsageError) {
    const auto conf = write_conf("tracefail.conf", fake_line("fake0"));
    const auto r = run_datinfo(conf, {"-P", "fake0", "--trace", "dapl=11"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;  // level out of range: usage error
    EXPECT_HAS(r.err, "0..10");
}

// --trace takes a level as DAT_TRACE_LEVEL does: digits only, so a sign, a blank or a
// suffix that the environment variable would refuse is refused here too.
TEST(Datinfo, TraceLevelIsReadAsStrictlyAsTheEnvironment) {
    const auto conf = write_conf("tracestrict.conf", fake_line("fake0"));
    for (const char *spec : {"dat=+3", "dat= 3", "dat=3x", "dapl=0x3", "dat=-0"}) {
        const auto r = run_datinfo(conf, {"-P", "fake0", "--trace", spec});
        EXPECT_EQ(r.exit_code, 2) << spec << "\n" << r.out << r.err;
        EXPECT_HAS(r.err, "0..10");
    }
}

TEST(Datinfo, EnvListsVariablesWithMeaning) {
    const auto r =
        run_datinfo("", {"-e", "-l"}, {{"DAT_TRACE_LEVEL", "3"}, {"DAPL_DBG_TYPE", "0xff"}});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "name: DAT_TRACE_LEVEL\n      set: yes\n      value: 3");
    EXPECT_HAS(r.out, "effect: level 3 (normal operation)");
    EXPECT_HAS(r.out, "mask -> level 10");
    EXPECT_HAS(r.out, "name: LD_LIBRARY_PATH");
    EXPECT_HAS(r.out, "name: DAT_OVERRIDE\n      set: no");
}

// datinfo judges the values with libdat2's own parsing: a destination mask in hex or
// octal, or with bits beyond stdout/syslog, is accepted as libdat2 accepts it, and a signed
// level is refused as libdat2 refuses it.
TEST(Datinfo, EnvJudgesValuesAsLibdat2Does) {
    const auto r =
        run_datinfo("", {"-e", "-l"},
                    {{"DAT_TRACE_LEVEL", "+5"}, {"DAT_DBG_DEST", "0x3"}, {"DAPL_DBG_DEST", "6"}});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "value: +5\n");
    EXPECT_HAS(r.out, "effect: invalid: the default level 1 is used");
    EXPECT_HAS(r.out, "value: 0x3\n");
    EXPECT_HAS(r.out, "effect: stdout and syslog");
    EXPECT_HAS(r.out, "value: 6\n");
    EXPECT_HAS(r.out, "effect: syslog");
}

// DAT_OVERRIDE set but empty or unreadable is an error in libdat2, never a fallback to the
// default files: the verdict says so (and "-e" alone must not open anything).
TEST(Datinfo, EnvSaysABadOverrideRegistersNoProvider) {
    auto r = run_datinfo("", {"-e", "-l"}, {{"DAT_OVERRIDE", ""}});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // kExitNoConfig: no file read
    EXPECT_HAS(r.out,
               "effect: invalid (empty file name): libdat2 reports a bad file name and "
               "registers no provider");
    r = run_datinfo("", {"-e", "-l"}, {{"DAT_OVERRIDE", "/nonexistent/dat.conf"}});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // kExitNoConfig: no file read
    EXPECT_HAS(r.out, "effect: not readable: libdat2 reports a bad file name");
    // A directory is readable (access R_OK) but no configuration file: "-e" used to call it
    // "readable", while libdat2 reads nothing from it.
    r = run_datinfo("", {"-e", "-l"}, {{"DAT_OVERRIDE", "/"}});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_HAS(r.out, "effect: a directory, not a file");
    EXPECT_HAS(r.out, "is a directory, not a configuration file");
}

// Every declared tunable is listed (common/tunables), with its verdict: a valid value
// says what it does, an invalid one what is wrong and which default is used instead.
TEST(Datinfo, EnvListsEveryTunableWithItsVerdict) {
    const auto r = run_datinfo("", {"-e", "-l"},
                               {{"DAT_TCP_CONNECT_RETRY_MS", "3 seconds"},
                                {"DAT_TCP_KEEPALIVE", "30,5,3"},
                                {"OPENDAT_VERBS_MAX_INLINE", "1000000"},
                                {"DAPL_TRACE_SUBSYS", "tcp,ia"}});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const char *name :
         {"DAT_OVERRIDE", "DAT_TRACE_LEVEL", "DAT_TRACE_DEST", "DAT_TRACE_SUBSYS", "DAT_DBG_TYPE",
          "DAT_DBG_DEST", "DAPL_TRACE_LEVEL", "DAPL_TRACE_DEST", "DAPL_TRACE_SUBSYS",
          "DAPL_DBG_TYPE", "DAPL_DBG_DEST", "DAT_TCP_KEEPALIVE", "DAT_TCP_USER_TIMEOUT_MS",
          "DAT_TCP_CONNECT_RETRY_MS", "OPENDAT_VERBS_MAX_INLINE"})
        EXPECT_HAS(r.out, std::string("name: ") + name + "\n");
    EXPECT_HAS(r.out,
               "value: 3 seconds\n      valid: no\n      problem: not a whole decimal "
               "number\n");
    EXPECT_HAS(r.out, "effect: invalid (not a whole decimal number): the default 3000 is used");
    EXPECT_HAS(r.out, "value: 30,5,3\n      valid: yes\n");
    EXPECT_HAS(r.out, "effect: idle 30 s, interval 5 s, 3 probes");
    EXPECT_HAS(r.out, "problem: outside 0..65536");
    EXPECT_HAS(r.out, "value: tcp,ia\n      valid: yes\n");
    EXPECT_HAS(r.out, "range: 0..600000");
    // A misspelt tunable is caught as well.
    const auto typo = run_datinfo("", {"-l"}, {{"DAT_TCP_KEEPALIV", "0"}});
    EXPECT_HAS(typo.err, "DAT_TCP_KEEPALIV (did you mean DAT_TCP_KEEPALIVE?)");
}

TEST(Datinfo, UnknownVariableGetsASuggestion) {
    const auto conf = write_conf("env.conf", fake_line("fake0"));
    const auto r =
        run_datinfo(conf, {"-l"}, {{"DAT_TRACE_LEVL", "3"}, {"DAPL_FROBNICATE_EVERYTHING", "1"}});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.err,
               "unknown environment variable DAT_TRACE_LEVL (did you mean DAT_TRACE_LEVEL?)");
    EXPECT_HAS(r.err, "DAPL_FROBNICATE_EVERYTHING (nothing reads it)");
    // Provider-private DAPL variables are known, not warned about.
    const auto k = run_datinfo(conf, {"-l"}, {{"DAPL_IB_MTU", "1024"}});
    EXPECT_FALSE(contains(k.err, "DAPL_IB_MTU")) << k.err;
}

TEST(Datinfo, UsageAndHelp) {
    const auto bad = run_datinfo("", {"--frobnicate"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_HAS(bad.err, "unknown argument '--frobnicate'");
    const auto help = run_datinfo("", {"--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_HAS(help.out, "cannot change");
    EXPECT_HAS(help.out, "Exit status:");
}

// Without DAT_OVERRIDE, datinfo reports what *libdat2* does: it runs from the build tree,
// so the build-tree dat.conf is used (datinfo's executable is elsewhere, in tools/datinfo/).
TEST(Datinfo, BuildTreeConfigurationIsReportedFromLibdat2sLocation) {
    const auto r = run_datinfo("", {"-l"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "file: " DATINFO_BUILD_CONF "\n  reason: build tree");
}

TEST(Datinfo, OpensTheBuildTreeTcpEntries) {
    if (!DATINFO_HAVE_TCP) GTEST_SKIP() << "no tcp provider in this build";
    const std::map<std::string, std::string> env{
        {"LSAN_OPTIONS", "suppressions=" DATINFO_LSAN_SUPP}};
    const auto r = run_datinfo("", {"-P", "tcp-lo"}, env);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_HAS(r.out, "reason: build tree");
    EXPECT_HAS(r.out, "status: ok");
    const auto all = run_datinfo("", {}, env);
    EXPECT_EQ(all.exit_code, 0) << all.out << all.err;
    EXPECT_FALSE(contains(all.out, "status: failed")) << all.out;
}

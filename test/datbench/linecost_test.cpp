// tools/linecost/bench_linecost: it runs its ping-pong to the end and prints every row with
// a figure, and refuses arguments it cannot honour. Its figures are for people, not
// asserted: benchmarks print, tests check that they work.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <string>

namespace {

struct Result {
    int status = -1;
    std::string out;
};

Result run_tool(const std::string &args) {
    Result r;
    const std::string cmd = std::string(BENCH_LINECOST) + " " + args + " 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

// The round trip (second column) of the table row that starts with `what`; -1 if none.
double round_trip(const std::string &out, const std::string &what) {
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("| " + what, 0) != 0) continue;
        const auto bar = line.find('|', 2);
        if (bar == std::string::npos) return -1;
        return std::stod(line.substr(bar + 1));
    }
    return -1;
}

TEST(BenchLinecost, PrintsARoundTripForEveryKindOfWork) {
    const Result r = run_tool("-r 1 -n 200");
    ASSERT_EQ(r.status, 0) << r.out;
    for (const char *row :
         {"none", "256 data lines on 16 pages", "1 data line on each of 256 pages",
          "32 calls, a code page each", "8000 dependent adds"}) {
        const double us = round_trip(r.out, row);
        EXPECT_GT(us, 0.0) << row << " in:\n" << r.out;
        EXPECT_LT(us, 100000.0) << row;  // a number, not garbage
    }
}

TEST(BenchLinecost, RefusesRoundsItCannotKeep) {
    for (const char *args : {"-r 0", "-r 100", "-n 5", "-x"}) {
        const Result r = run_tool(args);
        EXPECT_EQ(r.status, 2) << args << ": " << r.out;
        EXPECT_EQ(r.out.find("| none"), std::string::npos) << args;
    }
}

}  // namespace

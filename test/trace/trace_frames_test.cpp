// Level 10 end to end: datbench moves data through the real tcp provider (server and
// client forked on loopback) with DAPL_TRACE_LEVEL=10 and DAPL_TRACE_SUBSYS=tcp.frame;
// every frame sent and received is traced, with its function and line, and nothing else
// gets through the filter. At level 9 no frame is traced.
#include "child_process.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

using opendat::testing::ChildOptions;
using opendat::testing::run_child;

int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

std::string slurp(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct BenchRun {
    int exit_code;
    std::string trace;
    std::string output;
};

BenchRun bench_with_level(const char *level) {
    char dir[] = "/tmp/trace_frames_XXXXXX";
    EXPECT_NE(mkdtemp(dir), nullptr);
    const std::string log = std::string(dir) + "/frames.log";
    ChildOptions o;
    o.env = {{"DAT_OVERRIDE", TRACE_FRAMES_CONF},
             {"DAPL_TRACE_LEVEL", level},
             {"DAPL_TRACE_SUBSYS", "tcp.frame"},
             {"DAPL_TRACE_DEST", log}};
    o.unset_env = {"DAPL_DBG_TYPE", "DAPL_DBG_DEST", "DAT_TRACE_LEVEL", "DAT_TRACE_SUBSYS"};
    o.timeout = std::chrono::seconds(120);
    const int port = free_port();
    const auto r = run_child(
        {TRACE_FRAMES_DATBENCH, "-q", "-n", "20", "--warmup", "2", "-b", "65536", "-r", "1",
         "--lat-max", "64", "--bw-min", "4096", "--bw-max", "4096", "--port", std::to_string(port)},
        o);
    BenchRun out{r.exit_code, slurp(log), r.out + r.err};
    std::remove(log.c_str());
    rmdir(dir);
    return out;
}

TEST(TraceFrames, LevelTenTracesEveryFrameAndTheFilterKeepsOnlyThem) {
    const BenchRun r = bench_with_level("10");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::regex rx(
        R"(DAPL EVT \S+ pid=\d+ tid=\d+ tcp\.frame\(rx_frame_traced:\d+\): EP 0x[0-9a-f]+ rx op \d+ flags 0x[0-9a-f]+ length \d+ seq \d+)");
    const std::regex tx(
        R"(DAPL EVT \S+ pid=\d+ tid=\d+ tcp\.frame\(tx_frame_traced:\d+\): EP 0x[0-9a-f]+ tx op \d+ flags 0x[0-9a-f]+ length \d+ seq \d+)");
    std::istringstream lines(r.trace);
    std::string l;
    int rx_count = 0, tx_count = 0, other = 0;
    while (std::getline(lines, l)) {
        if (std::regex_match(l, rx))
            ++rx_count;
        else if (std::regex_match(l, tx))
            ++tx_count;
        else if (l.find(" EVT ") != std::string::npos)
            ++other;  // an event line of another tag got through the filter
    }
    // 22 latency round trips of two kinds and the bandwidth runs: well over 40 frames
    // each way; every frame sent in this process pair is also received.
    EXPECT_GT(rx_count, 40) << r.trace.substr(0, 4000);
    EXPECT_GT(tx_count, 40) << r.trace.substr(0, 4000);
    EXPECT_EQ(other, 0) << r.trace.substr(0, 4000);
}

TEST(TraceFrames, LevelNineTracesNoFrame) {
    const BenchRun r = bench_with_level("9");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.trace.find("tcp.frame"), std::string::npos) << r.trace.substr(0, 4000);
}

}  // namespace

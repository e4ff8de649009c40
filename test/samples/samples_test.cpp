// The samples, end to end over the tcp provider on loopback: a server process and a client
// process per test (each test on its own free port, so tests run in parallel), exit codes
// and the lines users are told to look for.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.hpp"

namespace {

using opendat::testing::ChildOptions;
using opendat::testing::ChildResult;
using opendat::testing::run_child;
using namespace std::chrono_literals;

// Environment of every sample: the build-tree dat.conf and default trace settings.
ChildOptions sample_options() {
    ChildOptions o;
    o.env["DAT_OVERRIDE"] = SAMPLES_BUILD_CONF;
    o.unset_env = {"DAPL_TRACE_LEVEL", "DAPL_TRACE_DEST", "DAPL_DBG_TYPE", "DAPL_DBG_DEST",
                   "DAT_TRACE_LEVEL",  "DAT_TRACE_DEST",  "DAT_DBG_TYPE",  "DAT_DBG_DEST"};
    o.timeout = 90s;
    return o;
}

// A TCP port nobody listens on right now (the kernel's choice).
int free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

// Whether some socket listens on `port` (state 0A in /proc/net/tcp or tcp6). Looking does
// not connect, so the server sees no stray connection request.
bool listening(int port) {
    char want[8];
    std::snprintf(want, sizeof want, ":%04X", port);
    for (const char *table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // header
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string sl, local, remote, state;
            fields >> sl >> local >> remote >> state;
            if (state == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, want) == 0)
                return true;
        }
    }
    return false;
}

struct PairResult {
    ChildResult server;
    ChildResult client;
    bool server_listened = false;
};

// Runs `exe` as server (-p port) and, once it listens, as client (-h 127.0.0.1 -p port).
PairResult run_pair(const std::string &exe, const std::vector<std::string> &client_args,
                    const std::vector<std::string> &server_args = {}) {
    PairResult r;
    const int port = free_port();
    EXPECT_GT(port, 0);
    std::vector<std::string> server{exe, "-p", std::to_string(port)};
    server.insert(server.end(), server_args.begin(), server_args.end());
    std::vector<std::string> client{exe, "-h", "127.0.0.1", "-p", std::to_string(port)};
    client.insert(client.end(), client_args.begin(), client_args.end());

    auto server_done =
        std::async(std::launch::async, [&] { return run_child(server, sample_options()); });
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!(r.server_listened = listening(port)) && std::chrono::steady_clock::now() < deadline &&
           server_done.wait_for(20ms) != std::future_status::ready) {
    }
    if (r.server_listened) r.client = run_child(client, sample_options());
    r.server =
        server_done.get();  // the server ends when the client disconnects (or at its deadline)
    return r;
}

// Prints both sides' output when a test fails.
std::string both(const PairResult &r) {
    return "--- server (exit " + std::to_string(r.server.exit_code) + ")\n" + r.server.out +
           r.server.err + "--- client (exit " + std::to_string(r.client.exit_code) + ")\n" +
           r.client.out + r.client.err;
}

void expect_success(const PairResult &r) {
    ASSERT_TRUE(r.server_listened) << both(r);
    EXPECT_FALSE(r.server.timed_out) << both(r);
    EXPECT_FALSE(r.client.timed_out) << both(r);
    EXPECT_EQ(r.server.exit_code, 0) << both(r);
    EXPECT_EQ(r.client.exit_code, 0) << both(r);
    EXPECT_NE(r.server.out.find("server: connected"), std::string::npos) << both(r);
}

bool has(const std::string &text, const std::string &pattern) {
    return std::regex_search(text, std::regex(pattern));
}

TEST(Samples, RdmaReadWrite) {
    PairResult r = run_pair(SAMPLE_RDMA_RW, {});
    expect_success(r);
    EXPECT_TRUE(has(r.server.out, "RDMA write of 65536 bytes arrived intact")) << both(r);
    EXPECT_TRUE(has(r.server.out, "RDMA read of the client's buffer: 65536 bytes verified"))
        << both(r);
    EXPECT_TRUE(has(r.client.out, "RDMA read of the server's buffer: 65536 bytes verified"))
        << both(r);
}

TEST(Samples, RdmaReadWriteLargeAndOddSizes) {
    for (const char *size : {"1", "4097", "4194304"}) {
        PairResult r = run_pair(SAMPLE_RDMA_RW, {"-s", size, "ofa-v2-tcp-lo"});
        expect_success(r);
        EXPECT_TRUE(has(r.client.out, std::string("server's buffer: ") + size + " bytes verified"))
            << both(r);
    }
}

TEST(Samples, AddInts) {
    PairResult r = run_pair(SAMPLE_ADD_INTS, {});
    expect_success(r);
    EXPECT_TRUE(has(r.server.out, R"(server: 17 \(RDMA write\) \+ 25 \(send\) = 42)")) << both(r);
    EXPECT_TRUE(has(r.client.out, R"(client: 17 \+ 25 = 42 \(correct\))")) << both(r);
}

TEST(Samples, AddIntsNegativeAndLarge) {
    PairResult r = run_pair(SAMPLE_ADD_INTS, {"-a", "-5000000000", "-b", "1234567"});
    expect_success(r);
    EXPECT_TRUE(has(r.client.out, R"(-5000000000 \+ 1234567 = -4998765433 \(correct\))"))
        << both(r);
}

TEST(Samples, PingPong) {
    PairResult r = run_pair(SAMPLE_PINGPONG, {"-n", "500", "-s", "256"});
    expect_success(r);
    EXPECT_TRUE(
        has(r.client.out, R"(500 round trips of 256 bytes, average round trip [0-9]+\.[0-9]+ us)"))
        << both(r);
    EXPECT_TRUE(has(r.server.out, "server: echoed 500 messages of 256 bytes")) << both(r);
}

TEST(Samples, PingPongBusyPollingLargeMessages) {
    PairResult r = run_pair(SAMPLE_PINGPONG, {"-b", "-n", "50", "-s", "1048576"});
    expect_success(r);
    EXPECT_TRUE(has(r.client.out, R"(50 round trips of 1048576 bytes, .* \(busy polling\))"))
        << both(r);
}

TEST(Samples, DelayedAck) {
    PairResult r = run_pair(SAMPLE_DELAYED_ACK, {"-n", "300"});
    expect_success(r);
    EXPECT_TRUE(has(r.client.out, "delayed_ack_supported = true")) << both(r);
    std::smatch off, on;
    ASSERT_TRUE(std::regex_search(r.client.out, off,
                                  std::regex(R"(delayed_ack = false: 300 .* ([0-9.]+) us)")))
        << both(r);
    ASSERT_TRUE(std::regex_search(r.client.out, on,
                                  std::regex(R"(delayed_ack = true: +300 .* ([0-9.]+) us)")))
        << both(r);
    // Waiting for the target's acknowledgement cannot be faster than not waiting for it;
    // the exact gap depends on the machine, so only the order is checked.
    EXPECT_GT(std::stod(on[1]), std::stod(off[1])) << both(r);
    EXPECT_TRUE(has(r.server.out, "600 RDMA writes of 64 bytes received, the buffer verified"))
        << both(r);
}

TEST(Samples, UsageErrorsExitWithTwo) {
    for (const char *exe : {SAMPLE_RDMA_RW, SAMPLE_ADD_INTS, SAMPLE_PINGPONG, SAMPLE_DELAYED_ACK,
                            SAMPLE_TRACE_TUNING}) {
        ChildResult r = run_child({exe, "-Z"}, sample_options());
        EXPECT_EQ(r.exit_code, 2) << exe << "\n" << r.out << r.err;
        r = run_child({exe, "one-ia", "two-ias"}, sample_options());
        EXPECT_EQ(r.exit_code, 2) << exe << "\n" << r.out << r.err;
    }
}

TEST(Samples, UnknownIaFailsCleanly) {
    ChildResult r = run_child({SAMPLE_PINGPONG, "-h", "127.0.0.1", "no-such-ia"}, sample_options());
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(has(r.err, "dat_ia_open failed: 0x[0-9a-f]+ DAT_PROVIDER_NOT_FOUND")) << r.err;
}

TEST(Samples, ClientWithoutServerSaysWhy) {
    const int port = free_port();  // nobody listens there
    ChildResult r = run_child({SAMPLE_ADD_INTS, "-h", "127.0.0.1", "-p", std::to_string(port)},
                              sample_options());
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(has(r.err, R"(connection failed: NON_PEER_REJECTED .*\(event 0x4003\))")) << r.err;
}

TEST(Samples, ServerReportsAKilledClient) {
    const int port = free_port();
    auto server = std::async(std::launch::async, [&] {
        return run_child({SAMPLE_PINGPONG, "-p", std::to_string(port)}, sample_options());
    });
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!listening(port) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(20ms);
    ChildOptions o = sample_options();
    o.timeout = 3s;  // then SIGKILL, in the middle of the ping-pong
    ChildResult client = run_child(
        {SAMPLE_PINGPONG, "-h", "127.0.0.1", "-p", std::to_string(port), "-n", "100000000"}, o);
    EXPECT_TRUE(client.timed_out) << client.out << client.err;
    ChildResult r = server.get();
    EXPECT_FALSE(r.timed_out) << r.out << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    // Depending on the moment of death, the server's next receive is flushed or its next
    // send finds the endpoint disconnected; either way it says so and fails.
    EXPECT_TRUE(has(r.err, R"(completed with DTO status 1 \(flushed: the connection ended\))") ||
                has(r.err, "dat_ep_post_send failed: .* DAT_INVALID_STATE_EP_DISCONNECTED"))
        << r.err;
}

TEST(Samples, TraceTuning) {
    ChildResult r = run_child({SAMPLE_TRACE_TUNING}, sample_options());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(has(r.out, "vendor_extension = 1.0: debug_query and debug_modify found")) << r.out;
    EXPECT_TRUE(has(r.out, "provider trace level at start: 1")) << r.out;
    EXPECT_TRUE(has(r.out, R"(level 1 \(debug_query says 1\).*\n  -> 0 provider trace lines)"))
        << r.out;
    EXPECT_TRUE(has(r.out, R"(level 7 \(debug_query says 7\))")) << r.out;
    EXPECT_TRUE(has(r.out, R"(\| DAPL EVT .* ia(\([^ ]+:[0-9]+\))?: opened ofa-v2-tcp-lo)"))
        << r.out;
    EXPECT_TRUE(has(r.out, "dat_trclvl_query\\(DAT_TRACE_COMPONENT_DAPL\\) = 7")) << r.out;
    EXPECT_TRUE(has(r.out, "provider trace level restored to 1")) << r.out;
    EXPECT_TRUE(has(r.out, "trace lines appeared only at the higher level")) << r.out;
    // Nothing of the provider's trace leaks to the real stderr: it was all captured.
    EXPECT_FALSE(has(r.err, "DAPL ")) << r.err;
}

TEST(Samples, TraceTuningKeepsTheUsersLevelAndDestination) {
    ChildOptions o = sample_options();
    o.env["DAPL_TRACE_LEVEL"] = "4";
    ChildResult r = run_child({SAMPLE_TRACE_TUNING, "-l", "9", "ofa-v2-tcp-lo"}, o);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(has(r.out, "provider trace level at start: 4")) << r.out;
    EXPECT_TRUE(has(r.out, R"(level 9 \(debug_query says 9\))")) << r.out;
    EXPECT_TRUE(has(r.out, "provider trace level restored to 4")) << r.out;

    // With the trace sent to a file, the program says so and does not judge the effect.
    const std::string file =
        std::string(SAMPLES_TEST_DIR) + "/trace_tuning_" + std::to_string(getpid()) + ".log";
    std::remove(file.c_str());
    o = sample_options();
    o.env["DAPL_TRACE_DEST"] = file;
    r = run_child({SAMPLE_TRACE_TUNING}, o);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(has(r.out, "DAPL_TRACE_DEST=.*: the trace lines go there")) << r.out;
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(has(text, R"(ia(\([^ ]+:[0-9]+\))?: opened ofa-v2-tcp-lo)")) << text;
    std::remove(file.c_str());
}

}  // namespace

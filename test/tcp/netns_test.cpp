// Tests that need a real link between the two processes: the link is cut (its far end
// taken down), and the provider must notice a dead peer (keepalive, TCP_USER_TIMEOUT) and
// time out a connection attempt, within bounded time.
//
// The settings are read from the environment when an IA is opened (docs/tcp-provider.md):
// the tests set them before opening theirs.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"
#include "netns.hpp"

using namespace dattest;

namespace {

using Clock = std::chrono::steady_clock;

// Cuts the link: the child's end goes down, so nothing the parent sends is answered.
bool cut_link() {
    return netns::run_in(netns::child_ns(), std::string("ip link set ") + netns::kDevice + " down");
}

class TcpNetns : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!netns::active()) GTEST_SKIP() << "needs the network namespaces";
    }
    void TearDown() override {
        unsetenv("DAT_TCP_KEEPALIVE");
        unsetenv("DAT_TCP_USER_TIMEOUT_MS");
    }
};

}  // namespace

// Keepalive probes go unanswered: the connection ends as BROKEN after about
// idle + interval * probes seconds.
TEST_F(TcpNetns, KeepaliveDetectsDeadPeer) {
    setenv("DAT_TCP_KEEPALIVE", "1,1,2", 1);
    setenv("DAT_TCP_USER_TIMEOUT_MS", "0", 1);
    Node s;
    Channel ch;
    int pid = connected_pair(s, ch);
    ASSERT_GT(pid, 0);
    auto t0 = Clock::now();
    ASSERT_TRUE(cut_link());
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.conn_evd, &ev, 15'000'000), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
    kill(pid, SIGKILL);
    reap(pid);
}

// Keepalive off; data sent into the dead link stays unacknowledged until
// TCP_USER_TIMEOUT ends the connection as BROKEN.
TEST_F(TcpNetns, UserTimeoutDetectsDeadPeer) {
    setenv("DAT_TCP_KEEPALIVE", "0", 1);
    setenv("DAT_TCP_USER_TIMEOUT_MS", "1500", 1);
    Node s;
    Channel ch;
    int pid = connected_pair(s, ch);
    ASSERT_GT(pid, 0);
    Buffer b;
    ASSERT_EQ(s.reg(&b, 4096), DAT_SUCCESS);
    ASSERT_TRUE(cut_link());
    auto t0 = Clock::now();
    DAT_LMR_TRIPLET iov = b.iov();
    DAT_DTO_COOKIE ck;
    ck.as_64 = 5;
    ASSERT_EQ(dat_ep_post_send(s.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    DAT_EVENT ev;
    ASSERT_EQ(s.next(s.conn_evd, &ev, 15'000'000), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);
    auto took = Clock::now() - t0;
    EXPECT_GE(took, std::chrono::milliseconds(1000));
    EXPECT_LT(took, std::chrono::seconds(8));
    kill(pid, SIGKILL);
    reap(pid);
}

// The peer's host does not answer at all (SYNs lost): the connect times out with the
// timeout dat_ep_connect was given.
TEST_F(TcpNetns, ConnectToSilentHostTimesOut) {
    Node c;
    ASSERT_EQ(c.open(), DAT_SUCCESS);
    ASSERT_EQ(c.make_ep(), DAT_SUCCESS);
    ASSERT_TRUE(cut_link());
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = peer_address();
    auto t0 = Clock::now();
    ASSERT_EQ(dat_ep_connect(c.ep, reinterpret_cast<sockaddr *>(&sin), 4791, 500'000, 0, nullptr,
                             DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_EVENT ev;
    ASSERT_EQ(c.next(c.conn_evd, &ev), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_TIMED_OUT);
    auto took = Clock::now() - t0;
    EXPECT_GE(took, std::chrono::milliseconds(400));
    EXPECT_LT(took, std::chrono::seconds(3));
}

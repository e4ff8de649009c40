// Runs the two-process API tests (api_test.cpp) with the parent and the forked child in
// two network namespaces joined by a veth link, each IA bound to its end of the link
// (IA names tcp-veth / tcp-veth-ts, whose ia_params name the veth device).
//
// The namespaces, the link and its private /30 are created when the test program starts
// and deleted when it ends (CTest runs one test per program run). Without root or
// `ip netns`, every test is skipped with the reason.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"
#include "netns.hpp"

namespace {

class NetnsEnvironment : public ::testing::Environment {
  public:
    void SetUp() override {
        std::string why;
        if (!dattest::netns::create(&why))
            GTEST_SKIP() << "network namespaces unavailable: " << why;
        dattest::Topology &t = dattest::topology();
        t.parent_addr = dattest::netns::kParentAddr;
        t.child_addr = dattest::netns::kChildAddr;
        t.ia = "tcp-veth";
        t.ia_threadsafe = "tcp-veth-ts";
        t.child_netns = dattest::netns::child_ns();
    }
    void TearDown() override { dattest::netns::destroy(); }
};

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new NetnsEnvironment);
    return RUN_ALL_TESTS();
}

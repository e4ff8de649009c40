#include "netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace dattest::netns {

namespace {
std::string g_parent, g_child;
int g_original = -1;
bool g_active = false;

bool sh(const std::string &cmd) {
    // Quiet: a failing step is reported by the caller.
    return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

bool enter(const std::string &ns) {
    int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = setns(fd, CLONE_NEWNET) == 0;
    close(fd);
    return ok;
}
}  // namespace

bool create(std::string *why) {
    if (geteuid() != 0) {
        *why = "not root";
        return false;
    }
    if (!sh("ip netns list")) {
        *why = "`ip netns` is not available";
        return false;
    }
    std::string tag = "odt" + std::to_string(getpid());
    g_parent = tag + "p";
    g_child = tag + "c";
    const std::string dev = kDevice;
    bool ok = sh("ip netns add " + g_parent) && sh("ip netns add " + g_child);
    g_active = true;  // from here on, destroy() cleans up whatever exists
    ok = ok && sh("ip link add " + dev + " netns " + g_parent + " type veth peer name " + dev +
                  " netns " + g_child);
    ok = ok && run_in(g_parent, "ip addr add " + std::string(kParentAddr) + "/30 dev " + dev) &&
         run_in(g_child, "ip addr add " + std::string(kChildAddr) + "/30 dev " + dev);
    for (const std::string &ns : {g_parent, g_child})
        ok = ok && run_in(ns, "ip link set lo up") && run_in(ns, "ip link set " + dev + " up");
    if (!ok) {
        *why = "could not create the namespaces and the veth link";
        destroy();
        return false;
    }
    g_original = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (g_original < 0 || !enter(g_parent)) {
        *why = "setns into the parent namespace failed";
        destroy();
        return false;
    }
    return true;
}

void destroy() {
    if (g_original >= 0) {
        setns(g_original, CLONE_NEWNET);
        close(g_original);
        g_original = -1;
    }
    if (!g_active) return;
    sh("ip netns del " + g_parent);
    sh("ip netns del " + g_child);
    g_active = false;
}

bool active() {
    return g_active;
}
const std::string &parent_ns() {
    return g_parent;
}
const std::string &child_ns() {
    return g_child;
}

bool run_in(const std::string &ns, const std::string &command) {
    return sh("ip netns exec " + ns + " " + command);
}

}  // namespace dattest::netns

// Two network namespaces joined by a veth link, for the tests that run across them.
#pragma once

#include <string>

namespace dattest::netns {

constexpr const char *kDevice = "odtveth";  // the same name on both ends (one per namespace)
constexpr const char *kParentAddr = "10.213.99.1";
constexpr const char *kChildAddr = "10.213.99.2";  // on a private /30

// Creates both namespaces and the link, and moves the calling process's thread (before any
// other thread exists) into the parent's namespace. False with the reason otherwise.
bool create(std::string *why);
// Returns to the original namespace and deletes both (and with them the link).
void destroy();
bool active();
const std::string &parent_ns();
const std::string &child_ns();
// Runs an `ip ...` / `tc ...` command inside a namespace; true when it succeeded.
bool run_in(const std::string &ns, const std::string &command);

}  // namespace dattest::netns

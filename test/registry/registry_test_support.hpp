// Shared helpers of the registry tests: events reported by the fake provider, corpus paths.
#pragma once

#include "registry/registry.hpp"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace registry_test {

struct Event {
    std::string event;  // "init", "add", "fini", "remove"
    std::string ia_name;
    int value;  // DAT_RETURN of add/remove
};

std::vector<Event> events();
void clear_events();
int count(const std::string &event, const std::string &ia_name);

inline std::string corpus(const std::string &name) {
    return std::string(REGISTRY_TEST_CORPUS) + "/" + name;
}

inline std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace registry_test

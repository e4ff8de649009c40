#include "journal.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {
struct Journal {
    std::mutex mutex;
    std::map<std::string, int> counts;
    std::map<std::string, long> ints;
    std::string last;
    const void *last_handle = nullptr;
};
Journal &journal() {
    static Journal *j = new Journal;  // never destroyed: plugins may record during exit
    return *j;
}
}  // namespace

extern "C" {

void fj_record(const char *event, const void *handle) {
    Journal &j = journal();
    std::lock_guard lock(j.mutex);
    ++j.counts[event];
    j.last = event;
    j.last_handle = handle;
}

int fj_count(const char *event) {
    Journal &j = journal();
    std::lock_guard lock(j.mutex);
    auto it = j.counts.find(event);
    return it == j.counts.end() ? 0 : it->second;
}

const void *fj_last_handle(void) {
    Journal &j = journal();
    std::lock_guard lock(j.mutex);
    return j.last_handle;
}

void fj_last_event(char *buf, int n) {
    Journal &j = journal();
    std::lock_guard lock(j.mutex);
    std::strncpy(buf, j.last.c_str(), static_cast<std::size_t>(n) - 1);
    buf[n - 1] = '\0';
}

void fj_set_int(const char *key, long value) {
    Journal &j = journal();
    std::lock_guard lock(j.mutex);
    j.ints[key] = value;
}

long fj_get_int(const char *key) {
    Journal &j = journal();
    std::lock_guard lock(j.mutex);
    auto it = j.ints.find(key);
    return it == j.ints.end() ? -1 : it->second;
}

}  // extern "C"

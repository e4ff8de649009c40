// Child program for the trace tests. Its module constructor configures the trace domains
// from the environment the test gave it; then:
//   trace_helper emit <dat|dapl> <level> <where> <message> [count]
//       OPENDAT_TRACE at <level> (so the domain's level filters it), <count> times
//   trace_helper query <dat|dapl>
//       prints "level=<n> dests=<bits> file=<path or ->" on stdout
#include "trace/trace.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using opendat::trace::Domain;

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    Domain &d = std::strcmp(argv[2], "dapl") == 0 ? opendat::trace::dapl_domain()
                                                  : opendat::trace::dat_domain();
    if (std::strcmp(argv[1], "query") == 0) {
        const char *f = d.file_path(0);
        std::printf("level=%d dests=%u file=%s\n", d.level(), d.destinations(), f ? f : "-");
        return 0;
    }
    if (std::strcmp(argv[1], "emit") == 0 && argc >= 6) {
        const int level = std::atoi(argv[3]);
        const int count = argc >= 7 ? std::atoi(argv[6]) : 1;
        for (int i = 0; i < count; ++i) OPENDAT_TRACE(d, level, argv[4], "%s", argv[5]);
        return 0;
    }
    return 2;
}

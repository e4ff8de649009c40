// The conformance suite's main: which IA the suite runs against is a parameter, so the same
// program tests any provider (README: "the conformance suite").
//
//   conformance_tests [--ia=NAME] [--ia-ts=NAME] [GoogleTest options]
//
// NAME is a dat.conf entry (DAT_OVERRIDE selects the file). Defaults: the environment's
// OPENDAT_CONFORMANCE_IA / OPENDAT_CONFORMANCE_IA_TS, else the tcp provider's loopback IAs
// ofa-v2-tcp-lo / ofa-v2-tcp-lo-ts. The -ts entry is the IA's thread-safe dat.conf entry.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"

namespace {

// Prints, before the first test, which IA runs and what it offers: the traits that decide
// which cases are reported UNSUPPORTED.
class ReportTraits : public ::testing::Environment {
  public:
    void SetUp() override {
        const dattest::Traits &t = dattest::traits();
        std::printf(
            "conformance: IA %s (thread-safe entry %s): %s, transport %s, adapter %s, "
            "delayed_ack %s, RMR %s, RC queue pairs %s, immediate data %s, atomics %s\n",
            dattest::topology().ia.c_str(), dattest::topology().ia_threadsafe.c_str(),
            t.open_ok ? "opens" : "does NOT open",
            t.transport.empty() ? "(not OpenDAT)" : t.transport.c_str(), t.adapter.c_str(),
            t.delayed_ack ? "yes" : "no", t.rmr ? "yes" : "no", t.rc ? "yes" : "no",
            t.immediate ? "yes" : "no", t.atomics ? "yes" : "no");
    }
};

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    dattest::Topology &topo = dattest::topology();
    if (const char *e = std::getenv("OPENDAT_CONFORMANCE_IA"); e && *e) topo.ia = e;
    if (const char *e = std::getenv("OPENDAT_CONFORMANCE_IA_TS"); e && *e) topo.ia_threadsafe = e;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (std::strncmp(a, "--ia=", 5) == 0) {
            topo.ia = a + 5;
        } else if (std::strncmp(a, "--ia-ts=", 8) == 0) {
            topo.ia_threadsafe = a + 8;
        } else {
            std::fprintf(stderr, "conformance_tests: unknown option %s (see main.cpp)\n", a);
            return 2;
        }
    }
    ::testing::AddGlobalTestEnvironment(new ReportTraits);
    return RUN_ALL_TESTS();
}

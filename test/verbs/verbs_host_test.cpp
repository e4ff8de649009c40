// Host part of the verbs provider tests: runs everywhere, device or not. The provider must
// load, and opening an IA that cannot work here must fail with the documented DAT error and
// one trace line saying why (docs/verbs-provider.md). verbs_probe is run as a child so that
// DAT_OVERRIDE is in place when libdat2 loads, through our libdat2 and the reference's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "child_process.hpp"

namespace {

using opendat::testing::ChildOptions;
using opendat::testing::ChildResult;
using opendat::testing::run_child;

struct Front {
    const char *name;
    std::string libdir;  // empty: the reference libdat2 the probe is linked to
};

std::vector<Front> fronts() {
    std::vector<Front> f{{"reference", ""}};
#ifdef VERBS_OUR_LIBDIR
    f.push_back({"opendat", VERBS_OUR_LIBDIR});
#endif
    return f;
}

ChildResult probe(const Front &front, const std::string &ia) {
    ChildOptions o;
    o.env["DAT_OVERRIDE"] = VERBS_CONF;
    o.unset_env = {"DAPL_TRACE_LEVEL", "DAPL_TRACE_DEST", "DAPL_DBG_TYPE", "DAPL_DBG_DEST"};
    if (!front.libdir.empty()) o.env["LD_LIBRARY_PATH"] = front.libdir;
    for (auto &[k, v] : opendat::testing::sanitizer_env_for_system_binaries()) o.env[k] = v;
    o.timeout = std::chrono::seconds(30);
    return run_child({VERBS_PROBE, "-P", ia}, o);
}

bool has(const std::string &s, const std::string &what) {
    return s.find(what) != std::string::npos;
}

TEST(VerbsHost, MissingInterfaceIsInvalidAddress) {
    for (const Front &f : fronts()) {
        SCOPED_TRACE(f.name);
        ChildResult r = probe(f, "verbs-nodev");
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        EXPECT_TRUE(has(r.out, "open verbs-nodev: 0x80120000 DAT_INVALID_ADDRESS")) << r.out;
        EXPECT_TRUE(has(r.err, "DAPL ERR")) << r.err;
        EXPECT_TRUE(
            has(r.err,
                "verbs: IA verbs-nodev: 'opendat-nonexistent0' is no network device, RDMA device, "
                "address or host name"))
            << r.err;
    }
}

TEST(VerbsHost, NoRdmaDeviceIsInternalError) {
    if (access("/dev/infiniband/rdma_cm", F_OK) == 0)
        GTEST_SKIP() << "this machine has RDMA (rdma_cm present)";
    for (const Front &f : fronts()) {
        SCOPED_TRACE(f.name);
        ChildResult r = probe(f, "verbs-lo");
        EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
        EXPECT_TRUE(has(r.out, "open verbs-lo: 0x80040000 DAT_INTERNAL_ERROR")) << r.out;
        EXPECT_TRUE(has(r.err, "DAPL ERR")) << r.err;
        EXPECT_TRUE(has(r.err, "verbs: IA verbs-lo: no RDMA device: rdma_create_event_channel"))
            << r.err;
    }
}

}  // namespace

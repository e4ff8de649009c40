// libdat2's dynamic symbol table: the 74 reference exports under DAT_2.0, our trace API
// under OPENDAT_2.0, nothing else (docs/dat-abi.md §2.1).
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

const std::set<std::string> kReference = {
    "dat_cno_create",
    "dat_cno_free",
    "dat_cno_modify_agent",
    "dat_cno_query",
    "dat_cno_wait",
    "dat_cr_accept",
    "dat_cr_handoff",
    "dat_cr_query",
    "dat_cr_reject",
    "dat_ep_connect",
    "dat_ep_create",
    "dat_ep_create_with_srq",
    "dat_ep_disconnect",
    "dat_ep_dup_connect",
    "dat_ep_free",
    "dat_ep_get_status",
    "dat_ep_modify",
    "dat_ep_post_rdma_read",
    "dat_ep_post_rdma_write",
    "dat_ep_post_recv",
    "dat_ep_post_send",
    "dat_ep_query",
    "dat_ep_recv_query",
    "dat_ep_reset",
    "dat_ep_set_watermark",
    "dat_evd_clear_unwaitable",
    "dat_evd_create",
    "dat_evd_dequeue",
    "dat_evd_disable",
    "dat_evd_enable",
    "dat_evd_free",
    "dat_evd_modify_cno",
    "dat_evd_post_se",
    "dat_evd_query",
    "dat_evd_resize",
    "dat_evd_set_unwaitable",
    "dat_evd_wait",
    "dat_extension_op",
    "dat_get_consumer_context",
    "dat_get_handle_type",
    "dat_ia_close",
    "dat_ia_openv",
    "dat_ia_query",
    "dat_lmr_create",
    "dat_lmr_free",
    "dat_lmr_query",
    "dat_lmr_sync_rdma_read",
    "dat_lmr_sync_rdma_write",
    "dat_psp_create",
    "dat_psp_create_any",
    "dat_psp_free",
    "dat_psp_query",
    "dat_pz_create",
    "dat_pz_free",
    "dat_pz_query",
    "dat_registry_add_provider",
    "dat_registry_list_providers",
    "dat_registry_remove_provider",
    "dat_rmr_bind",
    "dat_rmr_create",
    "dat_rmr_free",
    "dat_rmr_query",
    "dat_rsp_create",
    "dat_rsp_free",
    "dat_rsp_query",
    "dat_set_consumer_context",
    "dat_srq_create",
    "dat_srq_free",
    "dat_srq_post_recv",
    "dat_srq_query",
    "dat_srq_resize",
    "dat_srq_set_lw",
    "dat_strerror",
    "dats_get_ia_handle",
};

// "name@@VERSION" for every defined dynamic symbol ("DAT_2.0" style absolute symbols too).
std::set<std::string> defined_symbols(const std::string &library) {
    std::set<std::string> out;
    FILE *p = popen(("nm -D --defined-only '" + library + "' 2>/dev/null").c_str(), "r");
    if (p == nullptr) return out;
    char line[512];
    while (std::fgets(line, sizeof line, p) != nullptr) {
        std::istringstream in(line);
        std::string addr, type, name;
        if (in >> addr >> type >> name) out.insert(name);
    }
    pclose(p);
    return out;
}

TEST(Exports, ExactlyTheReferenceSymbolsUnderDat20) {
    const auto ours = defined_symbols(FE_LIBDAT2);
    ASSERT_FALSE(ours.empty()) << "nm failed on " << FE_LIBDAT2;
    EXPECT_EQ(kReference.size(), 74u);
    std::set<std::string> expected;
    for (const auto &s : kReference) expected.insert(s + "@@DAT_2.0");
    expected.insert("DAT_2.0");
    expected.insert("OPENDAT_2.0");
    expected.insert("dat_trclvl_query@@OPENDAT_2.0");
    expected.insert("dat_trclvl_modify@@OPENDAT_2.0");
    EXPECT_EQ(ours, expected);
}

TEST(Exports, MatchesTheInstalledReferenceLibrary) {
    const char *ref = "/usr/lib/x86_64-linux-gnu/libdat2.so.2";
    if (access(ref, R_OK) != 0) GTEST_SKIP() << "reference " << ref << " not installed (libdapl2)";
    auto theirs = defined_symbols(ref);
    ASSERT_FALSE(theirs.empty());
    auto ours = defined_symbols(FE_LIBDAT2);
    for (const auto &s : theirs) EXPECT_TRUE(ours.count(s)) << "missing " << s;
    for (const auto &s : ours) {
        if (s.find("OPENDAT_2.0") == std::string::npos) {
            EXPECT_TRUE(theirs.count(s)) << "extra " << s;
        }
    }
}

TEST(Exports, SonameAndBindNow) {
    FILE *p = popen(("readelf -d '" + std::string(FE_LIBDAT2) + "' 2>/dev/null").c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string all;
    char line[512];
    while (std::fgets(line, sizeof line, p) != nullptr) all += line;
    pclose(p);
    if (all.empty()) GTEST_SKIP() << "readelf not available";
    EXPECT_NE(all.find("Library soname: [libdat2.so.2]"), std::string::npos) << all;
    EXPECT_NE(all.find("BIND_NOW"), std::string::npos) << all;
}

}  // namespace

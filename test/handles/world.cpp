#include "world.hpp"

#include <sys/mman.h>

#include <cstring>

namespace handles_test {

#define CHECK_OK(call)                                            \
    do {                                                          \
        const DAT_RETURN r_ = (call);                             \
        if (r_ != DAT_SUCCESS) {                                  \
            ADD_FAILURE() << #call << " -> 0x" << std::hex << r_; \
            return false;                                         \
        }                                                         \
    } while (0)

bool Objects::create(const char *ia_name) {
    CHECK_OK(open_ia(ia_name, &ia));
    CHECK_OK(dat_pz_create(ia, &pz));
    CHECK_OK(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));
    CHECK_OK(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd));
    CHECK_OK(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd));
    CHECK_OK(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd));
    CHECK_OK(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, nullptr, &ep));
    CHECK_OK(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, nullptr, &reserved_ep));
    DAT_REGION_DESCRIPTION region{};
    region.for_va = buffer.data();
    DAT_RMR_CONTEXT rmr_context = 0;
    DAT_VLEN len = 0;
    DAT_VADDR addr = 0;
    CHECK_OK(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, buffer.size(), pz,
                            DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lmr_context, &rmr_context,
                            &len, &addr));
    CHECK_OK(dat_rmr_create(pz, &rmr));
    CHECK_OK(dat_psp_create_any(ia, &psp_qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    CHECK_OK(dat_rsp_create(ia, 0, reserved_ep, cr_evd, &rsp));
    return true;
}

void Objects::destroy() {
    if (ia == DAT_HANDLE_NULL) return;
    EXPECT_EQ(dat_rsp_free(rsp), DAT_SUCCESS);
    EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
    EXPECT_EQ(dat_rmr_free(rmr), DAT_SUCCESS);
    EXPECT_EQ(dat_lmr_free(lmr), DAT_SUCCESS);
    EXPECT_EQ(dat_ep_free(reserved_ep), DAT_SUCCESS);
    EXPECT_EQ(dat_ep_free(ep), DAT_SUCCESS);
    for (DAT_EVD_HANDLE e : {cr_evd, conn_evd, dto_evd}) EXPECT_EQ(dat_evd_free(e), DAT_SUCCESS);
    EXPECT_EQ(dat_cno_free(cno), DAT_SUCCESS);
    EXPECT_EQ(dat_pz_free(pz), DAT_SUCCESS);
    EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    ia = DAT_HANDLE_NULL;
}

bool Stale::create(const char *ia_name) {
    Objects o;
    if (!o.create(ia_name)) return false;
    pz = o.pz;
    cno = o.cno;
    evd = o.dto_evd;
    ep = o.ep;
    lmr = o.lmr;
    rmr = o.rmr;
    psp = o.psp;
    rsp = o.rsp;
    ia = o.ia;
    o.destroy();
    return true;
}

World &World::get() {
    static World *w = [] {
        auto *x = new World;
        EXPECT_TRUE(x->stale.create(kIa));
        EXPECT_TRUE(x->a.create(kIa));
        EXPECT_TRUE(x->b.create(kIa));
        EXPECT_EQ(open_ia(kOther, &x->other_ia), DAT_SUCCESS);
        EXPECT_EQ(dat_pz_create(x->other_ia, &x->other_pz), DAT_SUCCESS);
        std::memcpy(x->forged, x->a.ep, sizeof x->forged);
        x->unmapped =
            mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(x->unmapped, 4096);
        x->heap_block = new std::uint64_t[3]{};
        x->past_heap_block = reinterpret_cast<std::uintptr_t>(x->heap_block + 3);
        auto *gone = new std::uint64_t[8]{};
        x->freed_heap_block = reinterpret_cast<std::uintptr_t>(gone);
        delete[] gone;
        return x;
    }();
    return *w;
}

std::vector<Bad> garbage(World &w) {
    auto h = [](std::uintptr_t v) { return reinterpret_cast<DAT_HANDLE>(v); };
    const auto ep = reinterpret_cast<std::uintptr_t>(w.a.ep);
    static std::uint64_t zeros[8] = {};
    return {
        {"0x1 (dapltest -T F queryinfo)", h(0x1)},
        {"0x40 (first page)", h(0x40)},
        {"0xdeadbeef (misaligned)", h(0xdeadbeef)},
        {"non-canonical", h(0xdead000000000000ull)},
        {"unmapped page", w.unmapped},
        {"inside a live EP (+8)", h(ep + 8)},
        {"inside a live EP (+4)", h(ep + 4)},
        {"zeroed memory", zeros},
        {"byte copy of a live EP elsewhere", w.forged},
        {"just past a heap block", h(w.past_heap_block)},
        {"freed heap block", h(w.freed_heap_block)},
    };
}

}  // namespace handles_test

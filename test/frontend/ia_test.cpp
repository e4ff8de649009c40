// IA lifetime: handle numbering and reuse, registry reference counting, failures, the
// dats_get_ia_handle export and concurrent open/close.
#include "frontend_test.hpp"

#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

namespace {

TEST(IaOpen, ArgumentChecks) {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    EXPECT_EQ(fe::openv(nullptr, 8, &evd, &ia, 2, 0, DAT_FALSE), 0x80060025u);
    const std::string long_name(DAT_NAME_MAX_LENGTH, 'x');
    EXPECT_EQ(fe::openv(long_name.c_str(), 8, &evd, &ia, 2, 0, DAT_FALSE), 0x80060025u);
    EXPECT_EQ(fe::openv(fe::kGood, 8, &evd, nullptr, 2, 0, DAT_FALSE), fe::kInvalidIa);
}

TEST(IaOpen, UnknownNameIsNotRegistered) {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    EXPECT_EQ(fe::openv("nosuch", 8, &evd, &ia, 2, 0, DAT_FALSE), fe::kNotRegistered);
    // The key includes version and thread safety.
    EXPECT_EQ(fe::openv(fe::kGood, 8, &evd, &ia, 1, 2, DAT_FALSE), fe::kNotRegistered);
    EXPECT_EQ(fe::openv(fe::kGood, 8, &evd, &ia, 2, 0, DAT_TRUE), fe::kNotRegistered);
    // 'k' and nondefault entries are never loaded.
    EXPECT_EQ(fe::openv("fe-kernel", 8, &evd, &ia, 2, 0, DAT_FALSE), fe::kNotRegistered);
    EXPECT_EQ(fe::openv("fe-nondefault", 8, &evd, &ia, 2, 0, DAT_FALSE), fe::kNotRegistered);
}

TEST(IaOpen, ThreadSafeKeyOpensTheThreadSafeEntry) {
    fe::Ia ia(fe::kThreadSafe, DAT_TRUE);
    EXPECT_TRUE(ia.ok()) << std::hex << ia.status();
    EXPECT_EQ(ia.close(), DAT_SUCCESS);
}

TEST(IaOpen, ProviderFailureIsPassedThroughAndTheProviderUnloaded) {
    const int inits = fe::inits(fe::kFail), finis = fe::finis(fe::kFail);
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    EXPECT_EQ(fe::openv(fe::kFail, 8, &evd, &ia, 2, 0, DAT_FALSE), 0x80120000u);
    EXPECT_EQ(fe::inits(fe::kFail), inits + 1);
    EXPECT_EQ(fe::finis(fe::kFail), finis + 1);
}

TEST(IaHandles, SmallIntegersFromOneLowestFreeSlotReused) {
    fe::Ia a(fe::kGood), b(fe::kGood), c(fe::kGood2);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(a.index(), 1u);
    EXPECT_EQ(b.index(), 2u);
    EXPECT_EQ(c.index(), 3u);
    EXPECT_EQ(b.close(), DAT_SUCCESS);
    fe::Ia d(fe::kNoExt);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d.index(), 2u);
}

TEST(IaHandles, DoubleCloseIsAnInvalidHandle) {
    fe::Ia a(fe::kGood);
    ASSERT_TRUE(a.ok());
    const DAT_IA_HANDLE h = a.handle();
    EXPECT_EQ(a.close(DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    EXPECT_EQ(fj_get_int("ia_close.flags"), DAT_CLOSE_GRACEFUL_FLAG);
    EXPECT_EQ(dat_ia_close(h, DAT_CLOSE_ABRUPT_FLAG), fe::kInvalidIa);
    EXPECT_EQ(dat_ia_query(h, nullptr, 0, nullptr, 0, nullptr), fe::kInvalidIa);
}

TEST(IaHandles, TableGrowsBy64) {
    std::vector<std::unique_ptr<fe::Ia>> ias;
    for (int i = 0; i < 130; ++i) {
        ias.push_back(std::make_unique<fe::Ia>(fe::kGood));
        ASSERT_TRUE(ias.back()->ok()) << i;
        EXPECT_EQ(ias.back()->index(), static_cast<std::uintptr_t>(i + 1));
    }
    // Slots past the first chunk translate both ways.
    for (int i : {63, 64, 65, 127, 128, 129}) {
        void *raw = ias[i]->raw();
        ASSERT_NE(raw, nullptr) << i;
        DAT_IA_HANDLE back = DAT_HANDLE_NULL;
        ASSERT_EQ(dats_get_ia_handle(raw, &back), DAT_SUCCESS);
        EXPECT_EQ(back, ias[i]->handle());
    }
    ias[70].reset();
    fe::Ia again(fe::kGood);
    EXPECT_EQ(again.index(), 71u);
}

TEST(IaHandles, DatsGetIaHandleForwardAndReverse) {
    fe::Ia a(fe::kGood);
    ASSERT_TRUE(a.ok());
    DAT_IA_HANDLE raw = DAT_HANDLE_NULL;
    ASSERT_EQ(dats_get_ia_handle(a.handle(), &raw), DAT_SUCCESS);
    ASSERT_NE(raw, DAT_HANDLE_NULL);
    EXPECT_EQ(*static_cast<const DAT_PROVIDER *const *>(raw), a.provider());
    DAT_IA_HANDLE index = DAT_HANDLE_NULL;
    ASSERT_EQ(dats_get_ia_handle(raw, &index), DAT_SUCCESS);
    EXPECT_EQ(index, a.handle());

    DAT_IA_HANDLE out = DAT_HANDLE_NULL;
    EXPECT_EQ(dats_get_ia_handle(nullptr, &out), fe::kInvalidIa);
    EXPECT_EQ(dats_get_ia_handle(reinterpret_cast<DAT_IA_HANDLE>(std::uintptr_t{40}), &out),
              fe::kInvalidIa);
    int not_an_ia = 0;
    EXPECT_EQ(dats_get_ia_handle(&not_an_ia, &out), fe::kInvalidIa);
}

TEST(IaOpen, PostOpenQueryAsksForTheProviderSpecificAttributes) {
    fe::Ia a(fe::kGood);
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(fj_get_int("ia_query.provider_mask") &
                static_cast<long>(DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR));
}

TEST(Refcount, LastCloseUnloadsTheProviderAndReopenInitsAgain) {
    const int inits = fe::inits(fe::kGood2), finis = fe::finis(fe::kGood2);
    {
        fe::Ia a(fe::kGood2);
        ASSERT_TRUE(a.ok());
        fe::Ia b(fe::kGood2);
        ASSERT_TRUE(b.ok());
        EXPECT_EQ(fe::inits(fe::kGood2), inits + 1);  // one init per IA name, not per open
        EXPECT_EQ(a.close(), DAT_SUCCESS);
        EXPECT_EQ(fe::finis(fe::kGood2), finis);
        EXPECT_EQ(b.close(), DAT_SUCCESS);
        EXPECT_EQ(fe::finis(fe::kGood2), finis + 1);
        EXPECT_EQ(fj_get_int("remove_provider.result"), DAT_SUCCESS);
    }
    fe::Ia c(fe::kGood2);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(fe::inits(fe::kGood2), inits + 2);
    EXPECT_EQ(c.close(), DAT_SUCCESS);
    EXPECT_EQ(fe::finis(fe::kGood2), finis + 2);
}

TEST(Concurrency, OpenCloseFromManyThreads) {
    constexpr int kThreads = 4, kRounds = 150;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([t, &failures] {
            const char *name = (t % 2) ? fe::kGood : fe::kGood2;
            for (int i = 0; i < kRounds; ++i) {
                DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
                DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
                if (fe::openv(name, 8, &evd, &ia, 2, 0, DAT_FALSE) != DAT_SUCCESS) {
                    ++failures;
                    continue;
                }
                DAT_IA_HANDLE raw = DAT_HANDLE_NULL;
                if (dats_get_ia_handle(ia, &raw) != DAT_SUCCESS) ++failures;
                DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
                if (dat_pz_create(ia, &pz) != DAT_SUCCESS) ++failures;
                if (dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG) != DAT_SUCCESS) ++failures;
            }
        });
    }
    for (auto &th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
    // Everything closed: the next open gets index 1 and both providers are unloaded.
    EXPECT_EQ(fe::inits(fe::kGood), fe::finis(fe::kGood));
    EXPECT_EQ(fe::inits(fe::kGood2), fe::finis(fe::kGood2));
    fe::Ia a(fe::kGood);
    EXPECT_EQ(a.index(), 1u);
}

TEST(Concurrency, LiveHandlesAreDistinct) {
    constexpr int kThreads = 4, kPerThread = 40;
    std::vector<std::vector<DAT_IA_HANDLE>> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([t, &got] {
            for (int i = 0; i < kPerThread; ++i) {
                DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
                DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
                if (fe::openv(fe::kGood, 8, &evd, &ia, 2, 0, DAT_FALSE) == DAT_SUCCESS)
                    got[t].push_back(ia);
            }
        });
    }
    for (auto &th : threads) th.join();
    std::set<DAT_IA_HANDLE> all;
    for (auto &v : got)
        for (DAT_IA_HANDLE h : v) EXPECT_TRUE(all.insert(h).second);
    EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kPerThread));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(*all.rbegin()),
              static_cast<std::uintptr_t>(kThreads * kPerThread));
    for (DAT_IA_HANDLE h : all) EXPECT_EQ(dat_ia_close(h, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

}  // namespace

// dat_extension_op routing: docs/dat-abi.md §10.2 and §5.6.
#include "frontend_test.hpp"

#include <cstdlib>

namespace {

constexpr DAT_RETURN kHandle1 = 0x8005001b;

TEST(Extension, GatedUntilAnIaReportsExtensions) {
    // The "extensions available" flag is process-global and sticky: check it in a fresh
    // process (threadsafe death tests re-execute the test binary).
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            fe::Ia ia(fe::kNoExt);
            if (!ia.ok()) std::_Exit(10);
            fe::FakeObject object{ia.provider()};
            if (dat_extension_op(&object, 4, 1) != fe::kNotImplemented) std::_Exit(11);
            if (dat_extension_op(ia.handle(), 4, 1) != fe::kNotImplemented) std::_Exit(12);
            if (fj_count("ext") != 0) std::_Exit(13);
            fe::Ia good(fe::kGood);  // reports extension_supported = IB
            if (!good.ok()) std::_Exit(14);
            if (dat_extension_op(&object, 4, 1) != DAT_SUCCESS) std::_Exit(15);
            std::_Exit(0);
        },
        testing::ExitedWithCode(0), "");
}

TEST(Extension, HandleOpsReachTheProviderWithTheVarargs) {
    fe::Ia ia(fe::kGood);
    ASSERT_TRUE(ia.ok());
    fe::FakeObject object{ia.provider()};
    EXPECT_EQ(dat_extension_op(&object, 4, 1234), DAT_SUCCESS);
    EXPECT_EQ(fj_last_handle(), &object);
    EXPECT_EQ(fj_get_int("ext.arg"), 1234);
    EXPECT_EQ(fj_get_int("ext.op"), 4);
    // An IA index is translated to the raw IA.
    EXPECT_EQ(dat_extension_op(ia.handle(), 5, 77), DAT_SUCCESS);
    EXPECT_EQ(fj_last_handle(), ia.raw());
    EXPECT_EQ(fj_get_int("ext.arg"), 77);
}

TEST(Extension, BadHandles) {
    fe::Ia ia(fe::kGood);
    ASSERT_TRUE(ia.ok());
    EXPECT_EQ(dat_extension_op(nullptr, 4, 1), kHandle1);
    // A small integer that is not a live IA.
    EXPECT_EQ(dat_extension_op(reinterpret_cast<DAT_HANDLE>(std::uintptr_t{60}), 4, 1), kHandle1);
    EXPECT_EQ(dat_extension_op(nullptr, DAT_CLOSE_EXTENSION_BASE), fe::kInvalidIa);
}

TEST(Extension, OpenAndCloseQueryPaths) {
    fe::Ia keep(fe::kGood);  // sets the extension flag; the open path would set it anyway
    ASSERT_TRUE(keep.ok());
    const int inits = fe::inits(fe::kGood2), finis = fe::finis(fe::kGood2);

    DAT_HANDLE raw = DAT_HANDLE_NULL;
    const char *name = fe::kGood2;
    ASSERT_EQ(dat_extension_op(nullptr, DAT_OPEN_EXTENSION_BASE, name, &raw), DAT_SUCCESS);
    EXPECT_EQ(fj_last_handle(), name);  // the provider gets the IA name as its handle
    EXPECT_EQ(fj_count((std::string("ext_open:") + fe::kGood2).c_str()) > 0, true);
    ASSERT_NE(raw, DAT_HANDLE_NULL);
    EXPECT_EQ(fe::inits(fe::kGood2), inits + 1);
    EXPECT_EQ(fe::finis(fe::kGood2), finis);

    // The close path takes the raw provider object, untranslated.
    const int closes = fj_count("ext_close");
    EXPECT_EQ(dat_extension_op(raw, DAT_CLOSE_EXTENSION_BASE), DAT_SUCCESS);
    EXPECT_EQ(fj_count("ext_close"), closes + 1);
    EXPECT_EQ(fe::finis(fe::kGood2), finis + 1);  // registry reference released

    EXPECT_EQ(dat_extension_op(nullptr, DAT_OPEN_EXTENSION_BASE, static_cast<const char *>(nullptr),
                               &raw),
              0x80050027u);
    EXPECT_EQ(dat_extension_op(nullptr, DAT_OPEN_EXTENSION_BASE, "nosuch", &raw),
              fe::kNotRegistered);
}

TEST(Extension, FailedOpenQueryReleasesTheProvider) {
    const int inits = fe::inits(fe::kGood2), finis = fe::finis(fe::kGood2);
    // The fake provider fails an open query without an output pointer.
    EXPECT_NE(dat_extension_op(nullptr, DAT_OPEN_EXTENSION_BASE, fe::kGood2,
                               static_cast<DAT_HANDLE *>(nullptr)),
              DAT_SUCCESS);
    EXPECT_EQ(fe::inits(fe::kGood2), inits + 1);
    EXPECT_EQ(fe::finis(fe::kGood2), finis + 1);
}

}  // namespace

// dat_trclvl_query / dat_trclvl_modify on both components (include/dat2/dat_trace.h).
#include "frontend_test.hpp"

namespace {

constexpr DAT_RETURN kArg1 = 0x80060025, kArg2 = 0x80060026, kState = 0x80070000;

TEST(Trclvl, DatComponent) {
    DAT_UINT32 old = 99;
    ASSERT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAT, &old), DAT_SUCCESS);
    EXPECT_LE(old, 10u);
    EXPECT_EQ(dat_trclvl_modify(DAT_TRACE_COMPONENT_DAT, 0), DAT_SUCCESS);
    DAT_UINT32 level = 99;
    EXPECT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAT, &level), DAT_SUCCESS);
    EXPECT_EQ(level, 0u);
    EXPECT_EQ(dat_trclvl_modify(DAT_TRACE_COMPONENT_DAT, 11), kArg2);
    EXPECT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAT, &level), DAT_SUCCESS);
    EXPECT_EQ(level, 0u);
    EXPECT_EQ(dat_trclvl_modify(DAT_TRACE_COMPONENT_DAT, old), DAT_SUCCESS);
}

TEST(Trclvl, ArgumentErrors) {
    DAT_UINT32 level = 0;
    EXPECT_EQ(dat_trclvl_query(static_cast<DAT_TRACE_COMPONENT>(7), &level), kArg1);
    EXPECT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAT, nullptr), kArg2);
    EXPECT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAPL, nullptr), kArg2);
    EXPECT_EQ(dat_trclvl_modify(static_cast<DAT_TRACE_COMPONENT>(-1), 3), kArg1);
    EXPECT_EQ(dat_trclvl_modify(DAT_TRACE_COMPONENT_DAPL, 11), kArg2);
}

TEST(Trclvl, DaplComponentForwardsToOpenProviders) {
    DAT_UINT32 level = 0;
    EXPECT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAPL, &level), kState);
    EXPECT_EQ(dat_trclvl_modify(DAT_TRACE_COMPONENT_DAPL, 3), kState);
    {
        fe::Ia noext(fe::kNoExt);  // reports no hooks
        ASSERT_TRUE(noext.ok());
        EXPECT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAPL, &level), kState);
        fe::Ia a(fe::kGood), b(fe::kGood2);
        ASSERT_TRUE(a.ok() && b.ok());
        const int modifies = fj_count("debug_modify");
        EXPECT_EQ(dat_trclvl_modify(DAT_TRACE_COMPONENT_DAPL, 6), DAT_SUCCESS);
        EXPECT_EQ(fj_count("debug_modify"), modifies + 1);  // one provider function, called once
        EXPECT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAPL, &level), DAT_SUCCESS);
        EXPECT_EQ(level, 6u);
        EXPECT_GT(fj_count("debug_query"), 0);
    }
    EXPECT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAPL, &level), kState);
}

}  // namespace

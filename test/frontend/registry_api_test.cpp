// dat_registry_add_provider / remove_provider / list_providers: argument checks and
// forwarding to the registry.
#include "frontend_test.hpp"

#include <cstring>
#include <vector>

namespace {

TEST(RegistryApi, AddRemoveArgumentChecks) {
    DAT_PROVIDER provider{};
    DAT_PROVIDER_INFO info{};
    std::strcpy(info.ia_name, "fe-api-test");
    info.dapl_version_major = 2;
    EXPECT_EQ(dat_registry_add_provider(nullptr, &info), 0x80060025u);
    EXPECT_EQ(dat_registry_add_provider(&provider, nullptr), 0x80060026u);  // the reference crashes
    EXPECT_EQ(dat_registry_add_provider(nullptr, nullptr), 0x80060025u);
    EXPECT_EQ(dat_registry_remove_provider(nullptr, &info), 0x80060025u);
    EXPECT_EQ(dat_registry_remove_provider(&provider, nullptr), 0x80060026u);
    // Not registered.
    EXPECT_EQ(dat_registry_remove_provider(&provider, &info), fe::kNotRegistered);
}

TEST(RegistryApi, AddTwiceThenRemoveTwice) {
    fe::Ia donor(fe::kGood);  // borrow the fake provider's functions
    ASSERT_TRUE(donor.ok());
    DAT_PROVIDER provider = *donor.provider();
    DAT_PROVIDER_INFO info{};
    std::strcpy(info.ia_name, "fe-dynamic");
    info.dapl_version_major = 2;
    info.dapl_version_minor = 0;
    info.is_thread_safe = DAT_FALSE;
    ASSERT_EQ(dat_registry_add_provider(&provider, &info), DAT_SUCCESS);
    EXPECT_EQ(dat_registry_add_provider(&provider, &info), 0x80100000u);  // already registered
    EXPECT_EQ(dat_registry_remove_provider(&provider, &info), DAT_SUCCESS);
    EXPECT_EQ(dat_registry_remove_provider(&provider, &info), fe::kNotRegistered);
}

TEST(RegistryApi, ListProviders) {
    DAT_COUNT n = -1;
    EXPECT_EQ(dat_registry_list_providers(0, &n, nullptr), 0x80060025u);
    EXPECT_EQ(n, fe::kConfEntries);  // u + default entries only
    EXPECT_EQ(dat_registry_list_providers(1, nullptr, nullptr), 0x80060026u);
    EXPECT_EQ(dat_registry_list_providers(1, &n, nullptr), 0x80060027u);

    std::vector<DAT_PROVIDER_INFO> infos(10);
    std::vector<DAT_PROVIDER_INFO *> ptrs;
    for (auto &i : infos) ptrs.push_back(&i);
    ASSERT_EQ(dat_registry_list_providers(10, &n, ptrs.data()), DAT_SUCCESS);
    ASSERT_EQ(n, fe::kConfEntries);
    EXPECT_STREQ(infos[0].ia_name, fe::kGood);
    EXPECT_STREQ(infos[1].ia_name, fe::kGood2);
    EXPECT_STREQ(infos[2].ia_name, fe::kNoExt);
    EXPECT_STREQ(infos[3].ia_name, fe::kFail);
    EXPECT_STREQ(infos[4].ia_name, fe::kThreadSafe);
    EXPECT_EQ(infos[4].is_thread_safe, DAT_TRUE);
    EXPECT_EQ(infos[0].dapl_version_major, 2u);

    ASSERT_EQ(dat_registry_list_providers(2, &n, ptrs.data()), DAT_SUCCESS);
    EXPECT_EQ(n, 2);
}

}  // namespace

// The example provider (samples/example_provider) loaded through libdat2 from a dat.conf
// naming it (DAT_OVERRIDE, set by CTest), and through datinfo and registry_demo.
#include <dat2/udat.h>
#include <dat2/dat_trace.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "child_process.hpp"

namespace {

using opendat::testing::ChildOptions;
using opendat::testing::ChildResult;
using opendat::testing::run_child;

const DAT_NAMED_ATTR *find_attr(const DAT_PROVIDER_ATTR &pa, const char *name) {
    for (DAT_COUNT i = 0; i < pa.num_provider_specific_attr; ++i)
        if (std::strcmp(pa.provider_specific_attr[i].name, name) == 0)
            return &pa.provider_specific_attr[i];
    return nullptr;
}

// DAT_PROVIDER_ATTR has a const member: not default-constructible in C++.
union ProviderAttr {
    ProviderAttr() { std::memset(static_cast<void *>(this), 0, sizeof *this); }
    DAT_PROVIDER_ATTR attr;
};

class ExampleProvider : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(dat_ia_open(const_cast<char *>("example"), 8, &async_evd_, &ia_), DAT_SUCCESS);
    }
    void TearDown() override {
        if (ia_ != DAT_HANDLE_NULL) {
            EXPECT_EQ(dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        }
    }
    DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
};

TEST_F(ExampleProvider, QueryReportsAttributesAndVendorAttributes) {
    DAT_IA_ATTR ia_attr{};
    ProviderAttr storage;
    DAT_PROVIDER_ATTR &pa = storage.attr;
    ASSERT_EQ(dat_ia_query(ia_, nullptr, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pa),
              DAT_SUCCESS);
    EXPECT_STREQ(ia_attr.adapter_name, "demo-adapter");  // ia_params from dat.conf
    EXPECT_STREQ(ia_attr.vendor_name, "OpenDAT example");
    ASSERT_NE(ia_attr.ia_address_ptr, nullptr);
    EXPECT_EQ(ia_attr.ia_address_ptr->sa_family, AF_INET);
    EXPECT_STREQ(pa.provider_name, "example");
    EXPECT_EQ(pa.dapl_version_major, 2u);
    EXPECT_EQ(pa.dapl_version_minor, 0u);
    EXPECT_EQ(pa.is_thread_safe, DAT_FALSE);
    ASSERT_NE(find_attr(pa, DAT_VENDOR_ATTR_EXTENSION), nullptr);
    EXPECT_STREQ(find_attr(pa, DAT_VENDOR_ATTR_EXTENSION)->value, "1.0");
    EXPECT_STREQ(find_attr(pa, DAT_VENDOR_ATTR_EXT_VERSION)->value, "1.0");
    EXPECT_STREQ(find_attr(pa, DAT_VENDOR_ATTR_DELAYED_ACK_SUPPORTED)->value, "false");

    // debug_query / debug_modify work, and libdat2 reaches them too.
    DAT_TRCLVL_QUERY_FUNC q = dat_trclvl_attr_query(find_attr(pa, DAT_VENDOR_ATTR_DEBUG_QUERY));
    DAT_TRCLVL_MODIFY_FUNC m = dat_trclvl_attr_modify(find_attr(pa, DAT_VENDOR_ATTR_DEBUG_MODIFY));
    ASSERT_NE(q, nullptr);
    ASSERT_NE(m, nullptr);
    DAT_UINT32 level = 99;
    ASSERT_EQ(q(DAT_TRACE_COMPONENT_DAPL, &level), DAT_SUCCESS);
    EXPECT_EQ(level, 1u);
    ASSERT_EQ(m(DAT_TRACE_COMPONENT_DAPL, 6), DAT_SUCCESS);
    ASSERT_EQ(dat_trclvl_query(DAT_TRACE_COMPONENT_DAPL, &level), DAT_SUCCESS);
    EXPECT_EQ(level, 6u);
    EXPECT_NE(m(DAT_TRACE_COMPONENT_DAPL, 11), DAT_SUCCESS);
    ASSERT_EQ(dat_trclvl_modify(DAT_TRACE_COMPONENT_DAPL, 1), DAT_SUCCESS);
    ASSERT_EQ(q(DAT_TRACE_COMPONENT_DAPL, &level), DAT_SUCCESS);
    EXPECT_EQ(level, 1u);
}

TEST_F(ExampleProvider, ProtectionZoneReportsTheConsumersIaHandle) {
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_pz_create(ia_, &pz), DAT_SUCCESS);
    DAT_PZ_PARAM param{};
    ASSERT_EQ(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &param), DAT_SUCCESS);
    EXPECT_EQ(param.ia_handle, ia_);  // translated with dats_get_ia_handle, not the raw pointer
    DAT_HANDLE_TYPE type{};
    ASSERT_EQ(dat_get_handle_type(pz, &type), DAT_SUCCESS);
    EXPECT_EQ(type, DAT_HANDLE_TYPE_PZ);
    DAT_CONTEXT ctx{}, back{};
    ctx.as_64 = 0x1234;
    ASSERT_EQ(dat_set_consumer_context(pz, ctx), DAT_SUCCESS);
    ASSERT_EQ(dat_get_consumer_context(pz, &back), DAT_SUCCESS);
    EXPECT_EQ(back.as_64, 0x1234u);
    EXPECT_EQ(dat_pz_free(pz), DAT_SUCCESS);
}

TEST_F(ExampleProvider, EverythingElseIsNotImplemented) {
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_RETURN rc = dat_evd_create(ia_, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &evd);
    EXPECT_EQ(DAT_GET_TYPE(rc), static_cast<DAT_UINT32>(DAT_NOT_IMPLEMENTED)) << std::hex << rc;
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_OS_WAIT_PROXY_AGENT agent{};
    rc = dat_cno_create(ia_, agent, &cno);
    EXPECT_EQ(DAT_GET_TYPE(rc), static_cast<DAT_UINT32>(DAT_NOT_IMPLEMENTED)) << std::hex << rc;
}

TEST(ExampleProviderKey, ThreadSafeEntryOpensAndClosesUnderItsOwnKey) {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ia_openv(const_cast<char *>("example-ts"), 8, &evd, &ia, DAT_VERSION_MAJOR,
                           DAT_VERSION_MINOR, DAT_TRUE),
              DAT_SUCCESS);
    ProviderAttr storage;
    DAT_PROVIDER_ATTR &pa = storage.attr;
    ASSERT_EQ(dat_ia_query(ia, nullptr, 0, nullptr, DAT_PROVIDER_FIELD_ALL, &pa), DAT_SUCCESS);
    EXPECT_EQ(pa.is_thread_safe, DAT_TRUE);
    // Closing finds the registration only because the attributes echo the dat.conf key.
    EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

ChildOptions tool_options() {
    ChildOptions o;
    o.env["DAT_OVERRIDE"] = EXAMPLE_CONF;
    return o;
}

TEST(ExampleProviderTools, DatinfoOpensIt) {
    ChildResult r = run_child({DATINFO_EXE, "-P", "example", "-v"}, tool_options());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const char *want :
         {"status: ok", "adapter_name: demo-adapter", "vendor_name: OpenDAT example",
          "vendor_extension: 1.0", "vendor_ext_version: 1.0", "debug_query: (function)",
          "debug_modify: (function)", "delayed_ack_supported: false"})
        EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
}

TEST(ExampleProviderTools, RegistryDemoOpensIt) {
    ChildResult r = run_child({REGISTRY_DEMO_EXE}, tool_options());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("adapter demo-adapter (vendor OpenDAT example), provider example 1.0"),
              std::string::npos)
        << r.out;
}

}  // namespace

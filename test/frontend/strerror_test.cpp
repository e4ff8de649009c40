// dat_strerror, for every type and subtype code (docs/dat-abi.md §7.4).
#include "frontend_test.hpp"

#include <map>

namespace {

#define NAMED(e) \
    { e, #e }

const std::map<DAT_UINT32, std::string> &types() {
    static const std::map<DAT_UINT32, std::string> m = {
        NAMED(DAT_SUCCESS),
        NAMED(DAT_ABORT),
        NAMED(DAT_CONN_QUAL_IN_USE),
        NAMED(DAT_INSUFFICIENT_RESOURCES),
        NAMED(DAT_INTERNAL_ERROR),
        NAMED(DAT_INVALID_HANDLE),
        NAMED(DAT_INVALID_PARAMETER),
        NAMED(DAT_INVALID_STATE),
        NAMED(DAT_LENGTH_ERROR),
        NAMED(DAT_MODEL_NOT_SUPPORTED),
        NAMED(DAT_PROVIDER_NOT_FOUND),
        NAMED(DAT_PRIVILEGES_VIOLATION),
        NAMED(DAT_PROTECTION_VIOLATION),
        NAMED(DAT_QUEUE_EMPTY),
        NAMED(DAT_QUEUE_FULL),
        NAMED(DAT_TIMEOUT_EXPIRED),
        NAMED(DAT_PROVIDER_ALREADY_REGISTERED),
        NAMED(DAT_PROVIDER_IN_USE),
        NAMED(DAT_INVALID_ADDRESS),
        NAMED(DAT_INTERRUPTED_CALL),
        NAMED(DAT_CONN_QUAL_UNAVAILABLE),
        NAMED(DAT_RESERVED_LMR),
        NAMED(DAT_PORT_IN_USE),
        NAMED(DAT_COMM_NOT_SUPPORTED),
        NAMED(DAT_NOT_IMPLEMENTED),
    };
    return m;
}

const std::map<DAT_UINT32, std::string> &subtypes() {
    static const std::map<DAT_UINT32, std::string> m = {
        {DAT_NO_SUBTYPE, ""},
        NAMED(DAT_SUB_INTERRUPTED),
        NAMED(DAT_RESOURCE_MEMORY),
        NAMED(DAT_RESOURCE_DEVICE),
        NAMED(DAT_RESOURCE_TEP),
        NAMED(DAT_RESOURCE_TEVD),
        NAMED(DAT_RESOURCE_PROTECTION_DOMAIN),
        NAMED(DAT_RESOURCE_MEMORY_REGION),
        NAMED(DAT_RESOURCE_ERROR_HANDLER),
        NAMED(DAT_RESOURCE_CREDITS),
        NAMED(DAT_RESOURCE_SRQ),
        NAMED(DAT_INVALID_HANDLE_IA),
        NAMED(DAT_INVALID_HANDLE_EP),
        NAMED(DAT_INVALID_HANDLE_LMR),
        NAMED(DAT_INVALID_HANDLE_RMR),
        NAMED(DAT_INVALID_HANDLE_PZ),
        NAMED(DAT_INVALID_HANDLE_PSP),
        NAMED(DAT_INVALID_HANDLE_RSP),
        NAMED(DAT_INVALID_HANDLE_CR),
        NAMED(DAT_INVALID_HANDLE_CNO),
        NAMED(DAT_INVALID_HANDLE_EVD_CR),
        NAMED(DAT_INVALID_HANDLE_EVD_REQUEST),
        NAMED(DAT_INVALID_HANDLE_EVD_RECV),
        NAMED(DAT_INVALID_HANDLE_EVD_CONN),
        NAMED(DAT_INVALID_HANDLE_EVD_ASYNC),
        NAMED(DAT_INVALID_HANDLE_SRQ),
        NAMED(DAT_INVALID_HANDLE_CSP),
        NAMED(DAT_INVALID_HANDLE1),
        NAMED(DAT_INVALID_HANDLE2),
        NAMED(DAT_INVALID_HANDLE3),
        NAMED(DAT_INVALID_HANDLE4),
        NAMED(DAT_INVALID_HANDLE5),
        NAMED(DAT_INVALID_HANDLE6),
        NAMED(DAT_INVALID_HANDLE7),
        NAMED(DAT_INVALID_HANDLE8),
        NAMED(DAT_INVALID_HANDLE9),
        NAMED(DAT_INVALID_HANDLE10),
        NAMED(DAT_INVALID_ARG1),
        NAMED(DAT_INVALID_ARG2),
        NAMED(DAT_INVALID_ARG3),
        NAMED(DAT_INVALID_ARG4),
        NAMED(DAT_INVALID_ARG5),
        NAMED(DAT_INVALID_ARG6),
        NAMED(DAT_INVALID_ARG7),
        NAMED(DAT_INVALID_ARG8),
        NAMED(DAT_INVALID_ARG9),
        NAMED(DAT_INVALID_ARG10),
        NAMED(DAT_INVALID_STATE_EP_UNCONNECTED),
        NAMED(DAT_INVALID_STATE_EP_ACTCONNPENDING),
        NAMED(DAT_INVALID_STATE_EP_PASSCONNPENDING),
        NAMED(DAT_INVALID_STATE_EP_TENTCONNPENDING),
        NAMED(DAT_INVALID_STATE_EP_CONNECTED),
        NAMED(DAT_INVALID_STATE_EP_DISCONNECTED),
        NAMED(DAT_INVALID_STATE_EP_RESERVED),
        NAMED(DAT_INVALID_STATE_EP_COMPLPENDING),
        NAMED(DAT_INVALID_STATE_EP_DISCPENDING),
        NAMED(DAT_INVALID_STATE_EP_PROVIDERCONTROL),
        NAMED(DAT_INVALID_STATE_EP_NOTREADY),
        NAMED(DAT_INVALID_STATE_EP_RECV_WATERMARK),
        NAMED(DAT_INVALID_STATE_EP_PZ),
        NAMED(DAT_INVALID_STATE_EP_EVD_REQUEST),
        {DAT_INVALID_STATE_EP_EVD_RECV,
         "DAT_INVALID_STATE_EP_EVD_RCV"},  // the reference's spelling
        NAMED(DAT_INVALID_STATE_EP_EVD_CONNECT),
        NAMED(DAT_INVALID_STATE_EP_UNCONFIGURED),
        NAMED(DAT_INVALID_STATE_EP_UNCONFRESERVED),
        NAMED(DAT_INVALID_STATE_EP_UNCONFPASSIVE),
        NAMED(DAT_INVALID_STATE_EP_UNCONFTENTATIVE),
        NAMED(DAT_INVALID_STATE_CNO_IN_USE),
        NAMED(DAT_INVALID_STATE_CNO_DEAD),
        NAMED(DAT_INVALID_STATE_EVD_OPEN),
        NAMED(DAT_INVALID_STATE_EVD_ENABLED),
        NAMED(DAT_INVALID_STATE_EVD_DISABLED),
        NAMED(DAT_INVALID_STATE_EVD_WAITABLE),
        NAMED(DAT_INVALID_STATE_EVD_UNWAITABLE),
        NAMED(DAT_INVALID_STATE_EVD_IN_USE),
        NAMED(DAT_INVALID_STATE_EVD_CONFIG_NOTIFY),
        NAMED(DAT_INVALID_STATE_EVD_CONFIG_SOLICITED),
        NAMED(DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD),
        NAMED(DAT_INVALID_STATE_EVD_WAITER),
        NAMED(DAT_INVALID_STATE_EVD_ASYNC),
        NAMED(DAT_INVALID_STATE_IA_IN_USE),
        NAMED(DAT_INVALID_STATE_LMR_IN_USE),
        NAMED(DAT_INVALID_STATE_LMR_FREE),
        NAMED(DAT_INVALID_STATE_PZ_IN_USE),
        NAMED(DAT_INVALID_STATE_PZ_FREE),
        NAMED(DAT_INVALID_STATE_SRQ_OPERATIONAL),
        NAMED(DAT_INVALID_STATE_SRQ_ERROR),
        NAMED(DAT_INVALID_STATE_SRQ_IN_USE),
        NAMED(DAT_INVALID_STATE_SRQ_SHUTDOWN),
        NAMED(DAT_PRIVILEGES_READ),
        NAMED(DAT_PRIVILEGES_WRITE),
        NAMED(DAT_PRIVILEGES_RDMA_READ),
        NAMED(DAT_PRIVILEGES_RDMA_WRITE),
        NAMED(DAT_PROTECTION_READ),
        NAMED(DAT_PROTECTION_WRITE),
        NAMED(DAT_PROTECTION_RDMA_READ),
        NAMED(DAT_PROTECTION_RDMA_WRITE),
        NAMED(DAT_INVALID_ADDRESS_UNSUPPORTED),
        NAMED(DAT_INVALID_ADDRESS_UNREACHABLE),
        NAMED(DAT_INVALID_ADDRESS_MALFORMED),
        NAMED(DAT_NAME_NOT_REGISTERED),
        NAMED(DAT_MAJOR_NOT_FOUND),
        NAMED(DAT_MINOR_NOT_FOUND),
        NAMED(DAT_THREAD_SAFETY_NOT_FOUND),
    };
    return m;
}

TEST(Strerror, EveryTypeCodeWithEveryClass) {
    for (DAT_UINT32 type = 0; type <= 0x3FFF; ++type) {
        for (DAT_UINT32 cls : {0u, 0x40000000u, 0x80000000u}) {
            const DAT_RETURN v = cls | (type << 16);
            const char *major = nullptr;
            const char *minor = "untouched";
            const DAT_RETURN r = dat_strerror(v, &major, &minor);
            auto it = types().find(type << 16);
            if (it != types().end()) {
                EXPECT_EQ(r, DAT_SUCCESS) << std::hex << v;
                EXPECT_STREQ(major, it->second.c_str()) << std::hex << v;
                EXPECT_STREQ(minor, "") << std::hex << v;
            } else {
                EXPECT_EQ(r, 0x00060000u) << std::hex << v;
                EXPECT_STREQ(major, "unknown error") << std::hex << v;
                // Always written (the reference leaves it untouched; dapltest -T L then
                // prints an uninitialised pointer).
                EXPECT_STREQ(minor, "unknown minor error") << std::hex << v;
            }
        }
    }
}

TEST(Strerror, EverySubtypeCode) {
    for (DAT_UINT32 sub = 0; sub <= 0xFFFF; ++sub) {
        const DAT_RETURN v = 0x80000000u | DAT_INVALID_STATE | sub;
        const char *major = nullptr;
        const char *minor = nullptr;
        const DAT_RETURN r = dat_strerror(v, &major, &minor);
        EXPECT_STREQ(major, "DAT_INVALID_STATE");
        auto it = subtypes().find(sub);
        if (it != subtypes().end()) {
            EXPECT_EQ(r, DAT_SUCCESS) << sub;
            EXPECT_STREQ(minor, it->second.c_str()) << sub;
        } else {
            // Beyond the last enumerator (DAT_THREAD_SAFETY_NOT_FOUND).
            EXPECT_GT(sub, static_cast<DAT_UINT32>(DAT_THREAD_SAFETY_NOT_FOUND)) << sub;
            EXPECT_EQ(r, 0x00060000u) << sub;
            EXPECT_STREQ(minor, "unknown minor error") << sub;
        }
    }
}

TEST(Strerror, ToolOutputs) {
    const char *major = nullptr, *minor = nullptr;
    EXPECT_EQ(dat_strerror(0x800A0064, &major, &minor), DAT_SUCCESS);
    EXPECT_EQ(std::string(major) + " " + minor, "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED");
    EXPECT_EQ(dat_strerror(0x80120000, &major, &minor), DAT_SUCCESS);
    EXPECT_EQ(std::string(major) + " " + minor, "DAT_INVALID_ADDRESS ");
    EXPECT_EQ(dat_strerror(0xBFFF0000, &major, &minor), DAT_SUCCESS);
    EXPECT_STREQ(major, "DAT_NOT_IMPLEMENTED");
    EXPECT_EQ(dat_strerror(0x000D0000, &major, &minor), DAT_SUCCESS);
    EXPECT_STREQ(major, "DAT_QUEUE_EMPTY");
}

TEST(Strerror, NullPointers) {
    const char *major = nullptr;
    EXPECT_EQ(dat_strerror(0x8005000b, &major, nullptr), DAT_SUCCESS);  // minor may be NULL
    EXPECT_STREQ(major, "DAT_INVALID_HANDLE");
    EXPECT_EQ(dat_strerror(0x8005ffff, &major, nullptr), DAT_SUCCESS);  // subtype not looked at
    const char *minor = nullptr;
    EXPECT_EQ(DAT_GET_TYPE(dat_strerror(0x8005000b, nullptr, &minor)),
              DAT_INVALID_PARAMETER);  // no crash
    EXPECT_TRUE(dat_strerror(0x8005000b, nullptr, &minor) & DAT_CLASS_ERROR);
}

}  // namespace

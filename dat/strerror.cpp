// dat_strerror with the reference library's exact behaviour (docs/dat-abi.md §7.4). The
// strings are the enumerator names of dat_error.h, with the reference's one quirk: subtype
// 61 reads "DAT_INVALID_STATE_EP_EVD_RCV". Unlike the reference, every type and subtype
// dat_error.h defines has a name (the reference misses types 0x14..0x17 and the SRQ state
// subtypes 85..88), and both output strings are always written: the reference leaves
// *minor untouched for an unknown type, and the unmodified `dapltest -T L` then prints an
// uninitialised pointer.
#include "dispatch.hpp"

#include <array>
#include <cstddef>

namespace {

constexpr DAT_RETURN kUnknown = DAT_INVALID_PARAMETER;  // 0x00060000, no class bit (sic)

constexpr std::array<const char *, 0x18> kTypes = {
    "DAT_SUCCESS",
    "DAT_ABORT",
    "DAT_CONN_QUAL_IN_USE",
    "DAT_INSUFFICIENT_RESOURCES",
    "DAT_INTERNAL_ERROR",
    "DAT_INVALID_HANDLE",
    "DAT_INVALID_PARAMETER",
    "DAT_INVALID_STATE",
    "DAT_LENGTH_ERROR",
    "DAT_MODEL_NOT_SUPPORTED",
    "DAT_PROVIDER_NOT_FOUND",
    "DAT_PRIVILEGES_VIOLATION",
    "DAT_PROTECTION_VIOLATION",
    "DAT_QUEUE_EMPTY",
    "DAT_QUEUE_FULL",
    "DAT_TIMEOUT_EXPIRED",
    "DAT_PROVIDER_ALREADY_REGISTERED",
    "DAT_PROVIDER_IN_USE",
    "DAT_INVALID_ADDRESS",
    "DAT_INTERRUPTED_CALL",
    "DAT_CONN_QUAL_UNAVAILABLE",
    "DAT_RESERVED_LMR",
    "DAT_PORT_IN_USE",
    "DAT_COMM_NOT_SUPPORTED",
};

// Index = subtype: every DAT_RETURN_SUBTYPE enumerator, in order.
constexpr std::array<const char *, 104> kSubtypes = {
    "",  // DAT_NO_SUBTYPE
    "DAT_SUB_INTERRUPTED",
    "DAT_RESOURCE_MEMORY",
    "DAT_RESOURCE_DEVICE",
    "DAT_RESOURCE_TEP",
    "DAT_RESOURCE_TEVD",
    "DAT_RESOURCE_PROTECTION_DOMAIN",
    "DAT_RESOURCE_MEMORY_REGION",
    "DAT_RESOURCE_ERROR_HANDLER",
    "DAT_RESOURCE_CREDITS",
    "DAT_RESOURCE_SRQ",
    "DAT_INVALID_HANDLE_IA",
    "DAT_INVALID_HANDLE_EP",
    "DAT_INVALID_HANDLE_LMR",
    "DAT_INVALID_HANDLE_RMR",
    "DAT_INVALID_HANDLE_PZ",
    "DAT_INVALID_HANDLE_PSP",
    "DAT_INVALID_HANDLE_RSP",
    "DAT_INVALID_HANDLE_CR",
    "DAT_INVALID_HANDLE_CNO",
    "DAT_INVALID_HANDLE_EVD_CR",
    "DAT_INVALID_HANDLE_EVD_REQUEST",
    "DAT_INVALID_HANDLE_EVD_RECV",
    "DAT_INVALID_HANDLE_EVD_CONN",
    "DAT_INVALID_HANDLE_EVD_ASYNC",
    "DAT_INVALID_HANDLE_SRQ",
    "DAT_INVALID_HANDLE_CSP",
    "DAT_INVALID_HANDLE1",
    "DAT_INVALID_HANDLE2",
    "DAT_INVALID_HANDLE3",
    "DAT_INVALID_HANDLE4",
    "DAT_INVALID_HANDLE5",
    "DAT_INVALID_HANDLE6",
    "DAT_INVALID_HANDLE7",
    "DAT_INVALID_HANDLE8",
    "DAT_INVALID_HANDLE9",
    "DAT_INVALID_HANDLE10",
    "DAT_INVALID_ARG1",
    "DAT_INVALID_ARG2",
    "DAT_INVALID_ARG3",
    "DAT_INVALID_ARG4",
    "DAT_INVALID_ARG5",
    "DAT_INVALID_ARG6",
    "DAT_INVALID_ARG7",
    "DAT_INVALID_ARG8",
    "DAT_INVALID_ARG9",
    "DAT_INVALID_ARG10",
    "DAT_INVALID_STATE_EP_UNCONNECTED",
    "DAT_INVALID_STATE_EP_ACTCONNPENDING",
    "DAT_INVALID_STATE_EP_PASSCONNPENDING",
    "DAT_INVALID_STATE_EP_TENTCONNPENDING",
    "DAT_INVALID_STATE_EP_CONNECTED",
    "DAT_INVALID_STATE_EP_DISCONNECTED",
    "DAT_INVALID_STATE_EP_RESERVED",
    "DAT_INVALID_STATE_EP_COMPLPENDING",
    "DAT_INVALID_STATE_EP_DISCPENDING",
    "DAT_INVALID_STATE_EP_PROVIDERCONTROL",
    "DAT_INVALID_STATE_EP_NOTREADY",
    "DAT_INVALID_STATE_EP_RECV_WATERMARK",
    "DAT_INVALID_STATE_EP_PZ",
    "DAT_INVALID_STATE_EP_EVD_REQUEST",
    "DAT_INVALID_STATE_EP_EVD_RCV",  // 61: the reference's spelling
    "DAT_INVALID_STATE_EP_EVD_CONNECT",
    "DAT_INVALID_STATE_EP_UNCONFIGURED",
    "DAT_INVALID_STATE_EP_UNCONFRESERVED",
    "DAT_INVALID_STATE_EP_UNCONFPASSIVE",
    "DAT_INVALID_STATE_EP_UNCONFTENTATIVE",
    "DAT_INVALID_STATE_CNO_IN_USE",
    "DAT_INVALID_STATE_CNO_DEAD",
    "DAT_INVALID_STATE_EVD_OPEN",
    "DAT_INVALID_STATE_EVD_ENABLED",
    "DAT_INVALID_STATE_EVD_DISABLED",
    "DAT_INVALID_STATE_EVD_WAITABLE",
    "DAT_INVALID_STATE_EVD_UNWAITABLE",
    "DAT_INVALID_STATE_EVD_IN_USE",
    "DAT_INVALID_STATE_EVD_CONFIG_NOTIFY",
    "DAT_INVALID_STATE_EVD_CONFIG_SOLICITED",
    "DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD",
    "DAT_INVALID_STATE_EVD_WAITER",
    "DAT_INVALID_STATE_EVD_ASYNC",
    "DAT_INVALID_STATE_IA_IN_USE",
    "DAT_INVALID_STATE_LMR_IN_USE",
    "DAT_INVALID_STATE_LMR_FREE",
    "DAT_INVALID_STATE_PZ_IN_USE",
    "DAT_INVALID_STATE_PZ_FREE",
    "DAT_INVALID_STATE_SRQ_OPERATIONAL",
    "DAT_INVALID_STATE_SRQ_ERROR",
    "DAT_INVALID_STATE_SRQ_IN_USE",
    "DAT_INVALID_STATE_SRQ_SHUTDOWN",
    "DAT_PRIVILEGES_READ",
    "DAT_PRIVILEGES_WRITE",
    "DAT_PRIVILEGES_RDMA_READ",
    "DAT_PRIVILEGES_RDMA_WRITE",
    "DAT_PROTECTION_READ",
    "DAT_PROTECTION_WRITE",
    "DAT_PROTECTION_RDMA_READ",
    "DAT_PROTECTION_RDMA_WRITE",
    "DAT_INVALID_ADDRESS_UNSUPPORTED",
    "DAT_INVALID_ADDRESS_UNREACHABLE",
    "DAT_INVALID_ADDRESS_MALFORMED",
    "DAT_NAME_NOT_REGISTERED",
    "DAT_MAJOR_NOT_FOUND",
    "DAT_MINOR_NOT_FOUND",
    "DAT_THREAD_SAFETY_NOT_FOUND",
};

const char *type_name(DAT_UINT32 type) noexcept {
    if (type < kTypes.size()) return kTypes[type];
    if (type == (DAT_NOT_IMPLEMENTED >> 16)) return "DAT_NOT_IMPLEMENTED";
    return nullptr;
}

}  // namespace

extern "C" DAT_RETURN dat_strerror(DAT_RETURN value, const char **major, const char **minor) {
    // The reference crashes on a NULL major pointer; we refuse it.
    if (major == nullptr) return opendat::dat::error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    const char *type = type_name(DAT_GET_TYPE(value) >> 16);
    if (type == nullptr) {
        *major = "unknown error";
        if (minor != nullptr) *minor = "unknown minor error";
        return kUnknown;
    }
    *major = type;
    if (minor == nullptr) return DAT_SUCCESS;
    const DAT_UINT32 subtype = DAT_GET_SUBTYPE(value);
    const char *sub = subtype < kSubtypes.size() ? kSubtypes[subtype] : nullptr;
    if (sub == nullptr) {
        *minor = "unknown minor error";
        return kUnknown;
    }
    *minor = sub;
    return DAT_SUCCESS;
}

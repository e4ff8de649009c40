// Work-completion status → DAT DTO completion status.
#pragma once

#include <infiniband/verbs.h>

#include <dat2/udat.h>

namespace opendat::verbs {

constexpr DAT_DTO_COMPLETION_STATUS dto_status(ibv_wc_status s) noexcept {
    switch (s) {
        case IBV_WC_SUCCESS:
            return DAT_DTO_SUCCESS;
        case IBV_WC_WR_FLUSH_ERR:
            return DAT_DTO_ERR_FLUSHED;
        case IBV_WC_LOC_LEN_ERR:
            return DAT_DTO_ERR_LOCAL_LENGTH;
        case IBV_WC_LOC_QP_OP_ERR:
            return DAT_DTO_ERR_LOCAL_EP;
        case IBV_WC_LOC_PROT_ERR:
            return DAT_DTO_ERR_LOCAL_PROTECTION;
        case IBV_WC_BAD_RESP_ERR:
            return DAT_DTO_ERR_BAD_RESPONSE;
        case IBV_WC_REM_ACCESS_ERR:
            return DAT_DTO_ERR_REMOTE_ACCESS;
        case IBV_WC_REM_INV_REQ_ERR:
        case IBV_WC_REM_OP_ERR:
        case IBV_WC_REM_ABORT_ERR:
            return DAT_DTO_ERR_REMOTE_RESPONDER;
        case IBV_WC_RETRY_EXC_ERR:
            return DAT_DTO_ERR_TRANSPORT;
        case IBV_WC_RNR_RETRY_EXC_ERR:
            return DAT_DTO_ERR_RECEIVER_NOT_READY;
        case IBV_WC_MW_BIND_ERR:
            return DAT_RMR_OPERATION_FAILED;
        case IBV_WC_LOC_ACCESS_ERR:
            return DAT_DTO_ERR_LOCAL_PROTECTION;
        default:
            return DAT_DTO_ERR_TRANSPORT;  // EEC/RDD/GENERAL/fatal and future codes
    }
}

}  // namespace opendat::verbs

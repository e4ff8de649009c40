// The IB extensions (<dat2/dat_ib_extensions.h>) as util sees them: the provider table's
// handle_extendedop_func, which reads each op's arguments from the va_list, checks them
// like the base entry points and calls the transport's extension hooks
// (Transport::ep_post_write_immed / ep_post_atomic); and the extended DTO completion a
// transport posts for them.
#pragma once

#include <cstdarg>
#include <cstdint>

#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

#include "util/objects.hpp"

namespace opendat::util {

// DAT_IB_MEM_PRIV_REMOTE_ATOMIC: what a remote atomic's target range must grant.
constexpr DAT_MEM_PRIV_FLAGS kPrivRemoteAtomic =
    static_cast<DAT_MEM_PRIV_FLAGS>(DAT_IB_MEM_PRIV_REMOTE_ATOMIC);

// Whether a transport with these limits implements any IB extension (then the IA reports
// DAT_EXTENSION_IB and libdat2 routes dat_extension_op to the provider).
inline bool has_ib_extensions(const Limits &lim) noexcept {
    return lim.immediate_data || lim.atomics;
}

// An extended DTO completion on `evd`: event_number DAT_IB_DTO_EVENT, the usual
// dto_completion_event_data (cookie, status, length, op: a DAT_IB_DTOS value), and the
// DAT_IB_EXTENSION_EVENT_DATA overlay at event_extension_data: `type`, status
// (DAT_OP_SUCCESS or DAT_IB_OP_ERR, from `status`) and the immediate data. `solicited`
// as for post_dto.
void post_ext_dto(Evd *evd, Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS status,
                  DAT_COUNT length, DAT_DTOS op, DAT_IB_EXT_TYPE type, std::uint32_t immed = 0,
                  bool solicited = false) noexcept;
// That event, built but not posted (a transport posting a run of completions under one
// lock: Evd::Batch).
DAT_EVENT ext_dto_event(Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS status,
                        DAT_COUNT length, DAT_DTOS op, DAT_IB_EXT_TYPE type,
                        std::uint32_t immed = 0) noexcept;

namespace entry {
// DAT_PROVIDER.handle_extendedop_func. `h` is an EP for the post ops, the IA name for
// DAT_IB_OPEN_QUERY_OP and the open-query handle for DAT_IB_CLOSE_QUERY_OP.
DAT_RETURN extended_op(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list args) noexcept;
}  // namespace entry

}  // namespace opendat::util

// The receiver's own size limits: a frame is judged against what this side advertises
// (max_message_size, max_rdma_size), not against what the sender promised. Lengths above
// 2^31 - 1 would otherwise reach DAT_COUNT fields (a 2 GiB send completing with a negative
// length).
#pragma once

#include "tcp/wire.hpp"
#include "util/transport.hpp"

namespace opendat::tcp {

// Why the frame is too large for this receiver, or nullptr.
inline const char *frame_too_large(const FrameHeader &h, const util::Limits &lim) noexcept {
    switch (h.op) {
        case kSend:
            return h.length > lim.max_message_size ? "message above max_message_size" : nullptr;
        case kWrite:
        case kWriteImm:
        case kReadResp:
            return h.length > lim.max_rdma_size ? "RDMA payload above max_rdma_size" : nullptr;
        case kReadReq:
            return h.aux > lim.max_rdma_size ? "RDMA read above max_rdma_size" : nullptr;
        default:
            return nullptr;
    }
}

}  // namespace opendat::tcp

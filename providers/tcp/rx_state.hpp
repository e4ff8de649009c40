// Where the receive state machine of one connection stands: which part of which frame it
// is reading, and where that frame's payload goes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tcp/iov.hpp"
#include "tcp/wire.hpp"

namespace opendat::tcp {

struct RxState {
    enum class At {
        Header,    // assembling the fixed header
        Dispatch,  // header complete: validate it and find the payload's destination
        Payload,   // moving the payload into `dst`
        Discard,   // dropping `skip` bytes (after a protection violation: everything)
    };
    // What completes when the payload is in.
    enum class Done { None, Recv, Write, ReadResp, ConnPdata };

    At at = At::Header;
    FrameHeader hdr{};
    std::size_t hdr_got = 0;  // header bytes assembled
    Done done = Done::None;
    IovCursor<kMaxIov> dst;    // where the payload's remaining bytes go
    std::uint64_t skip = 0;    // Discard: bytes still to drop
    std::uint64_t wr = 0;      // ReadResp: request counter of the read being answered
    bool blocked = false;      // waiting for a posted receive or control-ring space
    bool discard_all = false;  // after a protection violation: drain until the peer closes

    // The first byte of a new stream.
    void reset() noexcept { *this = RxState{}; }
    // The header is complete: the next step decides where the payload goes.
    void header_done() noexcept {
        hdr_got = 0;
        if (discard_all) {
            at = At::Discard;
            skip = hdr.length;
        } else {
            at = At::Dispatch;
        }
    }
    // The payload (dst already describes its destination) is next.
    void expect_payload(Done what) noexcept {
        done = what;
        at = At::Payload;
    }
    void next_frame() noexcept { at = At::Header; }
};

}  // namespace opendat::tcp

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
        Header,     // assembling the 32-byte base header
        Extension,  // the header's extension bytes: `ext_want` kept, then `skip` dropped
        Dispatch,   // header complete: validate it and find the payload's destination
        Payload,    // moving the payload into `dst`
        Discard,    // dropping `skip` bytes (after a protection violation: everything)
    };
    // What completes when the payload is in.
    enum class Done { None, Recv, Write, WriteImm, ReadResp, ConnPdata };

    // What every round reads first, beside the header: one line (the payload cursor,
    // some 270 bytes, comes last).
    At at = At::Header;
    Done done = Done::None;
    std::size_t hdr_got = 0;   // header bytes assembled
    bool blocked = false;      // waiting for a posted receive or control-ring space
    bool discard_all = false;  // after a protection violation: drain until the peer closes
    // The stream's end is read (the peer's DISC or FIN, a bad frame): nothing more is read,
    // and the connection ends once the answers already queued have left
    // (TcpEp::rx_teardown).
    bool ended = false;
    // The peer's FIN came while this side waits (blocked): it sends nothing more, and what
    // it sent stays unread until a receive is posted; the close deadline runs
    // (TcpEp::peer_ended_while_blocked).
    bool peer_fin = false;
    FrameHeader hdr{};
    unsigned char ext[kMaxExtension]{};  // known extension fields (ATOMIC_REQ: the operands)
    std::size_t ext_want = 0, ext_got = 0;
    std::uint64_t skip = 0;  // Discard/Extension: bytes still to drop
    std::uint64_t wr = 0;    // ReadResp: request counter of the read being answered
    IovCursor<kMaxIov> dst;  // where the payload's remaining bytes go

    // Whether a round reads the socket now.
    bool reading() const noexcept { return !blocked && !ended; }
    // Whether epoll should report the peer's end meanwhile (EPOLLRDHUP, level-triggered:
    // asked for until it came once; TcpEp::peer_ended_while_blocked).
    bool awaits_peer_end() const noexcept { return blocked && !ended && !peer_fin; }

    // The first byte of a new stream.
    void reset() noexcept { *this = RxState{}; }
    // The base header is valid and announces `ext` extension bytes: read those, then
    // decide where the payload goes.
    void header_done(std::size_t ext) noexcept {
        hdr_got = 0;
        if (ext == 0) {
            at = At::Dispatch;
            return;
        }
        ext_want = ext < kMaxExtension ? ext : kMaxExtension;
        ext_got = 0;
        skip = ext - ext_want;
        at = At::Extension;
    }
    // Drain mode: the whole frame, header extension and payload, is dropped unread.
    void drop_frame(std::size_t ext) noexcept {
        hdr_got = 0;
        at = At::Discard;
        skip = ext + hdr.length;
    }
    // The payload (dst already describes its destination) is next.
    void expect_payload(Done what) noexcept {
        done = what;
        at = At::Payload;
    }
    void next_frame() noexcept { at = At::Header; }
};

}  // namespace opendat::tcp

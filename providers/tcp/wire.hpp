// The tcp provider's wire format.
//
// Every frame is a fixed 32-byte header followed by `length` payload bytes. Fields are in
// the sender's native (x86_64: little-endian) order; the magic doubles as a byte-order
// check, so a peer of the other endianness is rejected at connect time.
//
// Connection setup: the active side sends CONN_REQ (payload = private data), the passive
// side answers CONN_ACC or CONN_REJ (payload = private data). The version is checked on
// both: a CONN_REQ of another version is refused by closing the socket, which the active
// side reports as a non-peer reject.
//
// Data: SEND (payload = message), WRITE (addr/rkey name the target range, payload = data),
// READ_REQ (addr/rkey/aux = range to read), READ_RESP (payload = data). `seq` numbers the
// initiator's requests; READ_RESP, ACK (placement acknowledged, for delayed_ack) and NAK
// (aux = DAT_DTO_COMPLETION_STATUS the initiator reports) echo it. DISC announces a
// graceful disconnect; a connection that ends without it is reported as broken.
#pragma once

#include <cstddef>
#include <cstdint>

namespace opendat::tcp {

constexpr std::uint32_t kWireMagic = 0x3154444f;  // "ODT1" in little-endian bytes
constexpr std::uint8_t kWireVersion = 1;

enum Op : std::uint8_t {
    kConnReq = 1,
    kConnAcc = 2,
    kConnRej = 3,
    kSend = 4,
    kWrite = 5,
    kReadReq = 6,
    kReadResp = 7,
    kAck = 8,
    kNak = 9,
    kDisc = 10,
    kOpLimit,
};

enum Flags : std::uint16_t {
    kFlagAckReq = 1,  // the initiator wants an ACK once the payload is placed
};

struct FrameHeader {
    std::uint32_t magic;
    std::uint8_t version;
    std::uint8_t op;
    std::uint16_t flags;
    std::uint32_t length;  // payload bytes after the header
    std::uint32_t seq;
    std::uint64_t addr;
    std::uint32_t rkey;
    std::uint32_t aux;
};
static_assert(sizeof(FrameHeader) == 32);
static_assert(offsetof(FrameHeader, addr) == 16);

inline FrameHeader make_header(Op op, std::uint32_t length, std::uint32_t seq = 0) noexcept {
    FrameHeader h{};
    h.magic = kWireMagic;
    h.version = kWireVersion;
    h.op = op;
    h.length = length;
    h.seq = seq;
    return h;
}

}  // namespace opendat::tcp

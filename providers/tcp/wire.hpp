// The tcp provider's wire format (docs/tcp-provider.md, "Wire format", has the rules in
// full).
//
// Every frame is a header followed by `length` payload bytes. The header is a 32-byte base,
// optionally followed (version 2 on) by extension bytes: `hdr_len` gives the header's
// length in 8-byte units, so a receiver skips trailing header fields it does not know.
// Fields are in the sender's native (x86_64: little-endian) order; the magic doubles as a
// byte-order check, so a peer of the other endianness is rejected at connect time.
//
// Versions: the handshake frames (CONN_REQ, CONN_ACC, CONN_REJ) always have version byte 1
// and a bare 32-byte header, so every version can read them (a version-1 listener refuses
// any other version byte). They carry the sender's highest version in `aux` (0, as version
// 1 sends, means 1) and its capability bits in `rkey`. Both sides then speak the lower
// version and the common capabilities; every later frame carries that version. An op or
// flag outside the agreed version and capabilities is a protocol error.
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
constexpr std::uint8_t kWireVersion = 2;          // the highest version this code speaks
constexpr std::uint8_t kHandshakeVersion = 1;     // the version byte of CONN_REQ/ACC/REJ
constexpr std::size_t kBaseHeader = 32;
// Extension bytes a receiver keeps for the op's handler; any beyond are skipped.
constexpr std::size_t kMaxExtension = 32;

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
    // The IB extensions; refused unless their capability is agreed.
    // WRITE_IMM: a WRITE (addr/rkey/length/payload) whose target then completes its next
    // posted receive with `aux` as the immediate data.
    kWriteImm = 11,  // kCapImmediate
    // ATOMIC_REQ: addr/rkey name an 8-byte aligned target, aux = kAtomicFetchAdd or
    // kAtomicCmpSwap, no payload; a 16-byte header extension (hdr_len 6) carries the two
    // operands (add or compare, swap). ATOMIC_RESP echoes seq, addr = the original value.
    kAtomicReq = 12,   // kCapAtomics
    kAtomicResp = 13,  // kCapAtomics
};

enum Flags : std::uint8_t {
    kFlagAckReq = 1,  // the initiator wants an ACK once the payload is placed
    // SEND / WRITE_IMM (kCapSolicited): the message is solicited
    // (DAT_COMPLETION_SOLICITED_WAIT_FLAG): its receive completion wakes a solicited-only
    // waiter.
    kFlagSolicited = 2,
};

// Capability bits (CONN_REQ/CONN_ACC `rkey`). An op of a capability the peer did not
// offer is never sent (the post fails) and refused if received.
enum Cap : std::uint32_t {
    kCapImmediate = 1u << 0,  // RDMA write with immediate data
    kCapAtomics = 1u << 1,    // compare-and-swap, fetch-and-add
    // The solicited flag. Without it the sender cannot mark a message, so the receiver
    // takes every message as solicited (a solicited-only waiter still wakes).
    kCapSolicited = 1u << 2,
};
constexpr std::uint32_t kCapsImplemented = kCapImmediate | kCapAtomics | kCapSolicited;

// Whether a frame's flags are defined for its op under the agreed capabilities.
inline bool flags_allowed(std::uint8_t op, std::uint8_t flags, std::uint32_t caps) noexcept {
    std::uint8_t known = kFlagAckReq;
    if ((caps & kCapSolicited) != 0 && (op == kSend || op == kWriteImm)) known |= kFlagSolicited;
    return (flags & ~known) == 0;
}

// ATOMIC_REQ: `aux` says which operation; the header extension carries its operands.
enum AtomicKind : std::uint32_t { kAtomicFetchAdd = 0, kAtomicCmpSwap = 1 };
constexpr std::size_t kAtomicExtension = 16;

// CONN_REJ's `aux`: 0 = the peer application rejected (PEER_REJECTED, with its private
// data); kRejNoServicePoint = no service point listens for the qualifier the CONN_REQ
// carried (NON_PEER_REJECTED). A version-1 peer sends 0 and ignores the field.
constexpr std::uint32_t kRejNoServicePoint = 1;

struct FrameHeader {
    std::uint32_t magic;
    std::uint8_t version;
    std::uint8_t op;
    std::uint8_t flags;
    std::uint8_t hdr_len;  // header bytes / 8; 0 (all version 1 sends: its flags' high byte) = 32
    std::uint32_t length;  // payload bytes after the header
    std::uint32_t seq;
    std::uint64_t addr;
    std::uint32_t rkey;
    std::uint32_t aux;
};
static_assert(sizeof(FrameHeader) == kBaseHeader);
static_assert(offsetof(FrameHeader, addr) == 16);

// What one side speaks, or what two sides agreed on.
struct WireTerms {
    std::uint8_t version = 1;
    std::uint32_t caps = 0;
};

// Version 1 has no capabilities: a peer that announces version 1 with capability bits gets
// none (its frames could not carry them, e.g. ATOMIC_REQ's header extension).
inline WireTerms agree(WireTerms a, WireTerms b) noexcept {
    const std::uint8_t v = a.version < b.version ? a.version : b.version;
    return {v, v >= 2 ? a.caps & b.caps : 0u};
}

// A header in version-1 framing: handshake frames, and every frame of a version-1
// connection.
inline FrameHeader make_header(Op op, std::uint32_t length, std::uint32_t seq = 0) noexcept {
    FrameHeader h{};
    h.magic = kWireMagic;
    h.version = kHandshakeVersion;
    h.op = op;
    h.length = length;
    h.seq = seq;
    return h;
}

// A data-phase header of the agreed version (from 2 on: hdr_len says 32 bytes).
inline FrameHeader make_frame(std::uint8_t version, Op op, std::uint32_t length,
                              std::uint32_t seq = 0) noexcept {
    FrameHeader h = make_header(op, length, seq);
    h.version = version;
    if (version >= 2) h.hdr_len = kBaseHeader / 8;
    return h;
}

// CONN_REQ / CONN_ACC: version-1 framing, announcing what the sender speaks.
inline FrameHeader make_handshake(Op op, std::uint32_t length, WireTerms mine) noexcept {
    FrameHeader h = make_header(op, length);
    h.aux = mine.version;
    h.rkey = mine.caps;
    return h;
}

// What the sender of a CONN_REQ / CONN_ACC speaks.
inline WireTerms announced(const FrameHeader &h) noexcept {
    WireTerms t;
    t.version = h.aux == 0 ? 1 : h.aux > 255 ? 255 : static_cast<std::uint8_t>(h.aux);
    t.caps = h.rkey;
    return t;
}

// A well-formed handshake frame of the given op (the listener checks CONN_REQ with it).
inline bool valid_handshake(const FrameHeader &h, Op op, std::uint32_t max_pdata) noexcept {
    return h.magic == kWireMagic && h.version == kHandshakeVersion && h.op == op &&
           h.hdr_len == 0 && h.length <= max_pdata;
}

// Header bytes past the 32-byte base, or -1 if hdr_len is not valid under `version`.
inline long extension_bytes(const FrameHeader &h, std::uint8_t version) noexcept {
    if (h.hdr_len == 0) return 0;
    if (version < 2 || h.hdr_len < kBaseHeader / 8) return -1;
    return static_cast<long>(h.hdr_len) * 8 - static_cast<long>(kBaseHeader);
}

// Whether `op` exists under the agreed capabilities.
inline bool op_allowed(std::uint8_t op, std::uint32_t caps) noexcept {
    if (op >= kConnReq && op <= kDisc) return true;
    if (op == kWriteImm) return (caps & kCapImmediate) != 0;
    if (op == kAtomicReq || op == kAtomicResp) return (caps & kCapAtomics) != 0;
    return false;
}

}  // namespace opendat::tcp

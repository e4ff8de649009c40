// One endpoint's connection over one TCP socket: the request, receive and control rings
// (all sized at ep_create, so the data path never allocates), the transmit and receive
// state machines, and connection setup/teardown.
//
// Every member function runs with ep->mu held: consumer calls (post, connect, disconnect)
// take it, and so does the progress thread in on_events/on_tick (on_events first leaves
// the endpoint to a thread waiting for the lock, for one turn: util/ep_mutex.hpp).
// Posting transmits inline when the socket has room, so a send costs no thread hop; the
// progress thread continues partial transmits (EPOLLOUT) and does all receiving.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tcp/buffered_socket.hpp"
#include "tcp/engine.hpp"
#include "tcp/iov.hpp"
#include "tcp/net.hpp"
#include "tcp/rx_state.hpp"
#include "tcp/send_frames.hpp"
#include "tcp/slot_array.hpp"
#include "tcp/wire.hpp"
#include "util/objects.hpp"

namespace opendat::util {
class AccessHold;
}

namespace opendat::tcp {

class TcpTransport;

// The operands of an IB extension request (ep_ext.cpp).
struct ExtArgs {
    std::uint32_t immed = 0;     // WRITE_IMM: the immediate data
    std::uint64_t operand[2]{};  // ATOMIC_REQ: add or compare, swap
    bool cmp_swap = false;       // ATOMIC_REQ: compare-and-swap (else fetch-and-add)
    bool immed_op = false;       // WRITE_IMM (else ATOMIC_REQ)
};

// A posted send, RDMA write or RDMA read (or an IB extension request: write with
// immediate, atomic).
struct RequestWr {
    DAT_DTO_COOKIE cookie{};
    DAT_COMPLETION_FLAGS flags = DAT_COMPLETION_DEFAULT_FLAG;
    DAT_DTOS dto = DAT_DTO_SEND;
    DAT_DTO_COMPLETION_STATUS status = DAT_DTO_SUCCESS;
    FrameHeader hdr{};
    std::uint64_t hdr_ext[2]{};  // ATOMIC_REQ: the header's extension (the operands)
    std::uint32_t niov = 0;
    std::uint64_t total = 0;
    bool transmitted = false;
    bool need_reply = false;  // READ response, or ACK under delayed_ack
    bool replied = false;

    // Suppressed (or unsignalled, as the verbs provider takes it): no event when it
    // succeeds; a failure is always reported. One rule for reap and for the flush.
    static constexpr DAT_COMPLETION_FLAGS kQuiet = static_cast<DAT_COMPLETION_FLAGS>(
        DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG);
    static bool reports(DAT_COMPLETION_FLAGS flags, DAT_DTO_COMPLETION_STATUS st) noexcept {
        return st != DAT_DTO_SUCCESS || (flags & kQuiet) == 0;
    }
    bool reports(DAT_DTO_COMPLETION_STATUS st) const noexcept { return reports(flags, st); }
};

// A posted receive with its segments. A one-segment receive's fields and segment share the
// slot's first line (48 bytes): the post writes it and the placement reads it, one line
// where a separate segment array made two. The ring is not initialized (SlotArray):
// post_recv and take_srq_recv write every field before a reader looks, and the slots of
// an endpoint that never fills its ring stay untouched memory (datscale's 10,000).
struct alignas(64) RecvWr {
    DAT_DTO_COOKIE cookie;
    std::uint32_t niov;
    DAT_DTO_COMPLETION_STATUS status;
    std::uint64_t capacity;
    DAT_LMR_TRIPLET seg[kMaxIov];
};
static_assert(offsetof(RecvWr, seg) + sizeof(DAT_LMR_TRIPLET) <= 64);

// A frame the provider sends on its own behalf (ACK, NAK, READ_RESP, CONN_*).
struct CtrlFrame {
    FrameHeader hdr{};
    const void *data = nullptr;  // payload (hdr.length bytes)
    std::uint32_t rkey = 0;      // revocation barrier: READ_RESP from remote-readable memory
};

// Aligned to a cache line: which lines its hot fields share is then fixed by the layout,
// not left to where the allocator put it (16-byte aligned, a turnaround touched up to
// four lines more or fewer from one run to the next; docs/benchmarks.md).
class alignas(64) TcpEp final : public Pollable {
  public:
    TcpEp(TcpTransport *tr, util::Ep *ep);
    ~TcpEp() override;  // util frees the util::Ep after this (TcpTransport::ep_release)

    void init();  // allocates the rings from the EP attributes (may throw bad_alloc)
    // dat_ep_modify before a connection: new ring sizes from `a`, posted receives kept.
    DAT_RETURN reconfigure(const DAT_EP_ATTR &a) noexcept;
    // The caps and masks of freshly allocated request and receive rings (sq_slot).
    void set_ring_limits(std::size_t req, std::size_t recv) noexcept;

    void on_events(std::uint32_t events) noexcept override;
    void on_tick(std::chrono::steady_clock::time_point now) noexcept override;
    bool hot_capable() const noexcept override { return true; }
    HotRound poll_hot(bool may_wait) noexcept override;  // ep_cm.cpp
    bool leave_poll_set() noexcept override;             // ep_cm.cpp
    void rejoin_poll_set() noexcept override;
    void uncork() noexcept override;  // ep_cork.cpp
    void push_if_stale(std::chrono::milliseconds hold) noexcept override;

    // Consumer operations (ep->mu held).
    DAT_RETURN connect(const sockaddr *remote, DAT_CONN_QUAL qual, DAT_TIMEOUT timeout_us,
                       DAT_COUNT pdata_len, const void *pdata) noexcept;
    // `request`: the peer's CONN_REQ header (what it speaks).
    DAT_RETURN accept(Fd fd, const sockaddr_storage &peer, const FrameHeader &request,
                      DAT_COUNT pdata_len, const void *pdata) noexcept;
    DAT_RETURN disconnect(DAT_CLOSE_FLAGS flags) noexcept;
    // `dto` may be one of the IB extension DTOs (DAT_IB_DTO_RDMA_WRITE_IMMED,
    // DAT_IB_DTO_FETCH_ADD, DAT_IB_DTO_CMP_SWAP); `x` then carries their operands.
    DAT_RETURN post_request(DAT_DTOS dto, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
                            DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                            DAT_COMPLETION_FLAGS flags, const ExtArgs *x = nullptr) noexcept;
    // A plain one-segment SEND with nothing else to do, in one step (ep_tx.cpp). False:
    // nothing done, post_request takes it.
    bool send_now(const DAT_LMR_TRIPLET &seg, DAT_DTO_COOKIE cookie,
                  DAT_COMPLETION_FLAGS flags) noexcept;
    DAT_RETURN post_recv(DAT_COUNT n, const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie) noexcept;
    void idle(bool *recv_idle, bool *req_idle) const noexcept;
    void destroy() noexcept;  // ep_free: drop the connection, no events
    // Shared receive queue (ep_srq.cpp). srq_ready: the SRQ got a receive this endpoint
    // may be waiting for (takes ep->mu itself). recv_info: dat_ep_recv_query (ep->mu held).
    void srq_ready() noexcept;
    void recv_info(DAT_COUNT *nbufs, DAT_COUNT *span) const noexcept;

    util::Ep *const ep;

  private:
    enum class Phase { Idle, RetryWait, Connecting, AwaitAccept, Connected, Closing, Closed };
    // Where a frame comes from: the control ring, the request ring, or our DISC.
    enum class TxSrc { None, Ctrl, Request, Disc };
    enum class Step { Continue, Stop, Failed };

    // Transmit side (ep_tx.cpp).
    // `*budget`: what is left to send in this call into the endpoint (kTxBudget for a
    // fresh one); an event handler shares one between its receive and transmit sides.
    void tx_progress(std::uint64_t *budget) noexcept;
    void tx_progress() noexcept {
        std::uint64_t budget = kTxBudget;
        tx_progress(&budget);
    }
    bool send_queued(std::uint64_t *budget) noexcept;
    bool next_frame(bool traced = false) noexcept;
    void frame_sent() noexcept;
    // The frame next_frame() would pick once everything before the control-ring counter
    // `ctrl` and the request-ring counter `*req` is sent (it moves *req past requests that
    // need no sending).
    TxSrc pick_frame(std::uint64_t ctrl, std::uint64_t *req) const noexcept;
    // Appends a frame's bytes (header, then payload) to `out`.
    template <int N>
    void describe_frame(TxSrc src, std::uint64_t idx, IovCursor<N> *out, bool trace) noexcept;
    // Frames queued behind the one under way, gathered into the same sendmsg (ep_tx.cpp).
    struct TxBatch;
    void gather_batch(TxBatch *b) noexcept;
    // The counter of the frame under way in its ring.
    std::uint64_t tx_index() const noexcept { return tx_src_ == TxSrc::Ctrl ? ctrl_head_ : sq_tx_; }
    bool queue_ctrl(const FrameHeader &hdr, const void *data) noexcept;
    bool defer_tx() noexcept;    // this post joins a burst: EPOLLOUT sends it (ep_tx.cpp)
    bool send_alone() noexcept;  // the post's frame, alone and small, straight out (ep_tx.cpp)
    // Write, then notify (ep_cork.cpp). cork_write: send_alone's RDMA write `w` waits in the
    // socket (MSG_MORE) for the post the history expects. note_write: a write was posted.
    // follow_write: the next post after one (write_last_), which sends a held write along;
    // `notifies`: it is not another RDMA write.
    bool cork_write(const RequestWr &w) noexcept;
    void note_write() noexcept;
    void follow_write(bool notifies) noexcept;
    void cork_missed(const char *how) noexcept;
    void push_held(const char *how) noexcept;  // ep->mu held: the held write goes now
    void cork_failed() noexcept;
    void drop_cork() noexcept;  // the stream ends (reset_stream)
    void rest_under_way(std::size_t sent) noexcept;
    void send_now_rest(const DAT_LMR_TRIPLET &s, DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                       const FrameHeader &h, std::size_t sent) noexcept;
    bool ctrl_full() const noexcept { return ctrl_tail_ - ctrl_head_ == ctrl_.size(); }
    // Nothing to transmit: no frame under way or queued, no DISC due. A polled round
    // that only received (every round of a ping-pong) then skips the transmit round and
    // its frame selection (a request failed by its local checks still counts as queued).
    bool tx_idle() const noexcept {
        return tx_src_ == TxSrc::None && ctrl_head_ == ctrl_tail_ && sq_tx_ == sq_tail_ &&
               !disc_due();
    }
    void reap() noexcept;
    bool leave_to_waiter() noexcept;  // a round gives a waiting thread its turn (ep_cm.cpp)
    void half_close() noexcept;
    // Our DISC is still to go (never after close_after_ctrl_: its last control frame
    // half-closes the socket).
    bool disc_due() const noexcept { return disc_wanted_ && !disc_sent_ && !close_after_ctrl_; }
    bool fence_holds_at(std::uint64_t req) const noexcept;  // before request `req` goes

    // Receive side (ep_rx.cpp): a round, then what it queued to answer is sent.
    // Bytes received per round before yielding to other sockets (level-triggered epoll
    // brings us back).
    static constexpr std::uint64_t kRxBudget = 8u << 20;
    void rx_progress(std::uint64_t *tx_budget) noexcept;  // its answers leave within it
    // The same, once the round began (in_.begin_round).
    void rx_continue(std::uint64_t *tx_budget) noexcept;
    void rx_progress() noexcept {
        std::uint64_t budget = kTxBudget;
        rx_progress(&budget);
    }
    void rx_round() noexcept;
    // Ends the connection from the receive side: the round's answers go out first.
    void rx_teardown(DAT_EVENT_NUMBER event) noexcept;
    void rx_stream_ended(int err) noexcept;
    // How a connection that fails from the receive side ends: a connect still waiting for
    // its answer (AwaitAccept) was never made, so a listener that closes or answers
    // garbage is a non-peer reject; anything later is a broken connection.
    DAT_EVENT_NUMBER failure_event() const noexcept {
        return phase_ == Phase::AwaitAccept ? DAT_CONNECTION_EVENT_NON_PEER_REJECTED
                                            : DAT_CONNECTION_EVENT_BROKEN;
    }
    void peer_ended_while_blocked() noexcept;
    // Receives completed, answers sent and requests completed so far: moves whenever a wait
    // of the receive side (a receive, an SRQ's, room for answers) has ended.
    std::uint64_t progress_mark() const noexcept { return rq_head_ + ctrl_head_ + sq_head_; }
    // What holds for every frame of the agreed wire (rx_header, rx_fast_send): the magic,
    // the version, flags and op that version and its capabilities define. Until the
    // handshake completes, wire_ is version 1: the handshake's framing.
    bool header_valid(const FrameHeader &h) const noexcept {
        return h.magic == kWireMagic && h.version == wire_.version &&
               flags_allowed(h.op, h.flags, wire_.caps) && op_allowed(h.op, wire_.caps);
    }
    bool rx_fast_send() noexcept;  // a whole plain SEND, staged, in one step
    bool rx_header() noexcept;
    Step rx_dispatch() noexcept;
    Step rx_payload_done() noexcept;
    Step on_send_frame() noexcept;
    bool take_srq_recv() noexcept;  // ep_srq.cpp
    // n receives this endpoint took from its SRQ completed. The test is inline: every
    // receive passes it, and without an SRQ a call out of the hot block was one more code
    // page to touch per message (tools/footprint.py).
    void srq_recvs_done(std::uint64_t n) noexcept {
        if (ep->srq != nullptr && n > 0) srq_completed(n);
    }
    void srq_completed(std::uint64_t n) noexcept;
    Step on_write_frame() noexcept;
    // An RDMA write's header (plain or with immediate): its target range checked before a
    // single payload byte is read, then the payload goes straight there.
    Step expect_remote_write(RxState::Done done) noexcept;
    Step on_read_req() noexcept;
    Step on_read_resp() noexcept;
    Step on_reply(bool nak) noexcept;
    // IB extensions (ep_ext.cpp).
    bool ext_request(RequestWr &w, const ExtArgs &x) noexcept;
    Step on_write_imm_frame() noexcept;
    Step on_atomic_req() noexcept;
    Step on_atomic_resp() noexcept;
    void write_imm_placed() noexcept;
    // Whether the message now received (SEND or WRITE_IMM) ends a solicited-only wait: its
    // sender marked it, or could not (a peer without kCapSolicited).
    bool rx_solicited() const noexcept {
        return (rx_.hdr.flags & kFlagSolicited) != 0 || (wire_.caps & kCapSolicited) == 0;
    }
    void post_request_completion(const RequestWr &w, DAT_DTO_COMPLETION_STATUS st) noexcept;
    // Its event (a DTO or an IB extension completion), for reap()'s batch.
    DAT_EVENT request_completion(const RequestWr &w, DAT_DTO_COMPLETION_STATUS st) noexcept;
    Step remote_violation(DAT_DTO_COMPLETION_STATUS status) noexcept;
    RequestWr *find_wr(std::uint32_t seq, std::uint64_t *counter) noexcept;

    // Revocation barrier (ep_access.cpp, util/access_guard.hpp).
    bool rx_target_alive(const util::AccessHold &h) noexcept;  // fills the check caches
    // Whether a frame (its control-ring or request-ring counter) reads registered memory,
    // and, when it does, whether that memory is still exposed.
    bool needs_hold(TxSrc src, std::uint64_t idx) const noexcept;
    bool source_alive(const util::AccessHold &h, TxSrc src, std::uint64_t idx) noexcept;
    void access_revoked(bool receiving) noexcept;
    // Limits per peer: close and drain deadlines (ep_deadline.cpp).
    void arm_close_deadline(bool after_violation) noexcept;
    bool close_deadline_tick(std::chrono::steady_clock::time_point now) noexcept;

    // Connection management (ep_cm.cpp).
    DAT_RETURN start_attempt() noexcept;
    void finish_connect() noexcept;
    void refused() noexcept;
    void protocol_error(const char *why) noexcept;
    // Every receive posted (or taken from the SRQ) ends: nothing more is read into it.
    void flush_recvs(bool post_events) noexcept;
    void teardown(DAT_EVENT_NUMBER event, bool post_events, DAT_COUNT pdata_len = 0,
                  const void *pdata = nullptr) noexcept;
    // Registers the socket in epoll for what the endpoint waits for (update_poll_full,
    // ep_tx.cpp). Inline for the case a polled connection's every round ends in: out of
    // the set and only reading, which the full computation would leave as it is (some 30
    // instructions on 5 lines of code, once per turnaround).
    void update_poll() noexcept {
        if (detached_ && rx_.reading() && tx_idle() && phase_ != Phase::Connecting) return;
        update_poll_full();
    }
    void update_poll_full() noexcept;
    void reset_stream() noexcept;
    void send_disc_now() noexcept;
    // A data-phase header in the connection's agreed wire version.
    FrameHeader frame(Op op, std::uint32_t length, std::uint32_t seq = 0) const noexcept {
        return make_frame(wire_.version, op, length, seq);
    }

    TcpTransport *const tr_;
    Fd fd_;
    Phase phase_ = Phase::Idle;
    bool dead_ = false;
    bool registered_ = false;  // fd_ is in the engine's epoll set
    // The last request posted was an RDMA write (ep_cork.cpp): the next post looks at how
    // soon it came. Beside dead_, which send_now reads first: its test costs no line.
    bool write_last_ = false;
    std::uint32_t armed_ = 0;  // the events it is registered for
    // fd_ left the set while a consumer polls it directly (Engine::detach_hot); it stays
    // out while it only needs reading (kReadEvents), and goes back for anything else.
    bool detached_ = false;
    static constexpr std::uint32_t kReadEvents = EPOLLIN | EPOLLRDHUP;
    // fd_ is in no epoll set, and is not out on purpose either (a new socket, or none).
    void forget_registration() noexcept {
        registered_ = false;
        detached_ = false;
        armed_ = 0;
    }
    bool ticking_ = false;
    bool answer_limited_ = false;  // deadline_ is DAT_TCP_CONNECT_ANSWER_MS, not the caller's
    // Turns between the engine's rounds and threads waiting for the endpoint's lock
    // (util/ep_mutex.hpp); under the engine's dispatch lock, as on_events and poll_hot are.
    util::EpTurns turns_;
    std::chrono::steady_clock::time_point deadline_{};     // connect timeout (max() = none)
    std::chrono::steady_clock::time_point retry_until_{};  // refused connects retried until then
    std::chrono::steady_clock::time_point next_attempt_{};
    // After the peer's end while blocked (peer_ended_while_blocked): the work done when the
    // deadline was last armed (progress_mark); work done since renews it (on_tick).
    std::uint64_t fin_mark_ = 0;
    sockaddr_storage dst_{};  // where connect() goes

    // Request ring: counters grow forever; slot = sq_slot(counter).
    std::vector<RequestWr> sq_;
    SlotArray<DAT_LMR_TRIPLET> sq_iov_;  // kMaxIov per slot
    std::uint64_t sq_head_ = 0;          // oldest not yet completed
    std::uint64_t sq_tx_ = 0;            // next to transmit
    std::uint64_t tx_sent_ = 0;          // bytes the socket took (poll_hot's "did anything")
    std::uint64_t sq_tail_ = 0;          // next free
    // Receive ring. An endpoint created with an SRQ has one slot: the receive it took from
    // the SRQ for the message now arriving (ep_srq.cpp).
    SlotArray<RecvWr> rq_;
    std::uint64_t rq_head_ = 0, rq_tail_ = 0;
    // The ring slot of request or receive counter c. The rings are allocated a power of
    // two long, so that this is a mask, not a division: about a dozen slot lookups on a
    // ping-pong's turnaround, each a 64-bit division of some 15 cycles before. The caps
    // are what the attributes allow (max_request_dtos, max_recv_dtos; 1 with an SRQ).
    std::size_t sq_slot(std::uint64_t c) const noexcept { return c & sq_mask_; }
    std::size_t rq_slot(std::uint64_t c) const noexcept { return c & rq_mask_; }
    std::size_t sq_cap_ = 0, rq_cap_ = 0;
    std::size_t sq_mask_ = 0, rq_mask_ = 0;  // ring length - 1
    // The last local IOV each kind of post passed (util/memory.hpp): a ping-pong's posts
    // reuse their buffers, and skip the key table's lock and lookup.
    util::LocalCheckCache recv_check_, request_check_;
    // Control ring.
    std::vector<CtrlFrame> ctrl_;
    std::uint64_t ctrl_head_ = 0, ctrl_tail_ = 0;

    // Frame being transmitted: where it comes from, and its bytes not yet sent.
    TxSrc tx_src_ = TxSrc::None;
    IovCursor<kMaxIov + 1> tx_frame_;  // header + payload segments
    bool disc_wanted_ = false;         // graceful disconnect: DISC after everything queued
    bool disc_sent_ = false;
    // A NAK is queued (or rx_teardown is ending the connection): nothing of ours after
    // the control frames; the last one half-closes the socket.
    bool close_after_ctrl_ = false;
    // The connection event once the answers to a peer whose end was read have left
    // (rx_teardown).
    DAT_EVENT_NUMBER end_event_ = DAT_CONNECTION_EVENT_DISCONNECTED;
    // The event a connection that ends now reports: the peer's end, once read, outranks
    // what we see of the socket afterwards (a peer that sent DISC and then reset still
    // disconnected).
    DAT_EVENT_NUMBER ended_or(DAT_EVENT_NUMBER otherwise) const noexcept {
        return rx_.ended ? end_event_ : otherwise;
    }
    // When the last post that could have been deferred returned (defer_tx): a post closer
    // than the engine's burst_gap to it is part of a burst (burst_gap.hpp: a few system
    // calls, far below any round trip over TCP, above a consumer's own loop). Posts that
    // cannot be deferred (the consumer is not behind: a ping-pong) read no clock;
    // `stamp_post_` says the current post read it.
    static constexpr std::uint64_t kDeferMax = 8192;  // payload bytes: larger frames go at once
    // Bytes one transmit call (tx_progress) sends before it lets go of the endpoint: a peer
    // that asks for huge RDMA reads and takes the answers at once would otherwise keep the
    // endpoint's lock (its application's every call) and the progress thread (every other
    // connection of the IA) for the whole answer. About 1 MiB, a few hundred microseconds
    // of copying: 8 MiB let a small read on another connection wait 19-36 ms of a 64 MiB
    // answer stream, 1 MiB 2-6 ms, and large messages moved no slower (docs/benchmarks.md).
    // The 4 KiB over it let a 1 MiB message leave with its header in one call: an exact
    // 1 MiB left a header's worth of each to a second round, through epoll.
    static constexpr std::uint64_t kTxBudget = (1u << 20) + 4096;
    std::chrono::steady_clock::time_point last_post_{};
    bool stamp_post_ = false;
    // Write, then notify (ep_cork.cpp): whether the last write waits in the socket for the
    // post that follows; the history that decides it: the writes in a row that a post
    // followed with no progress call in between, and the held writes that no post
    // followed in time (each doubles the run a hold needs; after kCorkMissesMax, this
    // endpoint never holds one).
    static constexpr std::uint8_t kCorkRun = 2;
    static constexpr std::uint8_t kCorkMissesMax = 4;
    static constexpr std::chrono::milliseconds kCorkLate{1};
    bool corked_ = false;
    std::uint8_t cork_run_ = 0;
    std::uint8_t cork_misses_ = 0;
    std::uint64_t write_polls_ = 0;                     // Engine::inline_polls() then
    std::chrono::steady_clock::time_point write_at_{};  // when the last write's post returned
    FrameHeader disc_hdr_{};
    // send_alone's flat copy of a small frame. A member, not a local: 512 bytes of stack
    // put every call below send_alone (the key re-check, send()) on stack lines that no
    // other call of a turnaround touches, each one more line to fetch after the system
    // call before (docs/benchmarks.md). Used under ep->mu only.
    unsigned char flat_[kFlatSendMax];

    // Wire terms: what this side offers (DAT_TCP_WIRE_VERSION), and what both agreed on
    // (version 1 framing until the handshake completes).
    WireTerms offer_;
    WireTerms wire_;
    // Receive side: the frame state machine's position, and the stream it reads.
    RxState rx_;
    BufferedSocket in_;

    unsigned char pdata_out_[util::kMaxPrivateData]{};
    unsigned char pdata_in_[util::kMaxPrivateData]{};
};

}  // namespace opendat::tcp

#include "fault_stream.hpp"

#include <dat2/dat_trace.h>

#include <arpa/inet.h>
#include <time.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

namespace faults {

using dattest::Buffer;
using dattest::Node;

namespace {

// Message header (at the start of a send or write of at least kHeader bytes).
constexpr std::uint32_t kMsgMagic = 0x4d544c46;  // "FLTM"
struct MsgHeader {
    std::uint32_t magic, seq, size, pad;
    std::uint64_t sum;  // FNV-1a of the bytes after the header
};
constexpr std::size_t kHeader = sizeof(MsgHeader);
static_assert(kHeader == 24);

// Control messages: notify, credit, END, DONE.
constexpr std::uint32_t kNotify = 0x5946544e;  // "NTFY"
constexpr std::uint32_t kCredit = 0x54445243;  // "CRDT"
constexpr std::uint32_t kEnd = 0x21444e45;     // "END!"
constexpr std::uint32_t kDone = 0x454e4f44;    // "DONE"
struct Control {
    std::uint32_t magic = 0, seq = 0, a = 0, b = 0;
    std::uint64_t c = 0, d = 0;
};
static_assert(sizeof(Control) == 32);

// The target's memory, announced to the initiator as the accept's private data.
struct Layout {
    std::uint64_t win_addr = 0, win_slot_len = 0, src_addr = 0;
    std::uint32_t win_rkey = 0, src_rkey = 0;
};

constexpr int kRecvSlots = 16;   // target: receives posted
constexpr int kWindowSlots = 4;  // target: RDMA write slots (writes in flight per credit)
constexpr int kDataSlots = 8;    // initiator: send/write sources in flight
constexpr int kReadSlots = 4;    // initiator: RDMA reads in flight (max_rdma_read_out is 8)
constexpr int kSmallSlots = 64;  // control messages in flight
constexpr int kCreditRecvs = 32;
constexpr std::size_t kSmall = 64;
constexpr std::size_t kGuard = 64;       // bytes after a read destination that must stay
constexpr unsigned char kPoison = 0xA5;  // ... as poisoned before the read
constexpr std::uint32_t kSourcePad = 4096;
constexpr DAT_TIMEOUT kTick = 200'000;  // µs between looks at the connection EVD
constexpr DAT_TIMEOUT kEventWait = 10'000'000;

enum Kind : std::uint64_t {
    kRecv = 1,
    kControlSend,
    kDataSend,
    kWrite,
    kNotifySend,
    kRead,
    kEndSend
};
DAT_UINT64 cookie(Kind k, std::uint64_t slot, std::uint64_t index) {
    return (static_cast<std::uint64_t>(k) << 56) | (slot << 40) | index;
}
Kind kind_of(DAT_UINT64 c) {
    return static_cast<Kind>(c >> 56);
}
int slot_of(DAT_UINT64 c) {
    return static_cast<int>((c >> 40) & 0xffff);
}
std::uint32_t index_of(DAT_UINT64 c) {
    return static_cast<std::uint32_t>(c);
}

std::uint64_t mix(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
std::uint64_t message_key(std::uint64_t seed, std::uint32_t seq) {
    return mix(seed * 0x100000001B3ull + seq + 1);
}
std::uint64_t source_key(std::uint64_t seed) {
    return mix(seed ^ 0x5EAD5EAD5EAD5EADull);
}

// Byte `pos` of the stream named by `key`: position-addressable, so a read of any range of
// the source can be checked.
void fill_at(std::uint64_t key, std::uint64_t pos, unsigned char *out, std::size_t n) {
    while (n > 0) {
        std::uint64_t w = mix(key + pos / 8);
        for (unsigned b = pos % 8; b < 8 && n > 0; ++b, --n, ++pos)
            *out++ = static_cast<unsigned char>(w >> (8 * b));
    }
}

std::uint64_t fnv(const unsigned char *p, std::size_t n) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

void make_message(std::uint64_t seed, std::uint32_t seq, std::uint32_t size, unsigned char *out) {
    fill_at(message_key(seed, seq), 0, out, size);
    if (size < kHeader) return;
    MsgHeader h{kMsgMagic, seq, size, 0, fnv(out + kHeader, size - kHeader)};
    std::memcpy(out, &h, sizeof h);
}

// Where `got` first differs from `want` (n if it does not).
std::size_t first_difference(const unsigned char *got, const unsigned char *want, std::size_t n) {
    if (std::memcmp(got, want, n) == 0) return n;
    std::size_t i = 0;
    while (got[i] == want[i]) ++i;
    return i;
}

// What a received message of step `seq` is, when it is not what it should be.
std::string describe_message(const unsigned char *p, std::size_t len) {
    if (len < kHeader) return "a short message";
    MsgHeader h;
    std::memcpy(&h, p, sizeof h);
    char s[120];
    std::snprintf(s, sizeof s, "header magic %08x seq %u size %u, checksum %s", h.magic, h.seq,
                  h.size, fnv(p + kHeader, len - kHeader) == h.sum ? "good" : "bad");
    return s;
}

DAT_RETURN set_delayed_ack(DAT_EP_HANDLE ep, bool on) {
    DAT_NAMED_ATTR na{DAT_EP_ATTR_DELAYED_ACK, on ? "true" : "false"};
    DAT_EP_PARAM p{};
    p.ep_attr.ep_provider_specific_count = 1;
    p.ep_attr.ep_provider_specific = &na;
    return dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, &p);
}

// A pool of fixed-size slots in one registered buffer.
struct Slots {
    Buffer buf;
    std::size_t len = 0;
    std::vector<int> free;
    DAT_RETURN reg(Node &n, int count, std::size_t slot_len,
                   DAT_MEM_PRIV_FLAGS priv = DAT_MEM_PRIV_ALL_FLAG) {
        len = slot_len;
        for (int i = count - 1; i >= 0; --i) free.push_back(i);
        return n.reg(&buf, static_cast<std::size_t>(count) * slot_len, priv);
    }
    unsigned char *at(int i) { return buf.mem.data() + static_cast<std::size_t>(i) * len; }
    DAT_LMR_TRIPLET iov(int i, std::size_t n) const {
        return buf.iov(static_cast<std::size_t>(i) * len, n);
    }
    int take() {
        if (free.empty()) return -1;
        int i = free.back();
        free.pop_back();
        return i;
    }
    void give(int i) { free.push_back(i); }
};

// The connection EVD, looked at without waiting: the first event other than ESTABLISHED
// is recorded as the end of the connection.
bool poll_connection(Node &n, SideReport *rep) {
    DAT_EVENT ev;
    while (dat_evd_dequeue(n.conn_evd, &ev) == DAT_SUCCESS) {
        if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) continue;
        if (rep->end_event == 0) {
            rep->end_event = static_cast<std::int32_t>(ev.event_number);
            rep->end_ns = mono_ns();
        }
    }
    return rep->end_event != 0;
}

// A post refused on an endpoint that is no longer connected is the break showing, not a
// failure of its own (the connection event may still be on its way).
bool still_connected(Node &n) {
    DAT_EP_STATE st = DAT_EP_STATE_UNCONNECTED;
    dat_ep_get_status(n.ep, &st, nullptr, nullptr);
    return st == DAT_EP_STATE_CONNECTED;
}

void wait_connection_end(Node &n, SideReport *rep) {
    std::int64_t until = mono_ns() + static_cast<std::int64_t>(kEventWait) * 1000;
    while (!poll_connection(n, rep) && mono_ns() < until) {
        DAT_EVENT ev;
        DAT_COUNT more = 0;
        if (dat_evd_wait(n.conn_evd, kTick, 1, &ev, &more) == DAT_SUCCESS &&
            ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED && rep->end_event == 0) {
            rep->end_event = static_cast<std::int32_t>(ev.event_number);
            rep->end_ns = mono_ns();
        }
    }
}

}  // namespace

void SideReport::fail(const char *fmt, ...) {
    if (status != 0) return;  // the first failure is the one that explains the rest
    status = 1;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
}

std::int64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

const char *event_name(std::int32_t ev) {
    switch (ev) {
        case 0:
            return "none";
        case DAT_CONNECTION_EVENT_ESTABLISHED:
            return "ESTABLISHED";
        case DAT_CONNECTION_EVENT_DISCONNECTED:
            return "DISCONNECTED";
        case DAT_CONNECTION_EVENT_BROKEN:
            return "BROKEN";
        case DAT_CONNECTION_EVENT_TIMED_OUT:
            return "TIMED_OUT";
        case DAT_CONNECTION_EVENT_PEER_REJECTED:
            return "PEER_REJECTED";
        case DAT_CONNECTION_EVENT_NON_PEER_REJECTED:
            return "NON_PEER_REJECTED";
        case DAT_CONNECTION_EVENT_UNREACHABLE:
            return "UNREACHABLE";
        default:
            return "other";
    }
}

const char *dto_status_name(std::uint32_t status) {
    switch (static_cast<DAT_DTO_COMPLETION_STATUS>(status)) {
        case DAT_DTO_SUCCESS:
            return "SUCCESS";
        case DAT_DTO_ERR_FLUSHED:
            return "FLUSHED";
        case DAT_DTO_ERR_LOCAL_LENGTH:
            return "LOCAL_LENGTH";
        case DAT_DTO_ERR_LOCAL_PROTECTION:
            return "LOCAL_PROTECTION";
        case DAT_DTO_ERR_REMOTE_ACCESS:
            return "REMOTE_ACCESS";
        case DAT_DTO_ERR_TRANSPORT:
            return "TRANSPORT";
        case DAT_DTO_ERR_RECEIVER_NOT_READY:
            return "RECEIVER_NOT_READY";
        default:
            return "other";
    }
}

std::vector<Step> schedule(const StreamPlan &plan) {
    std::mt19937_64 rng(plan.seed);
    std::vector<Step> steps;
    steps.reserve(static_cast<std::size_t>(plan.ops));
    int max_bits = 0;
    while ((1u << (max_bits + 1)) <= plan.max_size && max_bits < 31) ++max_bits;
    for (int i = 0; i < plan.ops; ++i) {
        Step s{};
        auto r = rng() % 10;
        s.op = r < 4 ? Op::Send : r < 7 ? Op::Write : Op::Read;
        // Log-uniform: as many tiny messages as large ones; the largest is max_size.
        int bits = static_cast<int>(rng() % static_cast<unsigned>(max_bits + 1));
        std::uint64_t lo = 1ull << bits;
        std::uint64_t size = lo + rng() % lo;
        if (i % 37 == 5) size = plan.max_size;
        size = std::max<std::uint64_t>(size, plan.min_size);
        s.size = static_cast<std::uint32_t>(std::min<std::uint64_t>(size, plan.max_size));
        s.offset = static_cast<std::uint32_t>(rng() % kSourcePad);
        steps.push_back(s);
    }
    return steps;
}

// ---------------------------------------------------------------------------------------
// Target

struct Target::Impl {
    Impl(const StreamPlan &p, SideReport *r) : plan(p), rep(r) {}
    StreamPlan plan;
    SideReport *rep;
    std::vector<Step> steps;
    std::vector<std::uint32_t> write_steps;  // schedule index of the k-th write
    std::uint32_t sends = 0, reads = 0;
    Node n;
    Slots recv, window, small;
    Buffer source;
    std::vector<unsigned char> scratch;
    std::function<void()> established;
    std::function<void()> progressed;  // once, when msgs_verified reaches progress_at
    std::uint32_t progress_at = 0;

    void verified_one() {
        ++rep->msgs_verified;
        if (progressed && rep->msgs_verified == progress_at) {
            auto f = std::move(progressed);
            progressed = nullptr;
            f();
        }
    }

    int recv_posted = 0, sends_out = 0;
    std::size_t next = 0;  // the schedule step the next message belongs to
    std::uint32_t writes_seen = 0;
    bool end_seen = false, ended = false;

    bool open(const char *ia) {
        steps = schedule(plan);
        for (std::size_t i = 0; i < steps.size(); ++i) {
            if (steps[i].op == Op::Write) write_steps.push_back(static_cast<std::uint32_t>(i));
            if (steps[i].op == Op::Send) ++sends;
            if (steps[i].op == Op::Read) ++reads;
        }
        scratch.resize(plan.max_size);
        DAT_RETURN rc = n.open(ia);
        if (rc == DAT_SUCCESS)
            rc = dat_ep_create(n.ia, n.pz, n.req_evd, n.req_evd, n.conn_evd, nullptr, &n.ep);
        if (rc == DAT_SUCCESS && plan.delayed_ack) rc = set_delayed_ack(n.ep, true);
        if (rc == DAT_SUCCESS)
            rc = recv.reg(n, kRecvSlots, std::max<std::size_t>(plan.max_size, kSmall));
        if (rc == DAT_SUCCESS) rc = window.reg(n, kWindowSlots, plan.max_size);
        if (rc == DAT_SUCCESS) rc = small.reg(n, kSmallSlots, kSmall);
        if (rc == DAT_SUCCESS) rc = n.reg(&source, plan.max_size + kSourcePad);
        if (rc != DAT_SUCCESS) {
            rep->fail("target: setting up %s failed: 0x%x", ia, rc);
            return false;
        }
        fill_at(source_key(plan.seed), 0, source.mem.data(), source.mem.size());
        return true;
    }

    bool post_recv(int slot) {
        DAT_LMR_TRIPLET iov = recv.iov(slot, recv.len);
        DAT_DTO_COOKIE ck;
        ck.as_64 = cookie(kRecv, static_cast<std::uint64_t>(slot), 0);
        DAT_RETURN rc = dat_ep_post_recv(n.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG);
        if (rc != DAT_SUCCESS) {
            if (!ended && still_connected(n)) rep->fail("target: post_recv failed: 0x%x", rc);
            return false;
        }
        ++recv_posted;
        return true;
    }

    bool send_control(const Control &c) {
        int s = small.take();
        if (s < 0) {
            rep->fail("target: no free control slot");
            return false;
        }
        std::memcpy(small.at(s), &c, sizeof c);
        DAT_LMR_TRIPLET iov = small.iov(s, sizeof c);
        DAT_DTO_COOKIE ck;
        ck.as_64 = cookie(kControlSend, static_cast<std::uint64_t>(s), c.magic == kDone ? 1 : 0);
        DAT_RETURN rc = dat_ep_post_send(n.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG);
        if (rc != DAT_SUCCESS) {
            small.give(s);
            if (!ended && still_connected(n))
                rep->fail("target: post_send of a control message failed: 0x%x", rc);
            ended = true;
            return false;
        }
        ++sends_out;
        return true;
    }

    // One message arrived, in slot `slot`: it must be the next one of the schedule.
    bool on_message(const unsigned char *p, std::size_t len) {
        while (next < steps.size() && steps[next].op == Op::Read) ++next;
        if (end_seen) {
            rep->fail("target: a message of %zu bytes after END (duplicate?)", len);
            return false;
        }
        if (next == steps.size()) {
            Control c;
            if (len != sizeof c) {
                rep->fail("target: expected END, got %zu bytes (%s)", len,
                          describe_message(p, len).c_str());
                return false;
            }
            std::memcpy(&c, p, sizeof c);
            if (c.magic != kEnd || c.seq != steps.size() || c.a != sends ||
                c.b != write_steps.size() || c.c != reads) {
                rep->fail("target: END says %u steps, %u sends, %u writes, %llu reads (magic %08x)",
                          c.seq, c.a, c.b, static_cast<unsigned long long>(c.c), c.magic);
                return false;
            }
            end_seen = true;
            Control d;
            d.magic = kDone;
            d.a = rep->msgs_verified;
            d.b = rep->writes_verified;
            d.c = rep->bytes_verified;
            return send_control(d);
        }
        const Step &st = steps[next];
        const auto seq = static_cast<std::uint32_t>(next);
        if (st.op == Op::Send) {
            if (len != st.size) {
                rep->fail("target: step %u: a send of %u bytes arrived as %zu bytes (%s)", seq,
                          st.size, len, describe_message(p, len).c_str());
                return false;
            }
            make_message(plan.seed, seq, st.size, scratch.data());
            std::size_t at = first_difference(p, scratch.data(), len);
            if (at != len) {
                rep->fail("target: step %u: send of %u bytes differs at byte %zu (%s)", seq,
                          st.size, at, describe_message(p, len).c_str());
                return false;
            }
            ++rep->sends_verified;
            verified_one();
            rep->bytes_verified += st.size;
            ++next;
            return true;
        }
        // A write's notify.
        Control c;
        if (len != sizeof c) {
            rep->fail("target: step %u: expected a write's notify, got %zu bytes (%s)", seq, len,
                      describe_message(p, len).c_str());
            return false;
        }
        std::memcpy(&c, p, sizeof c);
        const std::uint32_t slot = writes_seen % kWindowSlots;
        if (c.magic != kNotify || c.seq != seq || c.a != st.size || c.b != slot) {
            rep->fail(
                "target: step %u: notify says magic %08x step %u size %u slot %u, expected "
                "step %u size %u slot %u",
                seq, c.magic, c.seq, c.a, c.b, seq, st.size, slot);
            return false;
        }
        make_message(plan.seed, seq, st.size, scratch.data());
        const unsigned char *w = window.at(static_cast<int>(slot));
        std::size_t at = first_difference(w, scratch.data(), st.size);
        if (at != st.size || fnv(w, st.size) != c.c) {
            rep->fail(
                "target: step %u: RDMA write of %u bytes into slot %u differs at byte %zu (%s)",
                seq, st.size, slot, at, describe_message(w, st.size).c_str());
            return false;
        }
        ++writes_seen;
        ++rep->writes_verified;
        verified_one();
        rep->bytes_verified += st.size;
        ++next;
        Control credit;
        credit.magic = kCredit;
        credit.a = rep->writes_verified;
        credit.b = rep->msgs_verified;
        return send_control(credit);
    }

    // After a break: the writes the initiator may have seen complete but whose notify did not
    // arrive are still in their slots (a slot is reused only after its write was verified).
    void count_placed_writes() {
        std::uint32_t k = rep->writes_verified;
        while (k < write_steps.size() && k < rep->writes_verified + kWindowSlots) {
            const Step &st = steps[write_steps[k]];
            make_message(plan.seed, write_steps[k], st.size, scratch.data());
            if (std::memcmp(window.at(static_cast<int>(k % kWindowSlots)), scratch.data(),
                            st.size) != 0)
                break;
            ++k;
        }
        rep->writes_placed = k;
    }

    void serve() {
        DAT_EVENT ev;
        if (n.next(n.cr_evd, &ev, 20'000'000) != DAT_SUCCESS ||
            ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
            rep->fail("target: no connection request");
            return;
        }
        Layout lay;
        lay.win_addr = reinterpret_cast<std::uintptr_t>(window.at(0));
        lay.win_slot_len = window.len;
        lay.win_rkey = window.buf.rmr_ctx;
        lay.src_addr = reinterpret_cast<std::uintptr_t>(source.mem.data());
        lay.src_rkey = source.rmr_ctx;
        DAT_RETURN rc =
            dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, n.ep, sizeof lay, &lay);
        if (rc != DAT_SUCCESS || n.next(n.conn_evd, &ev, kEventWait) != DAT_SUCCESS ||
            ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
            rep->fail("target: accept failed (0x%x, event %s)", rc,
                      event_name(static_cast<std::int32_t>(ev.event_number)));
            return;
        }
        rep->start_ns = mono_ns();
        if (established) established();
        const std::int64_t deadline = rep->start_ns + std::int64_t{plan.run_ms} * 1'000'000;
        for (int i = 0; i < kRecvSlots; ++i)
            if (!post_recv(i)) return;
        while (!(ended && recv_posted == 0 && sends_out == 0)) {
            if (mono_ns() > deadline) {
                rep->fail(
                    "target: deadline passed (%zu of %zu steps verified, %d receives and "
                    "%d sends outstanding, event %s)",
                    next, steps.size(), recv_posted, sends_out, event_name(rep->end_event));
                break;
            }
            DAT_COUNT more = 0;
            rc = dat_evd_wait(n.req_evd, kTick, 1, &ev, &more);
            if (poll_connection(n, rep)) ended = true;
            if (rc != DAT_SUCCESS) continue;
            if (ev.event_number != DAT_DTO_COMPLETION_EVENT) {
                rep->fail("target: unexpected event 0x%x on the DTO EVD", ev.event_number);
                continue;
            }
            const DAT_DTO_COMPLETION_EVENT_DATA &d = ev.event_data.dto_completion_event_data;
            const DAT_UINT64 ck = d.user_cookie.as_64;
            if (kind_of(ck) == kControlSend) {
                --sends_out;
                small.give(slot_of(ck));
                if (d.status != DAT_DTO_SUCCESS) ended = true;
                continue;
            }
            --recv_posted;
            if (d.status != DAT_DTO_SUCCESS) {
                ended = true;
                continue;
            }
            const int slot = slot_of(ck);
            if (!on_message(recv.at(slot), d.transfered_length)) {
                // Stop here: the report says what was wrong.
                dat_ep_disconnect(n.ep, DAT_CLOSE_ABRUPT_FLAG);
                ended = true;
                continue;
            }
            if (!ended && !end_seen && !post_recv(slot)) ended = true;
        }
        wait_connection_end(n, rep);
        count_placed_writes();
        rep->finish_ns = mono_ns();
    }
};

Target::Target(const StreamPlan &plan, SideReport *rep) : impl_(new Impl(plan, rep)) {}
Target::~Target() {
    delete impl_;
}
bool Target::open(const char *ia) {
    return impl_->open(ia);
}
DAT_RETURN Target::listen(DAT_CONN_QUAL qual) {
    return dat_psp_create(impl_->n.ia, qual, impl_->n.cr_evd, DAT_PSP_CONSUMER_FLAG, &impl_->n.psp);
}
void Target::serve() {
    impl_->serve();
}
void Target::on_established(std::function<void()> f) {
    impl_->established = std::move(f);
}
void Target::on_verified(std::uint32_t n, std::function<void()> f) {
    impl_->progress_at = n;
    impl_->progressed = std::move(f);
}

// ---------------------------------------------------------------------------------------
// Initiator

struct Initiator::Impl {
    Impl(const StreamPlan &p, SideReport *r) : plan(p), rep(r) {}
    StreamPlan plan;
    SideReport *rep;
    std::vector<Step> steps;
    Node n;
    Slots data, reads, small, credits;
    Layout lay;
    std::vector<unsigned char> scratch;

    std::size_t next = 0;  // next step to post
    std::uint32_t writes_posted = 0, credit_writes = 0, sends_total = 0, writes_total = 0,
                  reads_total = 0;
    int credit_posted = 0;
    bool broken = false, end_posted = false, end_ok = false, done = false, disconnecting = false;

    bool open(const char *ia) {
        steps = schedule(plan);
        for (const Step &s : steps) {
            if (s.op == Op::Send) ++sends_total;
            if (s.op == Op::Write) ++writes_total;
            if (s.op == Op::Read) ++reads_total;
        }
        scratch.resize(plan.max_size);
        DAT_RETURN rc = n.open(ia);
        if (rc == DAT_SUCCESS)
            rc = dat_ep_create(n.ia, n.pz, n.req_evd, n.req_evd, n.conn_evd, nullptr, &n.ep);
        if (rc == DAT_SUCCESS && plan.delayed_ack) rc = set_delayed_ack(n.ep, true);
        if (rc == DAT_SUCCESS) rc = data.reg(n, kDataSlots, plan.max_size);
        if (rc == DAT_SUCCESS) rc = reads.reg(n, kReadSlots, plan.max_size + kGuard);
        if (rc == DAT_SUCCESS) rc = small.reg(n, kSmallSlots, kSmall);
        if (rc == DAT_SUCCESS) rc = credits.reg(n, kCreditRecvs, kSmall);
        if (rc != DAT_SUCCESS) {
            rep->fail("initiator: setting up %s failed: 0x%x", ia, rc);
            return false;
        }
        return true;
    }

    bool posted(DAT_RETURN rc, const char *what) {
        if (rc == DAT_SUCCESS) {
            ++rep->posted;
            return true;
        }
        // Posting on an endpoint that just broke is refused; anything else is a failure.
        if (!broken && !poll_connection(n, rep) && still_connected(n))
            rep->fail("initiator: step %zu: %s refused: 0x%x", next, what, rc);
        broken = true;
        return false;
    }

    bool post_credit_recv(int slot) {
        DAT_LMR_TRIPLET iov = credits.iov(slot, kSmall);
        DAT_DTO_COOKIE ck;
        ck.as_64 = cookie(kRecv, static_cast<std::uint64_t>(slot), 0);
        if (dat_ep_post_recv(n.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS)
            return false;
        ++credit_posted;
        return true;
    }

    bool post_small(const Control &c, Kind k, std::uint32_t index) {
        int s = small.take();
        if (s < 0) return false;
        std::memcpy(small.at(s), &c, sizeof c);
        DAT_LMR_TRIPLET iov = small.iov(s, sizeof c);
        DAT_DTO_COOKIE ck;
        ck.as_64 = cookie(k, static_cast<std::uint64_t>(s), index);
        if (!posted(dat_ep_post_send(n.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG), "send")) {
            small.give(s);
            return false;
        }
        return true;
    }

    // Posts the next step if its resources are free; false if it has to wait.
    bool post_next() {
        const Step &st = steps[next];
        const auto seq = static_cast<std::uint32_t>(next);
        DAT_DTO_COOKIE ck;
        switch (st.op) {
            case Op::Send: {
                int s = data.take();
                if (s < 0) return false;
                make_message(plan.seed, seq, st.size, data.at(s));
                DAT_LMR_TRIPLET iov = data.iov(s, st.size);
                ck.as_64 = cookie(kDataSend, static_cast<std::uint64_t>(s), seq);
                if (!posted(dat_ep_post_send(n.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG),
                            "send")) {
                    data.give(s);
                    return false;
                }
                break;
            }
            case Op::Write: {
                if (writes_posted - credit_writes >= kWindowSlots || small.free.empty())
                    return false;
                int s = data.take();
                if (s < 0) return false;
                const std::uint32_t slot = writes_posted % kWindowSlots;
                make_message(plan.seed, seq, st.size, data.at(s));
                DAT_LMR_TRIPLET iov = data.iov(s, st.size);
                DAT_RMR_TRIPLET r{};
                r.virtual_address = lay.win_addr + slot * lay.win_slot_len;
                r.segment_length = st.size;
                r.rmr_context = lay.win_rkey;
                ck.as_64 = cookie(kWrite, static_cast<std::uint64_t>(s), seq);
                if (!posted(
                        dat_ep_post_rdma_write(n.ep, 1, &iov, ck, &r, DAT_COMPLETION_DEFAULT_FLAG),
                        "RDMA write")) {
                    data.give(s);
                    return false;
                }
                Control c;
                c.magic = kNotify;
                c.seq = seq;
                c.a = st.size;
                c.b = slot;
                c.c = fnv(data.at(s), st.size);
                ++writes_posted;
                if (!post_small(c, kNotifySend, seq)) return false;
                break;
            }
            case Op::Read: {
                int s = reads.take();
                if (s < 0) return false;
                std::memset(reads.at(s), kPoison, st.size + kGuard);
                DAT_LMR_TRIPLET iov = reads.iov(s, st.size);
                DAT_RMR_TRIPLET r{};
                r.virtual_address = lay.src_addr + st.offset;
                r.segment_length = st.size;
                r.rmr_context = lay.src_rkey;
                ck.as_64 = cookie(kRead, static_cast<std::uint64_t>(s), seq);
                if (!posted(
                        dat_ep_post_rdma_read(n.ep, 1, &iov, ck, &r, DAT_COMPLETION_DEFAULT_FLAG),
                        "RDMA read")) {
                    reads.give(s);
                    return false;
                }
                break;
            }
        }
        ++next;
        return true;
    }

    void on_request_done(const DAT_DTO_COMPLETION_EVENT_DATA &d) {
        ++rep->completed;
        const DAT_UINT64 ck = d.user_cookie.as_64;
        const std::uint32_t seq = index_of(ck);
        const int slot = slot_of(ck);
        const bool ok = d.status == DAT_DTO_SUCCESS;
        if (!ok) {
            if (rep->failed++ == 0) rep->first_error = static_cast<std::uint32_t>(d.status);
            broken = true;
        }
        switch (kind_of(ck)) {
            case kDataSend:
                data.give(slot);
                if (ok) {
                    ++rep->sends_ok;
                    ++rep->msgs_ok;
                    rep->bytes_sent_ok += steps[seq].size;
                }
                break;
            case kWrite:
                data.give(slot);
                if (ok) {
                    ++rep->writes_ok;
                    rep->bytes_sent_ok += steps[seq].size;
                }
                break;
            case kNotifySend:
                small.give(slot);
                if (ok) ++rep->msgs_ok;
                break;
            case kEndSend:
                small.give(slot);
                end_ok = ok;
                break;
            case kRead: {
                const Step &st = steps[seq];
                if (ok) {
                    fill_at(source_key(plan.seed), st.offset, scratch.data(), st.size);
                    const unsigned char *p = reads.at(slot);
                    std::size_t at = first_difference(p, scratch.data(), st.size);
                    if (at != st.size)
                        rep->fail(
                            "initiator: step %u: RDMA read of %u bytes at source offset %u "
                            "completed with success but differs at byte %zu",
                            seq, st.size, st.offset, at);
                    for (std::size_t g = 0; g < kGuard; ++g)
                        if (p[st.size + g] != kPoison) {
                            rep->fail(
                                "initiator: step %u: RDMA read of %u bytes wrote past its "
                                "destination (guard byte %zu)",
                                seq, st.size, g);
                            break;
                        }
                    ++rep->reads_ok;
                    rep->bytes_read_ok += st.size;
                }
                reads.give(slot);
                break;
            }
            default:
                rep->fail("initiator: a completion with an unknown cookie %llx",
                          static_cast<unsigned long long>(ck));
        }
    }

    void on_credit(const DAT_DTO_COMPLETION_EVENT_DATA &d) {
        --credit_posted;
        if (d.status != DAT_DTO_SUCCESS) {
            if (!disconnecting) broken = true;
            return;
        }
        const int slot = slot_of(d.user_cookie.as_64);
        Control c;
        if (d.transfered_length != sizeof c) {
            rep->fail("initiator: a control message of %llu bytes",
                      static_cast<unsigned long long>(d.transfered_length));
            return;
        }
        std::memcpy(&c, credits.at(slot), sizeof c);
        if (c.magic == kCredit) {
            credit_writes = std::max(credit_writes, c.a);
        } else if (c.magic == kDone) {
            if (c.a != sends_total + writes_total || c.b != writes_total)
                rep->fail(
                    "initiator: DONE says %u messages and %u writes verified, expected %u and %u",
                    c.a, c.b, sends_total + writes_total, writes_total);
            done = true;
            return;
        } else {
            rep->fail("initiator: unknown control message %08x", c.magic);
            return;
        }
        if (!broken) post_credit_recv(slot);
    }

    void run(in_addr addr, DAT_CONN_QUAL qual) {
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_addr = addr;
        DAT_RETURN rc = dat_ep_connect(n.ep, reinterpret_cast<sockaddr *>(&sin), qual, kEventWait,
                                       0, nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
        DAT_EVENT ev;
        if (rc != DAT_SUCCESS || n.next(n.conn_evd, &ev, 20'000'000) != DAT_SUCCESS ||
            ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
            rep->fail("initiator: connect failed (0x%x, event %s)", rc,
                      event_name(static_cast<std::int32_t>(ev.event_number)));
            return;
        }
        const DAT_CONNECTION_EVENT_DATA &cd = ev.event_data.connect_event_data;
        if (cd.private_data_size != static_cast<DAT_COUNT>(sizeof lay) ||
            cd.private_data == nullptr) {
            rep->fail("initiator: the accept carried %d bytes of private data, expected %zu",
                      cd.private_data_size, sizeof lay);
            return;
        }
        std::memcpy(&lay, cd.private_data, sizeof lay);
        rep->start_ns = mono_ns();
        const std::int64_t deadline = rep->start_ns + std::int64_t{plan.run_ms} * 1'000'000;
        for (int i = 0; i < kCreditRecvs; ++i)
            if (!post_credit_recv(i)) {
                rep->fail("initiator: post_recv failed");
                return;
            }
        for (;;) {
            if (!broken && !disconnecting) {
                while (next < steps.size() && post_next()) {
                }
                if (next == steps.size() && !end_posted && !broken) {
                    Control c;
                    c.magic = kEnd;
                    c.seq = static_cast<std::uint32_t>(steps.size());
                    c.a = sends_total;
                    c.b = writes_total;
                    c.c = reads_total;
                    end_posted = post_small(c, kEndSend, c.seq);
                }
            }
            if (done && end_ok && !disconnecting && rep->completed == rep->posted) {
                disconnecting = true;
                if (dat_ep_disconnect(n.ep, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS)
                    rep->fail("initiator: graceful disconnect refused");
            }
            poll_connection(n, rep);
            if ((broken || disconnecting || rep->end_event != 0) && rep->completed == rep->posted &&
                credit_posted == 0) {
                // Everything has completed: what is left is the connection event.
                wait_connection_end(n, rep);
                if (rep->end_event == 0) rep->fail("initiator: no connection event after the end");
                break;
            }
            if (mono_ns() > deadline) {
                rep->fail(
                    "initiator: deadline passed (%zu of %zu steps posted, %u of %u requests "
                    "completed, event %s)",
                    next, steps.size(), rep->completed, rep->posted, event_name(rep->end_event));
                break;
            }
            DAT_COUNT more = 0;
            if (dat_evd_wait(n.req_evd, kTick, 1, &ev, &more) != DAT_SUCCESS) continue;
            if (ev.event_number != DAT_DTO_COMPLETION_EVENT) {
                rep->fail("initiator: unexpected event 0x%x on the DTO EVD", ev.event_number);
                continue;
            }
            const DAT_DTO_COMPLETION_EVENT_DATA &d = ev.event_data.dto_completion_event_data;
            if (kind_of(d.user_cookie.as_64) == kRecv)
                on_credit(d);
            else
                on_request_done(d);
        }
        rep->finish_ns = mono_ns();
    }
};

Initiator::Initiator(const StreamPlan &plan, SideReport *rep) : impl_(new Impl(plan, rep)) {}
Initiator::~Initiator() {
    delete impl_;
}
bool Initiator::open(const char *ia) {
    return impl_->open(ia);
}
void Initiator::run(in_addr addr, DAT_CONN_QUAL qual) {
    impl_->run(addr, qual);
}

}  // namespace faults

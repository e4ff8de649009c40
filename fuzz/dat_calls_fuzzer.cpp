// Fuzzer 3: random DAT call sequences through libdat2 and the tcp provider.
//
// Each input opens a loopback tcp IA, then its bytes drive up to kMaxCalls calls (create,
// free, query, modify, post, dequeue, ...) on a few slots per object kind, with random
// counts, lengths, flags and attributes; at the end the IA is closed, gracefully or
// abruptly, which must free whatever the sequence left. Nothing here sleeps or waits: every
// wait has timeout 0, no connection is made, so an input replays the same calls each time.
//
// Handles. By default a handle argument is a live object of the right kind, a live object
// of another kind (the provider checks the type), NULL, or, for an IA argument, a garbage
// value or an object handle (libdat2 looks IA handles up in its table). A freed handle is
// forgotten, never passed again. With OPENDAT_FUZZ_HOSTILE_HANDLES=1 in the environment
// the fuzzer also passes stale handles (freed earlier in the same input), handles of
// another open IA, the IA handle where an object is expected, and garbage pointers (to
// fuzz bytes, or any value): what the handle validation of issue 9 must refuse with
// DAT_INVALID_HANDLE. Until that lands, hostile mode finds those crashes by design.
#include <dat2/udat.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

char kIaName[] = "ofa-v2-tcp-lo";  // DAT_NAME_PTR is not const
constexpr int kMaxCalls = 64;
constexpr int kSlots = 4;
constexpr std::size_t kArenaSize = 64 * 1024;

// Memory the LMRs register and the posts name: static, so it outlives every object.
alignas(64) unsigned char g_arena[kArenaSize];

bool g_hostile = false;
DAT_IA_HANDLE g_anchor_ia = DAT_HANDLE_NULL;  // keeps the provider loaded between inputs
DAT_PZ_HANDLE g_anchor_pz = DAT_HANDLE_NULL;  // another IA's objects (hostile mode)
DAT_EVD_HANDLE g_anchor_evd = DAT_HANDLE_NULL;

// Reads the fuzz input front to back; past the end every read gives 0.
class Bytes {
  public:
    Bytes(const std::uint8_t *p, std::size_t n) : p_(p), n_(n) {}
    bool empty() const { return n_ == 0; }
    std::uint8_t u8() {
        if (n_ == 0) return 0;
        --n_;
        return *p_++;
    }
    std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
    std::uint32_t u32() { return u16() | (static_cast<std::uint32_t>(u16()) << 16); }
    std::uint64_t u64() { return u32() | (static_cast<std::uint64_t>(u32()) << 32); }
    bool flag() { return (u8() & 1) != 0; }
    // A count or length: mostly small, sometimes on a boundary, sometimes anything.
    std::int32_t count(std::int32_t small) {
        switch (u8() % 8) {
            case 0:
                return 0;
            case 1:
                return -1;
            case 2:
                return static_cast<std::int32_t>(u32());
            case 3:
                return small;
            default:
                return static_cast<std::int32_t>(u8() % (small + 1));
        }
    }
    const std::uint8_t *rest() const { return p_; }
    std::size_t rest_size() const { return n_; }

  private:
    const std::uint8_t *p_;
    std::size_t n_;
};

enum Kind { kPz, kEvd, kLmr, kRmr, kEp, kPsp, kKinds };

struct Lmr {
    DAT_LMR_CONTEXT lmr_ctx = 0;
    DAT_RMR_CONTEXT rmr_ctx = 0;
};

struct World {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    std::array<std::array<DAT_HANDLE, kSlots>, kKinds> live{};
    std::array<Lmr, kSlots> lmr{};
    std::array<DAT_RMR_CONTEXT, kSlots> rmr_ctx{};
    std::vector<DAT_HANDLE> stale;                     // hostile mode only
    alignas(16) std::array<std::uint8_t, 256> junk{};  // what garbage handles point at
};

DAT_HANDLE any_live(World &w, Bytes &in) {
    const auto &slots = w.live[in.u8() % kKinds];
    return slots[in.u8() % kSlots];
}

// A handle argument for an object of kind `k` (see the header comment).
DAT_HANDLE pick(World &w, Bytes &in, Kind k) {
    const std::uint8_t how = in.u8();
    switch (how % 16) {
        case 0:
            return DAT_HANDLE_NULL;
        case 1:
            return any_live(w, in);  // probably the wrong kind: the type check must say so
        default:
            break;
    }
    if (g_hostile && how % 16 >= 11) {
        switch (how % 16) {
            case 11:
                return w.ia;  // libdat2's IA handle (a table key) where an object is expected
            case 12:
                if (!w.stale.empty()) return w.stale[in.u8() % w.stale.size()];
                break;
            case 13:
                return k == kEvd ? g_anchor_evd : g_anchor_pz;  // another IA's object
            case 14:
                return static_cast<DAT_HANDLE>(w.junk.data() + in.u8() % 128);
            case 15:
                return reinterpret_cast<DAT_HANDLE>(static_cast<std::uintptr_t>(in.u64()));
        }
    }
    return w.live[k][in.u8() % kSlots];
}

DAT_IA_HANDLE pick_ia(World &w, Bytes &in) {
    switch (in.u8() % 8) {
        case 0:
            return DAT_HANDLE_NULL;
        case 1:
            return reinterpret_cast<DAT_IA_HANDLE>(static_cast<std::uintptr_t>(in.u32()));
        case 2:
            return any_live(w, in);  // an object handle is not an IA handle
        default:
            return w.ia;
    }
}

DAT_HANDLE *slot(World &w, Bytes &in, Kind k) {
    return &w.live[k][in.u8() % kSlots];
}

// Forgets a handle its free call accepted; hostile mode keeps it to pass again.
void freed(World &w, DAT_HANDLE *s, DAT_RETURN rc) {
    if (rc != DAT_SUCCESS) return;
    if (g_hostile) w.stale.push_back(*s);
    *s = DAT_HANDLE_NULL;
}

// Free a slot by its free call only if the handle is really in that slot: a handle picked
// from anywhere is passed to the free call only in hostile mode.
template <typename FreeFn>
void free_op(World &w, Bytes &in, Kind k, FreeFn fn) {
    DAT_HANDLE *s = slot(w, in, k);
    if (g_hostile && in.u8() % 4 == 0) {
        fn(pick(w, in, k));
        return;
    }
    freed(w, s, fn(*s));
}

DAT_LMR_TRIPLET triplet(World &w, Bytes &in) {
    DAT_LMR_TRIPLET t{};
    const Lmr &l = w.lmr[in.u8() % kSlots];
    t.lmr_context = in.flag() ? l.lmr_ctx : in.u32();
    const std::uint32_t off = in.u16() % kArenaSize;
    t.virtual_address = reinterpret_cast<std::uintptr_t>(g_arena + off);
    if (in.u8() % 8 == 0) t.virtual_address = in.u64();  // an address nobody registered
    t.segment_length =
        static_cast<DAT_SEG_LENGTH>(in.count(static_cast<std::int32_t>(kArenaSize - off)));
    return t;
}

DAT_RMR_TRIPLET rmr_triplet(World &w, Bytes &in) {
    DAT_RMR_TRIPLET t{};
    t.rmr_context = in.flag() ? w.lmr[in.u8() % kSlots].rmr_ctx : in.u32();
    if (in.flag()) t.rmr_context = w.rmr_ctx[in.u8() % kSlots];
    t.virtual_address =
        in.flag() ? reinterpret_cast<std::uintptr_t>(g_arena + in.u16() % kArenaSize) : in.u64();
    t.segment_length = static_cast<DAT_SEG_LENGTH>(in.count(4096));
    return t;
}

DAT_EP_ATTR ep_attr(Bytes &in) {
    DAT_EP_ATTR a{};
    a.service_type = in.flag() ? DAT_SERVICE_TYPE_RC : static_cast<DAT_SERVICE_TYPE>(in.u8());
    a.max_message_size = static_cast<DAT_SEG_LENGTH>(in.flag() ? in.u32() : 4096);
    a.max_rdma_size = static_cast<DAT_SEG_LENGTH>(in.flag() ? in.u32() : 4096);
    a.qos = static_cast<DAT_QOS>(in.u8() % 4);
    a.recv_completion_flags = static_cast<DAT_COMPLETION_FLAGS>(in.u8());
    a.request_completion_flags = static_cast<DAT_COMPLETION_FLAGS>(in.u8());
    a.max_recv_dtos = in.count(64);
    a.max_request_dtos = in.count(64);
    a.max_recv_iov = in.count(8);
    a.max_request_iov = in.count(8);
    a.max_rdma_read_in = in.count(8);
    a.max_rdma_read_out = in.count(8);
    a.max_rdma_read_iov = in.count(8);
    a.max_rdma_write_iov = in.count(8);
    return a;  // no transport/provider-specific arrays: their pointers would have to be real
}

constexpr DAT_EVD_FLAGS kEvdFlags[] = {
    DAT_EVD_SOFTWARE_FLAG, DAT_EVD_CR_FLAG,    DAT_EVD_DTO_FLAG,     DAT_EVD_CONNECTION_FLAG,
    DAT_EVD_RMR_BIND_FLAG, DAT_EVD_ASYNC_FLAG, DAT_EVD_DEFAULT_FLAG,
};

void one_call(World &w, Bytes &in) {
    DAT_RETURN rc = DAT_SUCCESS;
    switch (in.u8() % 28) {
        case 0: {
            DAT_HANDLE *s = slot(w, in, kPz);
            if (*s == DAT_HANDLE_NULL) dat_pz_create(pick_ia(w, in), s);
            break;
        }
        case 1:
            free_op(w, in, kPz, [](DAT_HANDLE h) { return dat_pz_free(h); });
            break;
        case 2: {
            DAT_HANDLE *s = slot(w, in, kEvd);
            DAT_EVD_FLAGS f = in.flag() ? kEvdFlags[in.u8() % std::size(kEvdFlags)]
                                        : static_cast<DAT_EVD_FLAGS>(in.u16());
            if (*s == DAT_HANDLE_NULL)
                dat_evd_create(pick_ia(w, in), in.count(64), DAT_HANDLE_NULL, f, s);
            break;
        }
        case 3:
            free_op(w, in, kEvd, [](DAT_HANDLE h) { return dat_evd_free(h); });
            break;
        case 4: {
            const int i = in.u8() % kSlots;
            DAT_HANDLE *s = &w.live[kLmr][i];
            if (*s != DAT_HANDLE_NULL) break;
            const std::uint32_t off = in.u16() % kArenaSize;
            DAT_REGION_DESCRIPTION region;
            region.for_va = g_arena + off;
            DAT_VLEN len =
                static_cast<DAT_VLEN>(in.count(static_cast<std::int32_t>(kArenaSize - off)));
            if (static_cast<std::int64_t>(len) < 0 || len > kArenaSize - off)
                len = kArenaSize - off;
            DAT_VLEN reg_len = 0;
            DAT_VADDR reg_addr = 0;
            const auto priv = static_cast<DAT_MEM_PRIV_FLAGS>(in.u8());
            const auto mem_type =
                in.u8() % 4 == 0 ? static_cast<DAT_MEM_TYPE>(in.u16()) : DAT_MEM_TYPE_VIRTUAL;
            const auto va_type = in.flag() ? DAT_VA_TYPE_VA : static_cast<DAT_VA_TYPE>(in.u8() % 3);
            dat_lmr_create(pick_ia(w, in), mem_type, region, len, pick(w, in, kPz), priv, va_type,
                           s, &w.lmr[i].lmr_ctx, &w.lmr[i].rmr_ctx, &reg_len, &reg_addr);
            break;
        }
        case 5:
            free_op(w, in, kLmr, [](DAT_HANDLE h) { return dat_lmr_free(h); });
            break;
        case 6: {
            DAT_HANDLE *s = slot(w, in, kRmr);
            if (*s == DAT_HANDLE_NULL) dat_rmr_create(pick(w, in, kPz), s);
            break;
        }
        case 7:
            free_op(w, in, kRmr, [](DAT_HANDLE h) { return dat_rmr_free(h); });
            break;
        case 8: {
            DAT_HANDLE *s = slot(w, in, kEp);
            if (*s != DAT_HANDLE_NULL) break;
            DAT_EP_ATTR a = ep_attr(in);
            dat_ep_create(pick_ia(w, in), pick(w, in, kPz), pick(w, in, kEvd), pick(w, in, kEvd),
                          pick(w, in, kEvd), in.flag() ? &a : nullptr, s);
            break;
        }
        case 9:
            free_op(w, in, kEp, [](DAT_HANDLE h) { return dat_ep_free(h); });
            break;
        case 10:
        case 11:
        case 12:
        case 13: {  // posts on an endpoint that is never connected
            const int op = in.u8() % 4;
            std::array<DAT_LMR_TRIPLET, 4> iov{};
            for (auto &t : iov) t = triplet(w, in);
            DAT_COUNT n = in.count(4);
            if (n > 4 || n < 0) n = in.flag() ? 0 : n;  // never more than iov holds
            if (n > 4) n = 4;
            DAT_DTO_COOKIE cookie;
            cookie.as_64 = in.u64();
            const auto flags = static_cast<DAT_COMPLETION_FLAGS>(in.u8());
            DAT_RMR_TRIPLET r = rmr_triplet(w, in);
            DAT_EP_HANDLE ep = pick(w, in, kEp);
            if (op == 0) rc = dat_ep_post_recv(ep, n, iov.data(), cookie, flags);
            if (op == 1) rc = dat_ep_post_send(ep, n, iov.data(), cookie, flags);
            if (op == 2) rc = dat_ep_post_rdma_write(ep, n, iov.data(), cookie, &r, flags);
            if (op == 3) rc = dat_ep_post_rdma_read(ep, n, iov.data(), cookie, &r, flags);
            break;
        }
        case 14: {
            DAT_EP_PARAM p;
            std::memset(&p, 0, sizeof p);
            dat_ep_query(pick(w, in, kEp), static_cast<DAT_EP_PARAM_MASK>(in.u32()), &p);
            break;
        }
        case 15: {
            DAT_EP_PARAM p;
            std::memset(&p, 0, sizeof p);
            p.ep_attr = ep_attr(in);
            dat_ep_modify(pick(w, in, kEp), static_cast<DAT_EP_PARAM_MASK>(in.u32()), &p);
            break;
        }
        case 16: {
            DAT_EVENT ev;
            dat_evd_dequeue(pick(w, in, kEvd), &ev);
            break;
        }
        case 17: {
            DAT_EVENT ev;
            std::memset(&ev, 0, sizeof ev);
            ev.event_number =
                in.flag() ? DAT_SOFTWARE_EVENT : static_cast<DAT_EVENT_NUMBER>(in.u32());
            ev.event_data.software_event_data.pointer = reinterpret_cast<void *>(in.u64());
            dat_evd_post_se(pick(w, in, kEvd), &ev);
            break;
        }
        case 18: {
            DAT_EVENT ev;
            DAT_COUNT nmore = 0;
            dat_evd_wait(pick(w, in, kEvd), 0, in.count(4), &ev, &nmore);  // timeout 0: no wait
            break;
        }
        case 19:
            dat_evd_resize(pick(w, in, kEvd), in.count(128));
            break;
        case 20: {
            DAT_HANDLE e = pick(w, in, kEvd);
            switch (in.u8() % 4) {
                case 0:
                    dat_evd_enable(e);
                    break;
                case 1:
                    dat_evd_disable(e);
                    break;
                case 2:
                    dat_evd_set_unwaitable(e);
                    break;
                case 3:
                    dat_evd_clear_unwaitable(e);
                    break;
            }
            break;
        }
        case 21: {
            DAT_EVD_PARAM p;
            dat_evd_query(pick(w, in, kEvd), DAT_EVD_FIELD_ALL, &p);
            DAT_PZ_PARAM pz;
            dat_pz_query(pick(w, in, kPz), DAT_PZ_FIELD_ALL, &pz);
            DAT_LMR_PARAM l;
            dat_lmr_query(pick(w, in, kLmr), DAT_LMR_FIELD_ALL, &l);
            DAT_RMR_PARAM r;
            dat_rmr_query(pick(w, in, kRmr), DAT_RMR_FIELD_ALL, &r);
            break;
        }
        case 22: {
            DAT_EP_STATE st;
            DAT_BOOLEAN recv_idle, req_idle;
            dat_ep_get_status(pick(w, in, kEp), &st, &recv_idle, &req_idle);
            break;
        }
        case 23:
            dat_ep_disconnect(pick(w, in, kEp),
                              in.flag() ? DAT_CLOSE_ABRUPT_FLAG : DAT_CLOSE_GRACEFUL_FLAG);
            break;
        case 24:
            dat_ep_reset(pick(w, in, kEp));
            break;
        case 25: {
            DAT_HANDLE *s = slot(w, in, kPsp);
            DAT_CONN_QUAL q = 0;
            if (*s == DAT_HANDLE_NULL)
                dat_psp_create_any(pick_ia(w, in), &q, pick(w, in, kEvd),
                                   in.flag() ? DAT_PSP_CONSUMER_FLAG : DAT_PSP_PROVIDER_FLAG, s);
            break;
        }
        case 26:
            free_op(w, in, kPsp, [](DAT_HANDLE h) { return dat_psp_free(h); });
            break;
        case 27: {
            const int i = in.u8() % kSlots;
            DAT_LMR_TRIPLET t = triplet(w, in);
            DAT_RMR_CONTEXT ctx = 0;
            DAT_RMR_COOKIE cookie;
            cookie.as_64 = in.u64();
            // Bind on an unconnected endpoint (or none): the provider must refuse or complete
            // it without a connection.
            dat_rmr_bind(w.live[kRmr][i], pick(w, in, kLmr), &t,
                         static_cast<DAT_MEM_PRIV_FLAGS>(in.u8()), DAT_VA_TYPE_VA, pick(w, in, kEp),
                         cookie, static_cast<DAT_COMPLETION_FLAGS>(in.u8()), &ctx);
            w.rmr_ctx[i] = ctx;
            break;
        }
    }
    (void)rc;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    const char *h = std::getenv("OPENDAT_FUZZ_HOSTILE_HANDLES");
    g_hostile = h != nullptr && std::strcmp(h, "1") == 0;
    // Opened once, before fuzzing starts: the provider is loaded (and its coverage counters
    // registered) here and stays loaded; hostile mode also uses its objects as "other IA".
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    if (dat_ia_open(kIaName, 8, &async, &g_anchor_ia) != DAT_SUCCESS ||
        dat_pz_create(g_anchor_ia, &g_anchor_pz) != DAT_SUCCESS ||
        dat_evd_create(g_anchor_ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &g_anchor_evd) !=
            DAT_SUCCESS) {
        std::fprintf(stderr, "dat_calls fuzzer: cannot open %s (is DAT_OVERRIDE set?)\n", kIaName);
        std::exit(1);
    }
    std::fprintf(stderr, "dat_calls fuzzer: %s handles\n", g_hostile ? "hostile" : "safe");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    Bytes in(data, size);
    World w;
    const bool abrupt_close = in.flag();
    for (std::size_t i = 0; i < w.junk.size(); ++i) w.junk[i] = in.u8();
    w.async_evd = DAT_HANDLE_NULL;
    if (dat_ia_open(kIaName, in.count(16), &w.async_evd, &w.ia) != DAT_SUCCESS) {
        // A random async queue length may be refused; the fixed one must not be.
        w.async_evd = DAT_HANDLE_NULL;
        if (dat_ia_open(kIaName, 8, &w.async_evd, &w.ia) != DAT_SUCCESS) std::abort();
    }
    w.live[kEvd][0] = w.async_evd;  // the async EVD is an EVD too (freeing it must be refused)
    for (int calls = 0; calls < kMaxCalls && !in.empty(); ++calls) one_call(w, in);
    // Closing the IA frees whatever the calls left (graceful close refuses while objects
    // exist; then the abrupt close must succeed).
    DAT_RETURN rc = abrupt_close ? DAT_INTERNAL_ERROR : dat_ia_close(w.ia, DAT_CLOSE_GRACEFUL_FLAG);
    if (rc != DAT_SUCCESS) rc = dat_ia_close(w.ia, DAT_CLOSE_ABRUPT_FLAG);
    if (rc != DAT_SUCCESS) {
        std::fprintf(stderr, "dat_calls fuzzer: dat_ia_close(ABRUPT) -> 0x%x\n", rc);
        std::abort();
    }
    return 0;
}

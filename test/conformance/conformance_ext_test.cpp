// Conformance cases for the IB extensions (<dat2/dat_ib_extensions.h>, dat_extension_op):
// RDMA write with immediate data and the remote atomics. Provider-generic like the rest of
// the suite: an IA that does not report an extension gets its cases reported UNSUPPORTED.
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include <dat2/dat_ib_extensions.h>

#include "dat_fixture.hpp"

using namespace dattest;

namespace {

constexpr DAT_MEM_PRIV_FLAGS kAtomicPriv = static_cast<DAT_MEM_PRIV_FLAGS>(
    static_cast<int>(DAT_MEM_PRIV_ALL_FLAG) | static_cast<int>(DAT_IB_MEM_PRIV_REMOTE_ATOMIC));

const DAT_IB_EXTENSION_EVENT_DATA &ext_of(const DAT_EVENT &ev) {
    return *reinterpret_cast<const DAT_IB_EXTENSION_EVENT_DATA *>(ev.event_extension_data);
}

void sync_with_provider(DAT_EP_HANDLE ep) {
    DAT_EP_STATE st;
    dat_ep_get_status(ep, &st, nullptr, nullptr);
}

// Memory the remote atomics work on: words of the parent registered in each of its IAs.
struct Words {
    alignas(64) std::uint64_t w[8] = {};
    std::uint64_t load(int i) { return std::atomic_ref<std::uint64_t>(w[i]).load(); }
};

// Registers `words` in `n`'s IA; the remote triplet of word `i` (8 bytes).
DAT_RETURN reg_words(Node &n, Words &words, DAT_MEM_PRIV_FLAGS priv, DAT_RMR_CONTEXT *rctx) {
    DAT_REGION_DESCRIPTION region;
    region.for_va = words.w;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_VLEN len;
    DAT_VADDR addr;
    return dat_lmr_create(n.ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof words.w, n.pz, priv,
                          DAT_VA_TYPE_VA, &lmr, &lctx, rctx, &len, &addr);
}

DAT_RMR_TRIPLET word_triplet(Words &words, DAT_RMR_CONTEXT rctx, int i) {
    DAT_RMR_TRIPLET t{};
    t.rmr_context = rctx;
    t.virtual_address = reinterpret_cast<std::uintptr_t>(&words.w[i]);
    t.segment_length = sizeof(std::uint64_t);
    return t;
}

// In a child: one atomic on `target`, waited for; the original value, or ~0 on failure.
std::uint64_t atomic_op(Node &c, Buffer &result, bool cmp_swap, std::uint64_t a, std::uint64_t b,
                        const DAT_RMR_TRIPLET &target, std::uint64_t cookie) {
    DAT_LMR_TRIPLET l = result.iov(0, 8);
    DAT_DTO_COOKIE ck;
    ck.as_64 = cookie;
    DAT_RETURN rc =
        cmp_swap
            ? dat_ib_post_cmp_and_swap(c.ep, a, b, &l, ck, &target, DAT_COMPLETION_DEFAULT_FLAG)
            : dat_ib_post_fetch_and_add(c.ep, a, &l, ck, &target, DAT_COMPLETION_DEFAULT_FLAG);
    if (rc != DAT_SUCCESS) return ~std::uint64_t{0};
    DAT_EVENT ev;
    if (c.next(c.req_evd, &ev) != DAT_SUCCESS ||
        ev.event_number != static_cast<DAT_EVENT_NUMBER>(DAT_IB_DTO_EVENT) ||
        ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS ||
        ev.event_data.dto_completion_event_data.user_cookie.as_64 != cookie ||
        ext_of(ev).type != (cmp_swap ? DAT_IB_CMP_AND_SWAP : DAT_IB_FETCH_AND_ADD))
        return ~std::uint64_t{0};
    std::uint64_t v;
    std::memcpy(&v, result.mem.data(), sizeof v);
    return v;
}

// `k` server Nodes in this process (each its own IA, all registering `words`), `k` child
// initiators, child i connected to server i. `body(i, node, result, rctx)` is child i's
// work on the connected node; returns 0 on success. Waits for all of them.
template <class Body>
void run_initiators(int k, Words &words, Body body) {
    std::vector<std::unique_ptr<Node>> servers;
    std::vector<std::unique_ptr<Channel>> chans;
    std::vector<int> pids;
    for (int i = 0; i < k; ++i) chans.push_back(std::make_unique<Channel>());
    for (int i = 0; i < k; ++i) {
        Channel *ch = chans[i].get();
        pids.push_back(spawn([&, i, ch] {
            ch->child_side();
            Node c;
            Buffer result;
            CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
            CHILD_CHECK(c.reg(&result, 64) == DAT_SUCCESS);
            DAT_CONN_QUAL qual;
            DAT_RMR_CONTEXT rctx;
            CHILD_CHECK(ch->recv(&qual) && ch->recv(&rctx));
            DAT_EVENT_NUMBER outcome;
            CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                        outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
            int go;
            CHILD_CHECK(ch->recv(&go));  // everyone connected: start together
            int rc = body(i, c, result, rctx);
            CHILD_CHECK(ch->send(rc));
            CHILD_CHECK(ch->recv(&go));
            return rc;
        }));
        chans[i]->parent_side();
    }
    for (int i = 0; i < k; ++i) {
        servers.push_back(std::make_unique<Node>());
        Node &s = *servers.back();
        ASSERT_EQ(s.open(), DAT_SUCCESS);
        ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
        DAT_RMR_CONTEXT rctx = 0;
        ASSERT_EQ(reg_words(s, words, kAtomicPriv, &rctx), DAT_SUCCESS);
        DAT_CONN_QUAL qual = 0;
        ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
        ASSERT_TRUE(chans[i]->send(qual) && chans[i]->send(rctx));
        ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    }
    for (auto &ch : chans) ASSERT_TRUE(ch->send(1));
    for (int i = 0; i < k; ++i) {
        int rc = -1;
        EXPECT_TRUE(chans[i]->recv(&rc, 60000));
        EXPECT_EQ(rc, 0) << "initiator " << i;
    }
    for (auto &s : servers) sync_with_provider(s->ep);
    for (auto &ch : chans) ch->send(1);
    for (int pid : pids) EXPECT_EQ(reap(pid, 60), 0);
}

}  // namespace

// Write-with-immediate is ordered with the connection's sends and writes: each one
// consumes the next posted receive, in posting order, and when its completion is seen the
// data of that write and of every write before it is in place.
TEST(ConformanceExt, ImmediateDataOrderedWithSendsAndWrites) {
    if (!traits().immediate) SKIP_UNSUPPORTED("no RDMA write with immediate data");
    constexpr std::size_t kChunk = 4096;
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        Node c;
        Buffer src;
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        CHILD_CHECK(c.reg(&src, 4 * kChunk) == DAT_SUCCESS);
        for (std::size_t i = 0; i < src.mem.size(); ++i)
            src.mem[i] = static_cast<unsigned char>(i / kChunk + 1);
        DAT_CONN_QUAL qual;
        DAT_RMR_TRIPLET target;
        CHILD_CHECK(ch.recv(&qual) && ch.recv(&target));
        DAT_EVENT_NUMBER outcome;
        CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                    outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        // send, write, write+imm, send, write+imm, send (chunk i of src to chunk i of target)
        DAT_DTO_COOKIE ck;
        auto remote = [&](std::size_t chunk) {
            DAT_RMR_TRIPLET r = target;
            r.virtual_address += chunk * kChunk;
            r.segment_length = kChunk;
            return r;
        };
        auto send = [&](std::uint64_t cookie, std::size_t off) {
            DAT_LMR_TRIPLET l = src.iov(off, 16);
            ck.as_64 = cookie;
            return dat_ep_post_send(c.ep, 1, &l, ck, DAT_COMPLETION_DEFAULT_FLAG);
        };
        DAT_LMR_TRIPLET l0 = src.iov(0, kChunk), l1 = src.iov(kChunk, kChunk),
                        l2 = src.iov(2 * kChunk, kChunk);
        DAT_RMR_TRIPLET r0 = remote(0), r1 = remote(1), r2 = remote(2);
        CHILD_CHECK(send(1, 0) == DAT_SUCCESS);
        ck.as_64 = 2;
        CHILD_CHECK(dat_ep_post_rdma_write(c.ep, 1, &l0, ck, &r0, DAT_COMPLETION_DEFAULT_FLAG) ==
                    DAT_SUCCESS);
        ck.as_64 = 3;
        CHILD_CHECK(dat_ib_post_rdma_write_immed(c.ep, 1, &l1, ck, &r1, 0x1001u,
                                                 DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
        CHILD_CHECK(send(4, kChunk) == DAT_SUCCESS);
        ck.as_64 = 5;
        CHILD_CHECK(dat_ib_post_rdma_write_immed(c.ep, 1, &l2, ck, &r2, 0x1002u,
                                                 DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS);
        CHILD_CHECK(send(6, 2 * kChunk) == DAT_SUCCESS);
        DAT_EVENT ev;
        for (std::uint64_t want = 1; want <= 6; ++want) {  // completions in posting order
            CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
            const auto &d = ev.event_data.dto_completion_event_data;
            CHILD_CHECK(d.status == DAT_DTO_SUCCESS && d.user_cookie.as_64 == want);
            const bool immed = want == 3 || want == 5;
            CHILD_CHECK(ev.event_number == (immed ? static_cast<DAT_EVENT_NUMBER>(DAT_IB_DTO_EVENT)
                                                  : DAT_DTO_COMPLETION_EVENT));
            if (immed) CHILD_CHECK(ext_of(ev).type == DAT_IB_RDMA_WRITE_IMMED);
        }
        int done;
        CHILD_CHECK(ch.recv(&done));
        return 0;
    });
    ch.parent_side();
    Node s;
    Buffer region, rbuf;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&region, 3 * kChunk), DAT_SUCCESS);
    ASSERT_EQ(s.reg(&rbuf, 5 * 64), DAT_SUCCESS);
    for (std::uint64_t i = 0; i < 5; ++i) {
        DAT_LMR_TRIPLET l = rbuf.iov(i * 64, 64);
        DAT_DTO_COOKIE ck;
        ck.as_64 = 100 + i;
        ASSERT_EQ(dat_ep_post_recv(s.ep, 1, &l, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    }
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    DAT_RMR_TRIPLET t = region.rmr();
    ASSERT_TRUE(ch.send(qual) && ch.send(t));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    // Receives complete in order: send, imm 0x1001, send, imm 0x1002, send.
    const std::uint32_t want_immed[5] = {0, 0x1001, 0, 0x1002, 0};
    for (int i = 0; i < 5; ++i) {
        SCOPED_TRACE(i);
        DAT_EVENT ev;
        ASSERT_EQ(s.next(s.recv_evd, &ev), DAT_SUCCESS);
        const auto &d = ev.event_data.dto_completion_event_data;
        EXPECT_EQ(d.status, DAT_DTO_SUCCESS);
        EXPECT_EQ(d.user_cookie.as_64, 100u + static_cast<unsigned>(i));
        if (want_immed[i] == 0) {
            EXPECT_EQ(ev.event_number, DAT_DTO_COMPLETION_EVENT);
            EXPECT_EQ(d.transfered_length, 16u);
            continue;
        }
        ASSERT_EQ(ev.event_number, static_cast<DAT_EVENT_NUMBER>(DAT_IB_DTO_EVENT));
        EXPECT_EQ(ext_of(ev).type, DAT_IB_RDMA_WRITE_IMMED_DATA);
        EXPECT_EQ(ext_of(ev).val.immed.data, want_immed[i]);
        EXPECT_EQ(d.transfered_length, kChunk);
        // This write, and every write posted before it, is in place.
        const std::size_t upto = want_immed[i] == 0x1001 ? 2 : 3;
        for (std::size_t c = 0; c < upto; ++c)
            for (std::size_t b = 0; b < kChunk; b += 511)
                ASSERT_EQ(region.mem[c * kChunk + b], static_cast<unsigned char>(c + 1))
                    << "chunk " << c << " byte " << b;
    }
    ch.send(1);
    EXPECT_EQ(reap(pid), 0);
}

// Fetch-and-add from several initiators (each its own connection, process and target IA)
// on one word: every increment counts, and each initiator sees the values it got grow.
TEST(ConformanceExt, FetchAndAddFromSeveralInitiators) {
    if (!traits().atomics) SKIP_UNSUPPORTED("no remote atomics");
    constexpr int kInitiators = 3, kAdds = 200;
    Words words;
    run_initiators(kInitiators, words, [&](int, Node &c, Buffer &result, DAT_RMR_CONTEXT rctx) {
        const DAT_RMR_TRIPLET t = word_triplet(words, rctx, 0);
        std::uint64_t last = 0;
        for (int n = 0; n < kAdds; ++n) {
            std::uint64_t v = atomic_op(c, result, false, 1, 0, t, static_cast<std::uint64_t>(n));
            CHILD_CHECK(v != ~std::uint64_t{0});
            CHILD_CHECK(n == 0 || v > last);
            last = v;
        }
        return 0;
    });
    EXPECT_EQ(words.load(0), static_cast<std::uint64_t>(kInitiators * kAdds));
}

// A spin lock built on compare-and-swap, taken by several initiators: inside the critical
// section a fetch-and-add on an "inside" word must find it 0 (nobody else holds the lock),
// and releasing must find the lock still ours.
TEST(ConformanceExt, CompareAndSwapLockIsNeverHeldTwice) {
    if (!traits().atomics) SKIP_UNSUPPORTED("no remote atomics");
    constexpr int kInitiators = 3, kRounds = 40;
    Words words;  // w[0] lock (0 = free, else holder id), w[1] inside count, w[2] total
    run_initiators(kInitiators, words, [&](int i, Node &c, Buffer &result, DAT_RMR_CONTEXT rctx) {
        const std::uint64_t me = static_cast<std::uint64_t>(i) + 1;
        const DAT_RMR_TRIPLET lock = word_triplet(words, rctx, 0);
        const DAT_RMR_TRIPLET inside = word_triplet(words, rctx, 1);
        const DAT_RMR_TRIPLET total = word_triplet(words, rctx, 2);
        std::uint64_t ck = 0;
        for (int r = 0; r < kRounds; ++r) {
            std::uint64_t was;
            do {
                was = atomic_op(c, result, true, 0, me, lock, ++ck);
                CHILD_CHECK(was != ~std::uint64_t{0});
            } while (was != 0);
            CHILD_CHECK(atomic_op(c, result, false, 1, 0, inside, ++ck) == 0);  // alone
            CHILD_CHECK(atomic_op(c, result, false, 1, 0, total, ++ck) != ~std::uint64_t{0});
            CHILD_CHECK(atomic_op(c, result, false, ~std::uint64_t{0}, 0, inside, ++ck) == 1);
            CHILD_CHECK(atomic_op(c, result, true, me, 0, lock, ++ck) == me);  // still ours
        }
        return 0;
    });
    EXPECT_EQ(words.load(0), 0u);
    EXPECT_EQ(words.load(1), 0u);
    EXPECT_EQ(words.load(2), static_cast<std::uint64_t>(kInitiators * kRounds));
}

// Bad atomics: an unaligned target or a local segment shorter than 8 bytes is refused at
// post time; a target without DAT_IB_MEM_PRIV_REMOTE_ATOMIC completes in error (and breaks
// the connection, RC semantics) with the target word unchanged. Never a crash.
TEST(ConformanceExt, AtomicViolationsAreErrors) {
    if (!traits().atomics) SKIP_UNSUPPORTED("no remote atomics");
    Words words;
    words.w[0] = 0x1234;
    Channel ch;
    int pid = spawn([&] {
        ch.child_side();
        Node c;
        Buffer result;
        CHILD_CHECK(c.open() == DAT_SUCCESS && c.make_ep() == DAT_SUCCESS);
        CHILD_CHECK(c.reg(&result, 64) == DAT_SUCCESS);
        DAT_CONN_QUAL qual;
        DAT_RMR_CONTEXT rctx;
        CHILD_CHECK(ch.recv(&qual) && ch.recv(&rctx));
        DAT_EVENT_NUMBER outcome;
        CHILD_CHECK(c.connect(qual, &outcome) == DAT_SUCCESS &&
                    outcome == DAT_CONNECTION_EVENT_ESTABLISHED);
        DAT_RMR_TRIPLET t = word_triplet(words, rctx, 0);
        DAT_LMR_TRIPLET l = result.iov(0, 8);
        DAT_DTO_COOKIE ck;
        ck.as_64 = 7;
        DAT_RMR_TRIPLET unaligned = t;
        unaligned.virtual_address += 4;
        CHILD_CHECK(DAT_GET_TYPE(dat_ib_post_fetch_and_add(c.ep, 1, &l, ck, &unaligned,
                                                           DAT_COMPLETION_DEFAULT_FLAG)) ==
                    DAT_INVALID_PARAMETER);
        CHILD_CHECK(DAT_GET_TYPE(dat_ib_post_cmp_and_swap(c.ep, 0, 1, &l, ck, &unaligned,
                                                          DAT_COMPLETION_DEFAULT_FLAG)) ==
                    DAT_INVALID_PARAMETER);
        DAT_LMR_TRIPLET short_local = result.iov(0, 4);
        CHILD_CHECK(DAT_GET_TYPE(dat_ib_post_fetch_and_add(c.ep, 1, &short_local, ck, &t,
                                                           DAT_COMPLETION_DEFAULT_FLAG)) ==
                    DAT_LENGTH_ERROR);
        // The target grants everything but remote atomics.
        CHILD_CHECK(dat_ib_post_fetch_and_add(c.ep, 1, &l, ck, &t, DAT_COMPLETION_DEFAULT_FLAG) ==
                    DAT_SUCCESS);
        DAT_EVENT ev;
        CHILD_CHECK(c.next(c.req_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 7);
        CHILD_CHECK(ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS);
        CHILD_CHECK(c.next(c.conn_evd, &ev) == DAT_SUCCESS);
        CHILD_CHECK(ev.event_number == DAT_CONNECTION_EVENT_BROKEN ||
                    ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
        CHILD_CHECK(ch.send(1));
        int done;
        CHILD_CHECK(ch.recv(&done));
        return 0;
    });
    ch.parent_side();
    Node s;
    ASSERT_EQ(s.open(), DAT_SUCCESS);
    ASSERT_EQ(s.make_ep(), DAT_SUCCESS);
    DAT_RMR_CONTEXT rctx = 0;
    ASSERT_EQ(reg_words(s, words, DAT_MEM_PRIV_ALL_FLAG, &rctx), DAT_SUCCESS);
    DAT_CONN_QUAL qual = 0;
    ASSERT_EQ(s.listen(&qual), DAT_SUCCESS);
    ASSERT_TRUE(ch.send(qual) && ch.send(rctx));
    ASSERT_EQ(s.accept_one(), DAT_SUCCESS);
    int ok = 0;
    ASSERT_TRUE(ch.recv(&ok));
    sync_with_provider(s.ep);
    EXPECT_EQ(words.load(0), 0x1234u);
    ch.send(1);
    EXPECT_EQ(reap(pid), 0);
}

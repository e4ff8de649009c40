// The common header of every object a provider hands out as a DAT handle.
//
// libdat2 dispatches by loading the first word of a handle as the DAT_PROVIDER pointer, so
// `provider` must be at offset 0. Objects are plain (non-polymorphic) structs deriving from
// Header so that the header sits at offset 0.
//
// Handles that cannot lie (docs/provider-guide.md "Handles"): every Header is allocated
// from this library's handle arena (util/handle_arena.hpp), whose addresses are never
// reused. as<T> accepts a handle only if it lies in the arena (so it was issued by this
// provider library: not verbs', not a foreign library's, not garbage), carries the live
// tag of its own address (so it has not been freed) and has the asked type. as<T>(h, ia)
// also asks that it belongs to `ia`, for entry points where two handles meet.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>  // DAT_PROVIDER

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "util/handle_arena.hpp"
#include "util/status.hpp"

namespace opendat::util {

struct Ia;

// Written over the live tag when an object dies (`obj->magic = kMagicDead` makes a handle
// invalid before its memory goes). An atomic store: dead-store elimination cannot drop it,
// unlike the plain store in a destructor it used to be.
constexpr std::uint32_t kMagicDead = 0xdeadda7a;

// fork(): a child has copies of its parent's objects but shares their sockets and epoll
// instances and has none of their threads. Using them there (a dat_ia_close sending DISC
// and deregistering sockets, a post writing frames, a poll reading the parent's data)
// would break the parent's connections, and waits for threads that do not exist would
// hang. So every object remembers the process generation it was made in (advanced in each
// forked child, objects.cpp), and a handle from an earlier one is refused like a dead one.
inline std::atomic<std::uint32_t> g_fork_generation{0};
// Cold path of as_header: traces the refusal of an object inherited across fork().
void refuse_inherited(const void *h) noexcept;

struct Header {
    const DAT_PROVIDER *provider;  // offset 0: the dispatch word
    std::atomic<std::uint32_t> magic;
    DAT_HANDLE_TYPE type;
    DAT_CONTEXT context{};  // dat_set/get_consumer_context
    Ia *ia = nullptr;       // owning IA (the IA itself for an IA)
    // The process generation it was made in (g_fork_generation).
    const std::uint32_t generation = g_fork_generation.load(std::memory_order_relaxed);

    Header(const DAT_PROVIDER *p, DAT_HANDLE_TYPE t, Ia *owner)
        : provider(p), magic(arena::live_tag(this)), type(t), ia(owner) {}
    ~Header() { magic.store(kMagicDead, std::memory_order_release); }
    Header(const Header &) = delete;
    Header &operator=(const Header &) = delete;

    // Every object derived from Header lives in the handle arena, whatever its type.
    static void *operator new(std::size_t size) {
        void *p = arena::allocate(size);
        if (p == nullptr) throw std::bad_alloc();
        return p;
    }
    static void *operator new(std::size_t size, const std::nothrow_t &) noexcept {
        return arena::allocate(size);
    }
    static void operator delete(void *p) noexcept { arena::release(p); }
    static void operator delete(void *p, const std::nothrow_t &) noexcept { arena::release(p); }
};

// The DAT_INVALID_HANDLE subtype libdat2 uses for each handle type.
constexpr DAT_RETURN invalid_handle(DAT_HANDLE_TYPE t) noexcept {
    switch (t) {
        case DAT_HANDLE_TYPE_IA:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
        case DAT_HANDLE_TYPE_EP:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
        case DAT_HANDLE_TYPE_LMR:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
        case DAT_HANDLE_TYPE_RMR:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
        case DAT_HANDLE_TYPE_PZ:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
        case DAT_HANDLE_TYPE_PSP:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP);
        case DAT_HANDLE_TYPE_RSP:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP);
        case DAT_HANDLE_TYPE_CR:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
        case DAT_HANDLE_TYPE_CNO:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
        case DAT_HANDLE_TYPE_EVD:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
        case DAT_HANDLE_TYPE_SRQ:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
        default:
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    }
}

// Claims a live object for its end (a free, or a connection request's answer): its live
// tag becomes the dead one in one atomic step. Of two threads that free one handle at
// once (a consumer's misuse: two dat_ep_free, or dat_cr_accept racing dat_cr_reject), both
// may pass as<T>, but exactly one claims it and goes on to destroy it; the other gets
// false and answers DAT_INVALID_HANDLE, as it would have a moment later. Called after
// the free's own checks (an object in use is refused and stays valid), before anything
// is torn down.
[[nodiscard]] inline bool claim(Header *obj) noexcept {
    std::uint32_t live = arena::live_tag(obj);
    return obj->magic.compare_exchange_strong(live, kMagicDead, std::memory_order_seq_cst);
}

// Any live object of this provider library, or nullptr. Reads nothing outside the arena.
inline Header *as_header(DAT_HANDLE h) noexcept {
    if (!arena::contains(h)) return nullptr;
    auto *hdr = static_cast<Header *>(h);
    if (hdr->magic.load(std::memory_order_acquire) != arena::live_tag(hdr)) return nullptr;
    if (hdr->generation != g_fork_generation.load(std::memory_order_relaxed)) [[unlikely]] {
        refuse_inherited(hdr);
        return nullptr;
    }
    return hdr;
}

// The live object of type T behind `h`, or nullptr. T declares `static constexpr kType`.
// Inline everywhere: a hot entry point that got an out-of-line copy ran it outside the hot
// block (tcp_hot_path_footprint).
template <class T>
[[gnu::always_inline]] inline T *as(DAT_HANDLE h) noexcept {
    Header *hdr = as_header(h);
    if (hdr == nullptr || hdr->type != T::kType) return nullptr;
    return static_cast<T *>(hdr);
}

// The same, and the object belongs to IA `ia` (the other handle of a call).
template <class T>
T *as(DAT_HANDLE h, const Ia *ia) noexcept {
    T *t = as<T>(h);
    return t != nullptr && t->ia == ia ? t : nullptr;
}

}  // namespace opendat::util

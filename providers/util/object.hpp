// The common header of every object a provider hands out as a DAT handle.
//
// libdat2 dispatches by loading the first word of a handle as the DAT_PROVIDER pointer, so
// `provider` must be at offset 0. The magic and type let every entry point reject a stale,
// foreign or wrong-type handle with DAT_INVALID_HANDLE instead of crashing. Objects are
// plain (non-polymorphic) structs deriving from Header so that the header sits at offset 0.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>  // DAT_PROVIDER

#include <cstdint>

#include "util/status.hpp"

namespace opendat::util {

struct Ia;

constexpr std::uint32_t kMagicLive = 0x4f444154;  // "ODAT"
constexpr std::uint32_t kMagicDead = 0xdeadda7a;

struct Header {
    const DAT_PROVIDER *provider;  // offset 0: the dispatch word
    std::uint32_t magic = kMagicLive;
    DAT_HANDLE_TYPE type;
    DAT_CONTEXT context{};  // dat_set/get_consumer_context
    Ia *ia = nullptr;       // owning IA (the IA itself for an IA)

    Header(const DAT_PROVIDER *p, DAT_HANDLE_TYPE t, Ia *owner) : provider(p), type(t), ia(owner) {}
    ~Header() { magic = kMagicDead; }
    Header(const Header &) = delete;
    Header &operator=(const Header &) = delete;
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

// Any live object of ours, or nullptr.
inline Header *as_header(DAT_HANDLE h) noexcept {
    auto *hdr = static_cast<Header *>(h);
    if (hdr == nullptr || hdr->magic != kMagicLive) return nullptr;
    return hdr;
}

// The live object of type T behind `h`, or nullptr. T declares `static constexpr kType`.
template <class T>
T *as(DAT_HANDLE h) noexcept {
    Header *hdr = as_header(h);
    if (hdr == nullptr || hdr->type != T::kType) return nullptr;
    return static_cast<T *>(hdr);
}

}  // namespace opendat::util

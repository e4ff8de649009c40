// DAT_RETURN construction. The reference headers have no "make error" macro; every error we
// return carries the error class bit, except the few bare codes the reference returns
// (see evd.cpp: an empty DTO EVD).
#pragma once

#include <dat2/udat.h>

namespace opendat::util {

constexpr DAT_RETURN err(DAT_RETURN type, DAT_RETURN subtype = DAT_NO_SUBTYPE) noexcept {
    return static_cast<DAT_RETURN>(DAT_CLASS_ERROR | type | subtype);
}
constexpr DAT_RETURN kNotImplemented = err(DAT_NOT_IMPLEMENTED);
constexpr DAT_RETURN kNoMemory = err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
constexpr DAT_RETURN kInternal = err(DAT_INTERNAL_ERROR);

// DAT_INVALID_ARGn for the n-th argument (1-based).
constexpr DAT_RETURN bad_arg(int n) noexcept {
    return err(DAT_INVALID_PARAMETER, static_cast<DAT_RETURN>(DAT_INVALID_ARG1 + (n - 1)));
}

}  // namespace opendat::util

// Every provider entry is noexcept; this guard turns a stray exception (bad_alloc from a
// container growing on a slow path) into a DAT error instead of std::terminate.
#define OPENDAT_GUARD(body)                \
    try {                                  \
        body                               \
    } catch (const std::bad_alloc &) {     \
        return ::opendat::util::kNoMemory; \
    } catch (...) {                        \
        return ::opendat::util::kInternal; \
    }

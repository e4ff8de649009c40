// Building DAT_RETURN error codes (class | type | subtype). The DAPL sources have an
// internal DAT_ERROR macro; the public headers do not, so the registry has its own.
#pragma once

#include <dat2/udat.h>

namespace opendat::registry {

constexpr DAT_RETURN dat_error(
    DAT_RETURN_TYPE type,
    DAT_RETURN_SUBTYPE subtype = static_cast<DAT_RETURN_SUBTYPE>(0)) noexcept {
    return static_cast<DAT_RETURN>(DAT_CLASS_ERROR | static_cast<DAT_UINT32>(type) |
                                   static_cast<DAT_UINT32>(subtype));
}

// dat_ia_openv's "no such provider": DAT_PROVIDER_NOT_FOUND | DAT_NAME_NOT_REGISTERED.
constexpr DAT_RETURN kNotFound = dat_error(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
static_assert(kNotFound == 0x800A0064u);
static_assert(dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1) == 0x80060025u);
static_assert(dat_error(DAT_PROVIDER_ALREADY_REGISTERED) == 0x80100000u);

}  // namespace opendat::registry

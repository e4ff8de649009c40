// One registered range, as the key table (MemTable, KeyMap) sees it.
#pragma once

#include <cstdint>

#include <dat2/udat.h>

namespace opendat::util {

struct Pz;

struct MemRange {
    std::uint64_t addr = 0;
    std::uint64_t len = 0;
    DAT_MEM_PRIV_FLAGS priv = DAT_MEM_PRIV_NONE_FLAG;
    const Pz *pz = nullptr;
    // RMR scope: the util::Ep a window was bound through; only that endpoint's connection
    // may use it (util/access_guard.hpp). nullptr: any EP of the PZ (an LMR's rmr_context).
    const void *ep = nullptr;
};

}  // namespace opendat::util

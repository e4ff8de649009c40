// Which libdat2 this process runs with, and whether it is OpenDAT's: the configuration
// rules (build tree, relocated install) depend on where libdat2 lives, not on where
// datinfo's executable is.
#pragma once

#include <string>

namespace datinfo {

struct Libdat2Location {
    std::string path;               // the loaded libdat2.so.2 ("" if not found)
    const void *address = nullptr;  // an address inside it (dat_ia_openv)
    bool opendat = false;           // exports OPENDAT_2.0 (dat_trclvl_query)
};

Libdat2Location find_libdat2() noexcept;

}  // namespace datinfo

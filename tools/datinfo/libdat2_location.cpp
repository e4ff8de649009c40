#include "libdat2_location.hpp"

#include <dlfcn.h>

#include <filesystem>

namespace datinfo {

Libdat2Location find_libdat2() noexcept {
    Libdat2Location loc;
    // Ask the already-loaded library by its SONAME rather than taking &dat_ia_openv: in a
    // non-PIE executable that address would be the executable's own PLT stub.
    void *h = dlopen("libdat2.so.2", RTLD_LAZY | RTLD_NOLOAD);
    if (h == nullptr) return loc;
    loc.address = dlsym(h, "dat_ia_openv");
    loc.opendat = dlsym(h, "dat_trclvl_query") != nullptr;
    Dl_info info{};
    if (loc.address != nullptr && dladdr(loc.address, &info) != 0 && info.dli_fname) {
        // "bin/../lib/libdat2.so.2" (found through the RUNPATH) reads better normalised;
        // symlinks are kept, so the SONAME stays visible.
        loc.path = std::filesystem::path(info.dli_fname).lexically_normal().string();
    }
    dlclose(h);  // only drops the reference RTLD_NOLOAD added
    return loc;
}

}  // namespace datinfo

#include "util/ia_handle.hpp"

#include <dlfcn.h>

namespace opendat::util {

namespace {
using GetIaHandleFn = DAT_RETURN (*)(DAT_IA_HANDLE, DAT_IA_HANDLE *);

GetIaHandleFn host_lookup() noexcept {
    // Resolved once; the hosting libdat2 is loaded before any provider and stays loaded.
    static const GetIaHandleFn fn = [] {
        GetIaHandleFn f = nullptr;
        void *sym = dlsym(RTLD_DEFAULT, "dats_get_ia_handle");
        static_assert(sizeof f == sizeof sym);
        __builtin_memcpy(&f, &sym, sizeof f);
        return f;
    }();
    return fn;
}
}  // namespace

DAT_IA_HANDLE consumer_ia_handle(DAT_IA_HANDLE raw) noexcept {
    GetIaHandleFn fn = host_lookup();
    if (fn == nullptr || raw == nullptr) return raw;
    DAT_IA_HANDLE out = nullptr;
    if (fn(raw, &out) == DAT_SUCCESS && out != nullptr) return out;
    return raw;
}

}  // namespace opendat::util

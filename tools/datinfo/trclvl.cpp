#include "trclvl.hpp"

#include <dlfcn.h>

namespace datinfo {
namespace {

template <typename Fn>
Fn lookup(const char *name) noexcept {
    // POSIX dlsym returns object pointers; converting to a function pointer is what it requires.
    return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

DAT_RETURN trclvl_query(DAT_TRACE_COMPONENT component, DAT_UINT32 *level) noexcept {
    static const auto fn = lookup<DAT_TRCLVL_QUERY_FUNC>("dat_trclvl_query");
    return fn ? fn(component, level) : static_cast<DAT_RETURN>(DAT_NOT_IMPLEMENTED);
}

DAT_RETURN trclvl_modify(DAT_TRACE_COMPONENT component, DAT_UINT32 level) noexcept {
    static const auto fn = lookup<DAT_TRCLVL_MODIFY_FUNC>("dat_trclvl_modify");
    return fn ? fn(component, level) : static_cast<DAT_RETURN>(DAT_NOT_IMPLEMENTED);
}

}  // namespace datinfo

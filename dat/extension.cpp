// dat_extension_op routing (docs/dat-abi.md §10.2, §5.6). The variadic arguments travel
// on to the provider's handle_extendedop_func as a va_list, untouched except that the open
// path consumes the IA name first.
#include "ia_dispatch.hpp"
#include "ia_state.hpp"

#include <registry/registry.hpp>

#include <cstdarg>
#include <cstring>

using opendat::registry::Registry;

namespace opendat::dat {
namespace {

constexpr DAT_RETURN kBadHandle1 = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);  // 0x8005001B
constexpr DAT_RETURN kNullOpenName =
    error(DAT_INVALID_HANDLE, DAT_INVALID_ARG3);  // 0x80050027 (sic)

// The open/close paths use the library's own compiled version, not caller data.
DAT_PROVIDER_INFO extension_key(const char *name) noexcept {
    DAT_PROVIDER_INFO key{};
    if (name != nullptr) std::strncpy(key.ia_name, name, DAT_NAME_MAX_LENGTH - 1);
    key.dapl_version_major = DAT_VERSION_MAJOR;
    key.dapl_version_minor = DAT_VERSION_MINOR;
    key.is_thread_safe = DAT_FALSE;
    return key;
}

// op & DAT_OPEN_EXTENSION_BASE: no IA yet; the first vararg names the IA, the provider
// receives the name as its handle and keeps its registry reference until the close op.
DAT_RETURN open_path(DAT_EXTENDED_OP op, va_list args) noexcept {
    const char *name = va_arg(args, const char *);
    if (name == nullptr) return kNullOpenName;
    const DAT_PROVIDER_INFO key = extension_key(name);
    Registry &registry = Registry::instance();
    const DAT_PROVIDER *provider = nullptr;
    DAT_RETURN r = registry.open_provider(key, &provider);
    if (r != DAT_SUCCESS) return r;
    set_extensions_available();
    if (provider == nullptr || provider->handle_extendedop_func == nullptr) {
        registry.close_provider(key);
        return not_implemented("dat_extension_op(open)", provider);
    }
    r = provider->handle_extendedop_func(const_cast<char *>(name), op, args);
    if (r != DAT_SUCCESS) registry.close_provider(key);
    return r;
}

// op & DAT_CLOSE_EXTENSION_BASE: `handle` is the raw provider object the open op returned.
DAT_RETURN close_path(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args) noexcept {
    if (handle == nullptr) return kInvalidIa;
    const DAT_PROVIDER *provider = provider_of(handle);
    if (provider->handle_extendedop_func == nullptr)
        return not_implemented("dat_extension_op(close)", provider);
    const DAT_PROVIDER_INFO key = extension_key(provider->device_name);
    const DAT_RETURN r = provider->handle_extendedop_func(handle, op, args);
    if (r == DAT_SUCCESS) Registry::instance().close_provider(key);
    return r;
}

DAT_RETURN extension_op(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args) noexcept {
    bool object = false;  // a provider object rather than a translated IA
    if (handle != nullptr) {
        const auto value = reinterpret_cast<std::uintptr_t>(handle);
        const IaTable &table = IaTable::instance();
        if (value < table.capacity()) {
            handle = table.lookup(value);
            if (handle == nullptr) return kBadHandle1;
        } else {
            object = true;
        }
        if (!extensions_available()) return kNotImplemented;
    }
    if (op & DAT_OPEN_EXTENSION_BASE) return open_path(op, args);
    // Any other op dereferences the handle: it must be one a registered provider issued.
    if (object && !handles::valid("dat_extension_op", handle)) return kBadHandle1;
    if (op & DAT_CLOSE_EXTENSION_BASE) return close_path(handle, op, args);
    if (handle == nullptr) return kBadHandle1;
    const DAT_PROVIDER *provider = provider_of(handle);
    if (__builtin_expect(provider->handle_extendedop_func == nullptr, 0))
        return not_implemented("dat_extension_op", provider);
    return provider->handle_extendedop_func(handle, op, args);
}

}  // namespace
}  // namespace opendat::dat

extern "C" DAT_RETURN dat_extension_op(DAT_HANDLE handle, DAT_EXTENDED_OP op, ...) {
    va_list args;
    va_start(args, op);
    const DAT_RETURN r = opendat::dat::extension_op(handle, op, args);
    va_end(args);
    return r;
}

// IA lifetime (dat_ia_openv / dat_ia_close, docs/dat-abi.md §5.4 / §5.5), dat_ia_query and
// the IA handle translation export dats_get_ia_handle (§3.2).
#include "ia_dispatch.hpp"
#include "ia_state.hpp"

#include <registry/registry.hpp>
#include <cancel/no_cancel.hpp>

#include <dat2/dat_trace.h>

#include <cstring>

using opendat::registry::Registry;

namespace opendat::dat {
namespace {

DAT_PROVIDER_INFO make_key(const char *name, DAT_UINT32 major, DAT_UINT32 minor,
                           DAT_BOOLEAN thread_safe) noexcept {
    DAT_PROVIDER_INFO key{};
    if (name != nullptr) std::strncpy(key.ia_name, name, DAT_NAME_MAX_LENGTH - 1);
    key.dapl_version_major = major;
    key.dapl_version_minor = minor;
    key.is_thread_safe = thread_safe;
    return key;
}

// The reference's post-open ia_query (§5.4 step 7), widened to the provider-specific
// attributes so we also learn the provider's trace hooks. Its result never affects the open.
void learn_from_new_ia(std::uintptr_t index, DAT_IA_HANDLE raw) noexcept {
    const DAT_PROVIDER *provider = provider_of(raw);
    if (provider->ia_query_func == nullptr) return;
    DAT_IA_ATTR ia_attr{};
    DAT_PROVIDER_ATTR provider_attr{};
    const DAT_RETURN r = provider->ia_query_func(
        raw, nullptr, DAT_IA_FIELD_ALL, &ia_attr,
        DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR | DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR,
        &provider_attr);
    if (r != DAT_SUCCESS) {
        DAT_TRC(trace::kNormal, "api", "dat_ia_openv: post-open ia_query of %s failed: 0x%x",
                provider->device_name ? provider->device_name : "?", r);
        return;
    }
    if (ia_attr.extension_supported != 0) set_extensions_available();

    DAT_TRCLVL_QUERY_FUNC query = nullptr;
    DAT_TRCLVL_MODIFY_FUNC modify = nullptr;
    if (provider_attr.provider_specific_attr != nullptr) {
        for (DAT_COUNT i = 0; i < provider_attr.num_provider_specific_attr; ++i) {
            const DAT_NAMED_ATTR *a = &provider_attr.provider_specific_attr[i];
            if (auto q = dat_trclvl_attr_query(a)) query = q;
            if (auto m = dat_trclvl_attr_modify(a)) modify = m;
        }
    }
    remember_debug_hooks(index, query, modify);
}

DAT_RETURN ia_openv(const char *name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia,
                    DAT_UINT32 major, DAT_UINT32 minor, DAT_BOOLEAN thread_safe) noexcept {
    if (name == nullptr || strnlen(name, DAT_NAME_MAX_LENGTH) >= DAT_NAME_MAX_LENGTH)
        return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    if (ia == nullptr) return kInvalidIa;
    Registry &registry = Registry::instance();
    if (!registry.initialized()) return error(DAT_INVALID_STATE);

    DAT_TRC(trace::kInfo, "api", "dat_ia_openv(%s, %u:%u, %d)", name, major, minor, thread_safe);
    const DAT_PROVIDER_INFO key = make_key(name, major, minor, thread_safe);
    const DAT_PROVIDER *provider = nullptr;
    DAT_RETURN r = registry.open_provider(key, &provider);
    if (r != DAT_SUCCESS) {
        DAT_TRC(trace::kNormal, "api", "dat_ia_openv(%s): no provider: 0x%x", name, r);
        return r;
    }
    if (provider == nullptr || provider->ia_open_func == nullptr) {
        registry.close_provider(key);
        return not_implemented("dat_ia_openv", provider);
    }

    // DAT_NAME_PTR is a non-const char* in the reference typedef; providers do not write to it.
    r = provider->ia_open_func(const_cast<DAT_NAME_PTR>(name), qlen, async_evd, ia);
    if (r != DAT_SUCCESS) {
        DAT_TRC(trace::kNormal, "api", "dat_ia_openv(%s): provider ia_open failed: 0x%x", name, r);
        registry.close_provider(key);
        return r;  // the provider's code, unchanged
    }

    auto raw = static_cast<DAT_IA_HANDLE>(*ia);
    const std::uintptr_t index = raw != nullptr ? IaTable::instance().insert(raw) : 0;
    if (index == 0) {
        // Either the provider returned no IA or the table is out of memory: undo the open.
        if (raw != nullptr && provider_of(raw)->ia_close_func != nullptr)
            provider_of(raw)->ia_close_func(raw, DAT_CLOSE_ABRUPT_FLAG);
        registry.close_provider(key);
        *ia = DAT_HANDLE_NULL;
        return raw != nullptr ? kNoMemory : error(DAT_INTERNAL_ERROR);
    }
    *ia = reinterpret_cast<DAT_IA_HANDLE>(index);
    learn_from_new_ia(index, raw);
    DAT_TRC(trace::kInfo, "api", "dat_ia_openv(%s) -> IA %zu (raw %p)", name,
            static_cast<std::size_t>(index), static_cast<void *>(raw));
    return DAT_SUCCESS;
}

DAT_RETURN ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags) noexcept {
    const auto index = reinterpret_cast<std::uintptr_t>(ia);
    auto raw = static_cast<DAT_IA_HANDLE>(raw_ia(ia));
    if (raw == nullptr) return kInvalidIa;
    const DAT_PROVIDER *provider = provider_of(raw);
    DAT_TRC(trace::kInfo, "api", "dat_ia_close(IA %zu, %s, flags %d)",
            static_cast<std::size_t>(index), provider->device_name ? provider->device_name : "?",
            static_cast<int>(flags));

    if (provider->ia_query_func == nullptr) return not_implemented("dat_ia_close", provider);
    DAT_PROVIDER_ATTR attr{};
    DAT_RETURN r = provider->ia_query_func(raw, nullptr, 0, nullptr, DAT_PROVIDER_FIELD_ALL, &attr);
    if (r != DAT_SUCCESS) return r;

    // The key must be taken before the provider may go away.
    const DAT_PROVIDER_INFO key = make_key(provider->device_name, attr.dapl_version_major,
                                           attr.dapl_version_minor, attr.is_thread_safe);

    if (provider->ia_close_func == nullptr) return not_implemented("dat_ia_close", provider);
    r = provider->ia_close_func(raw, flags);
    if (r != DAT_SUCCESS) return r;

    forget_debug_hooks(index);
    IaTable::instance().release(index);
    handles::forget_all_pages();  // the provider may have returned every child's memory
    r = Registry::instance().close_provider(key);
    if (r != DAT_SUCCESS)
        DAT_TRC(trace::kNormal, "api", "dat_ia_close: registry key %s %u.%u %d not open: 0x%x",
                key.ia_name, key.dapl_version_major, key.dapl_version_minor, key.is_thread_safe, r);
    return r;
}

}  // namespace
}  // namespace opendat::dat

using namespace opendat::dat;

extern "C" {

DAT_RETURN dat_ia_openv(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
                        DAT_IA_HANDLE *ia, DAT_UINT32 major, DAT_UINT32 minor,
                        DAT_BOOLEAN thread_safe) {
    opendat::NoCancel nc;  // the registry reads files and loads libraries
    return ia_openv(name, qlen, async_evd, ia, major, minor, thread_safe);
}

DAT_RETURN dat_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags) {
    opendat::NoCancel nc;
    return ia_close(ia, flags);
}

DAT_RETURN dat_ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK ia_mask,
                        DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK provider_mask,
                        DAT_PROVIDER_ATTR *provider_attr) {
    return forward_ia<&DAT_PROVIDER::ia_query_func>("dat_ia_query", ia, async_evd, ia_mask, ia_attr,
                                                    provider_mask, provider_attr);
}

// Exported for providers (not in any header). Reference semantics, including the reverse
// lookup raw IA -> index that DAPL's ep_query relies on.
DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE handle, DAT_IA_HANDLE *out) {
    if (handle == nullptr) return kInvalidIa;
    if (out == nullptr) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    const IaTable &table = IaTable::instance();
    const auto value = reinterpret_cast<std::uintptr_t>(handle);
    if (value < table.capacity()) {
        void *raw = table.lookup(value);
        if (raw == nullptr) return kInvalidIa;
        *out = static_cast<DAT_IA_HANDLE>(raw);
        return DAT_SUCCESS;
    }
    const std::uintptr_t index = table.reverse(handle);
    if (index == 0) return kInvalidIa;
    *out = reinterpret_cast<DAT_IA_HANDLE>(index);
    return DAT_SUCCESS;
}

DAT_RETURN dat_set_consumer_context(DAT_HANDLE handle, DAT_CONTEXT context) {
    constexpr DAT_RETURN kNull = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (handle == nullptr) return kNull;
    DAT_HANDLE h = generic_handle("dat_set_consumer_context", handle);
    if (h == nullptr) return kNull;
    return call<&DAT_PROVIDER::set_consumer_context_func>("dat_set_consumer_context", h, context);
}

DAT_RETURN dat_get_consumer_context(DAT_HANDLE handle, DAT_CONTEXT *context) {
    constexpr DAT_RETURN kNull = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (handle == nullptr) return kNull;
    DAT_HANDLE h = generic_handle("dat_get_consumer_context", handle);
    if (h == nullptr) return kNull;
    return call<&DAT_PROVIDER::get_consumer_context_func>("dat_get_consumer_context", h, context);
}

DAT_RETURN dat_get_handle_type(DAT_HANDLE handle, DAT_HANDLE_TYPE *type) {
    constexpr DAT_RETURN kNull = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (handle == nullptr) return kNull;
    DAT_HANDLE h = generic_handle("dat_get_handle_type", handle);
    if (h == nullptr) return kNull;
    return call<&DAT_PROVIDER::get_handle_type_func>("dat_get_handle_type", h, type);
}

}  // extern "C"

#include "ia_state.hpp"

#include "dispatch.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

namespace opendat::dat {

namespace {

std::atomic<bool> g_extensions{false};

struct Hooks {
    std::uintptr_t index;
    DAT_TRCLVL_QUERY_FUNC query;
    DAT_TRCLVL_MODIFY_FUNC modify;
};

// Open order matters: dat_trclvl_query(DAPL) asks the first IA that was opened.
// The mutex is also held while a hook runs, so a concurrent dat_ia_close cannot unload
// the provider underneath the call.
struct HookList {
    std::mutex mutex;
    std::vector<Hooks> list;
};
HookList &hooks() noexcept {
    static HookList h;  // function-local: safe however static initialisation is ordered
    return h;
}

}  // namespace

void set_extensions_available() noexcept {
    g_extensions.store(true, std::memory_order_release);
}
bool extensions_available() noexcept {
    return g_extensions.load(std::memory_order_acquire);
}

void remember_debug_hooks(std::uintptr_t index, DAT_TRCLVL_QUERY_FUNC query,
                          DAT_TRCLVL_MODIFY_FUNC modify) noexcept {
    if (query == nullptr && modify == nullptr) return;
    auto &h = hooks();
    std::lock_guard lock(h.mutex);
    try {
        h.list.push_back(Hooks{index, query, modify});
    } catch (...) {
        DAT_TRC(trace::kError, "trclvl", "no memory to remember the debug hooks of IA %zu",
                static_cast<std::size_t>(index));
    }
}

void forget_debug_hooks(std::uintptr_t index) noexcept {
    auto &h = hooks();
    std::lock_guard lock(h.mutex);
    std::erase_if(h.list, [index](const Hooks &x) { return x.index == index; });
}

DAT_RETURN query_provider_level(DAT_UINT32 *level) noexcept {
    auto &h = hooks();
    std::lock_guard lock(h.mutex);
    for (const Hooks &x : h.list)
        if (x.query != nullptr) return x.query(DAT_TRACE_COMPONENT_DAPL, level);
    return error(DAT_INVALID_STATE);
}

DAT_RETURN modify_provider_level(DAT_UINT32 level) noexcept {
    auto &h = hooks();
    std::lock_guard lock(h.mutex);
    DAT_RETURN result = error(DAT_INVALID_STATE);
    bool any = false;
    for (std::size_t i = 0; i < h.list.size(); ++i) {
        DAT_TRCLVL_MODIFY_FUNC fn = h.list[i].modify;
        if (fn == nullptr) continue;
        // Several IAs of one provider share its function: call each function once.
        bool seen = false;
        for (std::size_t j = 0; j < i && !seen; ++j) seen = h.list[j].modify == fn;
        if (seen) continue;
        DAT_RETURN r = fn(DAT_TRACE_COMPONENT_DAPL, level);
        if (!any || (result == DAT_SUCCESS && r != DAT_SUCCESS)) result = r;
        any = true;
    }
    return result;
}

}  // namespace opendat::dat

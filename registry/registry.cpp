// The registry: static entries from the configuration (loaded on demand) and the dynamic
// table providers fill through dat_registry_add_provider.
//
// Locking, two locks, always taken in this order: `loader_mu` (recursive), then `mu`.
//  * `mu` protects all registry state and is held only for short bookkeeping, NEVER while
//    foreign code runs (dlopen, which runs the provider's constructors; dat_provider_init;
//    dat_provider_fini; dlclose): providers call add_provider/remove_provider from
//    init/fini on the same thread, and list/snapshot must not wait for a slow provider.
//  * `loader_mu` is held around every load (dlopen + init) and unload (fini + dlclose), so
//    they are serialised process-wide, as in the reference registry (which holds its lock
//    around them): providers, DAPL's included, assume the dat_provider_init/fini calls of
//    the several IA names one library serves never overlap. It is recursive so that an
//    init may open another entry. A thread that finds an entry not Loaded takes
//    `loader_mu` and re-checks, so it simply waits while another thread loads/unloads.
// Each static entry has a small state machine (Idle -> Loading -> Loaded -> Unloading ->
// Idle); Loading/Unloading are only ever set by the thread holding `loader_mu`, and seeing
// them from that same thread means re-entry from init/fini (refused, no deadlock).
// Static entries are held by shared_ptr so initialize()/shutdown() can drop the registry
// while an entry is in use.
#include "registry/registry.hpp"

#include "config_file.hpp"
#include "config_locator.hpp"
#include "provider_key.hpp"
#include "provider_library.hpp"
#include "status.hpp"
#include "trace/trace.hpp"
#include "tunables/tunables.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>

namespace opendat::registry {
namespace {

struct StaticEntry {
    enum class State { Idle, Loading, Loaded, Unloading };

    DAT_PROVIDER_INFO info{};             // persistent key handed to dat_provider_init/fini
    std::vector<ConfigEntry> candidates;  // same-key entries in file order; immutable once built
    State state = State::Idle;
    int refs = 0;                          // open_provider references (Loaded only)
    std::unique_ptr<ProviderLibrary> lib;  // set while Loaded
};
using EntryPtr = std::shared_ptr<StaticEntry>;

struct DynamicEntry {
    DAT_PROVIDER_INFO info{};
    const DAT_PROVIDER *provider = nullptr;
    int refs = 0;
};

// Before loading a provider whose YAML entry sets trace_level: providers read
// DAPL_TRACE_LEVEL when their trace module is constructed, i.e. during dlopen, so the only
// channel is the environment. An explicit DAPL_TRACE_LEVEL from the user wins. The variable
// then stays set for the rest of the process (and providers loaded later).
void apply_trace_level(const ConfigEntry &c) {
    const char *name = tunables::kDaplTraceLevel.name;
    if (c.trace_level < 0 || std::getenv(name)) return;
    const std::string v = std::to_string(c.trace_level);
    if (setenv(name, v.c_str(), 0) == 0)
        DAT_TRC(trace::kNormal, "registry", "ia '%s': DAPL_TRACE_LEVEL=%s from %s:%d",
                c.ia_name.c_str(), v.c_str(), c.file.c_str(), c.line);
}

std::string where(const ConfigEntry &e) {
    return e.file + ":" + std::to_string(e.line);
}

// "ia 'x': /lib/libfoo.so: cannot open shared object file: ..." (dlerror texts already
// start with the path; other reasons get it prefixed).
void trace_failures(int level, const std::string &name, const std::vector<LoadFailure> &why) {
    for (const auto &f : why) {
        const bool prefixed = f.library.empty() || f.reason.starts_with(f.library);
        DAT_TRC(level, "registry", "ia '%s': %s%s%s", name.c_str(),
                prefixed ? "" : f.library.c_str(), prefixed ? "" : ": ", f.reason.c_str());
    }
}

}  // namespace

struct Registry::Impl {
    std::recursive_mutex loader_mu;  // serialises dlopen+init / fini+dlclose (see top); before mu
    mutable std::mutex mu;
    bool initialized = false;
    ConfigSnapshot snap;
    std::vector<EntryPtr> entries;  // the static registry: one per key, in file order
    std::vector<EntryPtr>
        retired;  // dropped by initialize()/shutdown() but still busy or referenced
    std::vector<DynamicEntry> dynamic;
    std::map<std::string, std::vector<LoadFailure>> failures;  // by IA name, last open only

    EntryPtr find_static(const DAT_PROVIDER_INFO &key) const {
        for (const auto &e : entries)
            if (same_key(e->info, key)) return e;
        return nullptr;
    }
    // The entry a close_provider() refers to: the open one, current generation first.
    EntryPtr find_open_static(const DAT_PROVIDER_INFO &key) const {
        for (const auto *list : {&entries, &retired})
            for (const auto &e : *list)
                if (e->state == StaticEntry::State::Loaded && e->refs > 0 && same_key(e->info, key))
                    return e;
        return nullptr;
    }
    DynamicEntry *find_dynamic(const DAT_PROVIDER_INFO &key) {
        for (auto &d : dynamic)
            if (same_key(d.info, key)) return &d;
        return nullptr;
    }
    void prune_retired() {
        std::erase_if(retired, [](const EntryPtr &e) {
            return e->state == StaticEntry::State::Idle && e->refs == 0;
        });
    }
    void retire_all() {
        for (auto &e : entries)
            if (e->state != StaticEntry::State::Idle || e->refs > 0) retired.push_back(e);
        entries.clear();
    }

    // Takes one reference on `e`, loading it (dlopen + dat_provider_init) on 0 -> 1.
    // Called and returns with `lk` held; drops it while foreign code runs.
    // `loaded` tells whether this call did the load (so `why` describes the entry's state).
    bool acquire(std::unique_lock<std::mutex> &lk, StaticEntry &e, std::vector<LoadFailure> &why,
                 bool &loaded);
    // Drops one reference; on 1 -> 0 calls dat_provider_fini and dlcloses (lock dropped meanwhile).
    void release(std::unique_lock<std::mutex> &lk, StaticEntry &e);
    // Explains a name that has no static entry for the key (for last_failures()).
    std::string explain_missing(const DAT_PROVIDER_INFO &key) const;
};

bool Registry::Impl::acquire(std::unique_lock<std::mutex> &lk, StaticEntry &e,
                             std::vector<LoadFailure> &why, bool &loaded) {
    using State = StaticEntry::State;
    loaded = false;
    if (e.state == State::Loaded) {  // fast path: no loader lock
        ++e.refs;
        return true;
    }
    // Not loaded, or another thread is busy with it: queue on the loader lock, then re-check.
    lk.unlock();
    std::unique_lock loading(loader_mu);
    lk.lock();
    if (e.state == State::Loaded) {
        ++e.refs;
        return true;
    }
    if (e.state != State::Idle) {  // Loading/Unloading while we hold loader_mu: it is us
        why.push_back({"", "re-entrant open from inside dat_provider_init/fini of the same entry"});
        return false;
    }
    e.state = State::Loading;
    loaded = true;
    lk.unlock();  // candidates and info are immutable: safe to read unlocked

    std::unique_ptr<ProviderLibrary> lib;
    const ConfigEntry *used = nullptr;
    try {  // an allocation failure here must not leave the entry stuck in Loading
        const std::string name = key_name(e.info);
        for (const auto &c : e.candidates) {
            apply_trace_level(c);
            std::string error;
            lib = ProviderLibrary::open(c.library, error);
            if (!lib) {
                DAT_TRC(trace::kDetail, "registry", "ia '%s': candidate %s failed", name.c_str(),
                        where(c).c_str());
                why.push_back({c.library, error});  // traced by open_provider
                continue;
            }
            used = &c;
            DAT_TRC(trace::kNormal, "registry", "ia '%s': loaded %s (%s)", name.c_str(),
                    c.library.c_str(), where(c).c_str());
            lib->init(&e.info, c.ia_params.c_str());
            break;  // like the reference: the first library that dlopens is the one used
        }
    } catch (...) {
        DAT_TRC(trace::kError, "registry", "out of memory while loading a provider");
    }

    lk.lock();
    if (lib && used) {
        e.lib = std::move(lib);
        e.state = State::Loaded;
        e.refs = 1;
    } else {
        e.state = State::Idle;
        prune_retired();  // a retired entry that failed to load is finished with
    }
    return e.state == State::Loaded;
}

void Registry::Impl::release(std::unique_lock<std::mutex> &lk, StaticEntry &e) {
    if (--e.refs > 0) return;
    lk.unlock();
    std::unique_lock unloading(loader_mu);
    lk.lock();
    // Between the two locks another thread may have re-opened it (refs > 0, keep it) or
    // opened and closed it and unloaded it already (Idle).
    if (e.refs > 0 || e.state != StaticEntry::State::Loaded) return;
    e.state = StaticEntry::State::Unloading;
    std::unique_ptr<ProviderLibrary> lib = std::move(e.lib);
    lk.unlock();
    DAT_TRC(trace::kNormal, "registry", "ia '%s': unloading %s", e.info.ia_name,
            lib->path().c_str());
    lib.reset();  // dat_provider_fini (which usually calls remove_provider), then dlclose
    lk.lock();
    e.state = StaticEntry::State::Idle;
    prune_retired();
}

std::string Registry::Impl::explain_missing(const DAT_PROVIDER_INFO &key) const {
    const std::string name = key_name(key);
    std::string why = "no static-registry entry for " + describe_key(key);
    if (snap.path.empty() || !snap.opened) return why + " (no configuration file was read)";
    for (const auto &c : snap.entries) {
        if (c.ia_name != name) continue;
        if (!c.loadable)
            return why + "; " + where(c) + " has '" + name + "' as a " + c.not_loaded_reason +
                   ", not loaded";
        return why + "; " + where(c) + " has '" + name + "' as u" + std::to_string(c.api_major) +
               "." + std::to_string(c.api_minor) +
               (c.thread_safe ? " threadsafe" : " nonthreadsafe");
    }
    return why + " in " + snap.path;
}

Registry::Registry() noexcept : impl_(new (std::nothrow) Impl) {}

void mark_loadable(ConfigEntry &c) noexcept {
    if (!c.user_level) {
        c.loadable = false;
        c.not_loaded_reason = "kernel-level (k) entry";
    } else if (!c.is_default) {
        c.loadable = false;
        c.not_loaded_reason = "nondefault entry";
    }
}

Registry &Registry::instance() noexcept {
    // Constructed in static storage and deliberately never destroyed: providers may call
    // remove_provider from their own destructors during exit, after ordinary statics
    // would have been torn down.
    alignas(Registry) static unsigned char storage[sizeof(Registry)];
    static Registry *r = new (storage) Registry;
    return *r;
}

void Registry::initialize() noexcept {
    if (!impl_) return;
    try {
        LocatorResult loc = locate_config(current_locator_inputs());
        ConfigSnapshot snap;
        snap.path = loc.path;
        snap.reason = loc.reason;
        for (const auto &note : loc.notes)
            DAT_TRC(trace::kNormal, "registry", "%s",
                    note.c_str());  // a failure is also a diagnostic below
        if (loc.found) {
            DAT_TRC(trace::kNormal, "registry", "using config file %s (%s)", loc.path.c_str(),
                    loc.reason.c_str());
            FileParse fp = read_config_file(loc.path);
            snap.opened = fp.opened;
            snap.entries = std::move(fp.result.entries);
            snap.diagnostics = std::move(fp.result.diagnostics);
        } else if (!loc.path.empty() || loc.reason == "DAT_OVERRIDE") {
            // Also when DAT_OVERRIDE is set but empty: every open would then fail, so say why.
            snap.diagnostics.push_back(
                ConfigDiagnostic{loc.path, 0, "file", unread_config_message(loc)});
        }
        for (const auto &d : snap.diagnostics)
            DAT_TRC(d.warning ? trace::kWarn : trace::kError, "registry", "%s:%d: %s: %s%s",
                    d.file.c_str(), d.line, d.field.c_str(), d.message.c_str(),
                    d.warning || d.field == "file" ? "" : " (entry skipped)");

        // Only 'u' + default entries enter the static registry; same keys are chained.
        std::vector<EntryPtr> entries;
        for (auto &c : snap.entries) {
            mark_loadable(c);
            if (!c.loadable) {
                DAT_TRC(trace::kDetail, "registry", "%s: '%s' is a %s: not loaded",
                        where(c).c_str(), c.ia_name.c_str(), c.not_loaded_reason.c_str());
                continue;
            }
            const DAT_PROVIDER_INFO key = key_of(c);
            auto it = std::find_if(entries.begin(), entries.end(),
                                   [&](const EntryPtr &e) { return same_key(e->info, key); });
            if (it == entries.end()) {
                auto e = std::make_shared<StaticEntry>();
                e->info = key;
                entries.push_back(std::move(e));
                it = entries.end() - 1;
            } else {
                DAT_TRC(trace::kDetail, "registry", "%s: duplicate '%s' chained behind %s",
                        where(c).c_str(), c.ia_name.c_str(),
                        where((*it)->candidates.front()).c_str());
            }
            (*it)->candidates.push_back(c);
        }
        DAT_TRC(trace::kNormal, "registry",
                "%zu entries read, %zu in the static registry, %zu diagnostics",
                snap.entries.size(), entries.size(), snap.diagnostics.size());

        std::lock_guard lk(impl_->mu);
        impl_->retire_all();
        impl_->entries = std::move(entries);
        impl_->snap = std::move(snap);
        impl_->failures.clear();
        impl_->initialized = true;
    } catch (const std::exception &ex) {
        DAT_TRC(trace::kError, "registry", "initialize failed: %s", ex.what());
    } catch (...) {
        DAT_TRC(trace::kError, "registry", "initialize failed");
    }
}

void Registry::shutdown() noexcept {
    if (!impl_) return;
    try {
        std::lock_guard lk(impl_->mu);
        impl_->retire_all();
        impl_->initialized = false;
    } catch (...) {
        // retire_all may fail to allocate; the registry then simply stays as it was
    }
    DAT_TRC(trace::kDetail, "registry", "shut down");
}

bool Registry::initialized() const noexcept {
    if (!impl_) return false;
    std::lock_guard lk(impl_->mu);
    return impl_->initialized;
}

DAT_RETURN Registry::open_provider(const DAT_PROVIDER_INFO &key,
                                   const DAT_PROVIDER **provider) noexcept {
    if (!provider) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    *provider = nullptr;
    if (!impl_) return dat_error(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    try {
        std::unique_lock lk(impl_->mu);
        if (!impl_->initialized) return dat_error(DAT_INVALID_STATE);
        const std::string name = key_name(key);
        std::vector<LoadFailure> why;

        // 1. Static registry (a failure here is not final: the provider may be registered anyway).
        EntryPtr entry = impl_->find_static(key);
        bool loaded_now = false;
        const bool held = entry && impl_->acquire(lk, *entry, why, loaded_now);
        if (!entry) why.push_back({"", impl_->explain_missing(key)});

        // 2. Dynamic registry.
        if (DynamicEntry *d = impl_->find_dynamic(key)) {
            ++d->refs;
            *provider = d->provider;
            // After a load, keep why earlier candidates were skipped (datinfo shows it).
            if (loaded_now) {
                trace_failures(trace::kWarn, name, why);
                impl_->failures[name] = std::move(why);
            }
            DAT_TRC(trace::kDetail, "registry", "open %s: provider %p", describe_key(key).c_str(),
                    static_cast<const void *>(d->provider));
            return DAT_SUCCESS;
        }
        if (held) {
            why.push_back(
                {entry->lib->path(),
                 entry->lib->has_init()
                     ? "dat_provider_init ran but registered no provider for " + describe_key(key)
                     : "loaded, but it has no dat_provider_init entry point, so no provider was "
                       "registered"});
            // Unlike the reference (which keeps the library loaded), give the reference back.
            impl_->release(lk, *entry);
        } else if (entry && why.empty()) {
            why.push_back({"", "no library could be loaded"});
        }
        trace_failures(trace::kError, name, why);
        impl_->failures[name] = std::move(why);
        return kNotFound;
    } catch (...) {
        DAT_TRC(trace::kError, "registry", "open_provider: out of memory");
        return dat_error(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    }
}

DAT_RETURN Registry::close_provider(const DAT_PROVIDER_INFO &key) noexcept {
    if (!impl_) return kNotFound;
    try {
        std::unique_lock lk(impl_->mu);
        bool had_dynamic = false;
        if (DynamicEntry *d = impl_->find_dynamic(key); d && d->refs > 0) {
            --d->refs;  // first, so that the provider's fini can remove_provider
            had_dynamic = true;
        }
        EntryPtr entry = impl_->find_open_static(key);
        if (!entry) {
            // A provider registered without a static entry (none was loaded for it).
            if (had_dynamic) return DAT_SUCCESS;
            DAT_TRC(trace::kError, "registry", "close %s: not open", describe_key(key).c_str());
            return kNotFound;
        }
        impl_->release(lk, *entry);
        return DAT_SUCCESS;
    } catch (...) {
        return dat_error(DAT_INTERNAL_ERROR);
    }
}

DAT_RETURN Registry::add_provider(const DAT_PROVIDER *provider,
                                  const DAT_PROVIDER_INFO *info) noexcept {
    if (!provider) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    // The reference crashes on a NULL info; an error code is kinder.
    if (!info) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!impl_) return dat_error(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    try {
        std::lock_guard lk(impl_->mu);
        if (!impl_->initialized) return dat_error(DAT_INVALID_STATE);
        if (impl_->find_dynamic(*info)) {
            DAT_TRC(trace::kWarn, "registry", "add_provider %s: already registered",
                    describe_key(*info).c_str());
            return dat_error(DAT_PROVIDER_ALREADY_REGISTERED);
        }
        DynamicEntry d;
        d.info = *info;
        d.info.ia_name[DAT_NAME_MAX_LENGTH - 1] =
            '\0';  // same_key bounds it anyway; keeps traces safe
        d.provider = provider;
        impl_->dynamic.push_back(d);
        DAT_TRC(trace::kDetail, "registry", "add_provider %s: provider %p",
                describe_key(*info).c_str(), static_cast<const void *>(provider));
        return DAT_SUCCESS;
    } catch (...) {
        return dat_error(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    }
}

DAT_RETURN Registry::remove_provider(const DAT_PROVIDER *provider,
                                     const DAT_PROVIDER_INFO *info) noexcept {
    if (!provider) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    if (!info) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!impl_) return kNotFound;
    try {
        // Allowed after shutdown(): a provider finalised late must still be able to unregister.
        std::lock_guard lk(impl_->mu);
        auto it = std::find_if(impl_->dynamic.begin(), impl_->dynamic.end(),
                               [&](const DynamicEntry &d) { return same_key(d.info, *info); });
        if (it == impl_->dynamic.end()) {
            DAT_TRC(trace::kWarn, "registry", "remove_provider %s: not registered",
                    describe_key(*info).c_str());
            return kNotFound;
        }
        if (it->refs > 0) return dat_error(DAT_PROVIDER_IN_USE);
        impl_->dynamic.erase(it);
        DAT_TRC(trace::kDetail, "registry", "remove_provider %s", describe_key(*info).c_str());
        return DAT_SUCCESS;
    } catch (...) {
        return dat_error(DAT_INTERNAL_ERROR);
    }
}

DAT_RETURN Registry::list_providers(DAT_COUNT max, DAT_COUNT *count,
                                    DAT_PROVIDER_INFO *list[]) noexcept {
    if (!count) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (max < 0) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    if (max > 0 && !list) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (!impl_) return dat_error(DAT_INVALID_STATE);
    std::lock_guard lk(impl_->mu);
    if (!impl_->initialized) return dat_error(DAT_INVALID_STATE);
    const auto total = static_cast<DAT_COUNT>(impl_->entries.size());
    if (max == 0) {
        *count = total;  // the spec wants the size reported *and* an error returned
        return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    }
    const DAT_COUNT n = std::min(max, total);
    for (DAT_COUNT i = 0; i < n; ++i)
        if (!list[i]) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    for (DAT_COUNT i = 0; i < n; ++i) *list[i] = impl_->entries[static_cast<std::size_t>(i)]->info;
    *count = n;
    return DAT_SUCCESS;
}

ConfigSnapshot Registry::snapshot() const {
    try {
        if (!impl_) return {};
        std::lock_guard lk(impl_->mu);
        return impl_->snap;
    } catch (...) {
        return {};
    }
}

std::vector<LoadFailure> Registry::last_failures(const std::string &ia_name) const {
    try {
        if (!impl_) return {};
        std::lock_guard lk(impl_->mu);
        auto it = impl_->failures.find(ia_name);
        return it == impl_->failures.end() ? std::vector<LoadFailure>{} : it->second;
    } catch (...) {
        return {};
    }
}

}  // namespace opendat::registry

// The DAT registry: the static registry (entries read from dat.conf / YAML, each naming a
// provider library that is loaded on first use) and the dynamic registry (providers that
// called dat_registry_add_provider). This is the interface libdat2's front end uses.
//
// Keys are DAT_PROVIDER_INFO 4-tuples: IA name, API major, API minor, thread safety.
// All members are thread-safe. No member throws.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <string>
#include <vector>

#include <cstddef>

namespace opendat::registry {

// Why one candidate library of a static entry could not be used.
struct LoadFailure {
    std::string library;  // path or name as written in the configuration
    std::string reason;   // dlerror() text, "missing entry point dat_provider_init", ...
};

// One problem the configuration parser found; the offending entry was skipped.
struct ConfigDiagnostic {
    std::string file;
    int line = 0;
    std::string field;  // "ia_name", "api_version", "thread_safety", "default",
                        // "library", "provider_version", "ia_params", "platform_params", ...
    std::string message;
    // Warnings (e.g. an unknown YAML key) do not cause the entry to be skipped.
    bool warning = false;
};

// One parsed entry (every field of the classic 8-field record, plus YAML-only settings).
struct ConfigEntry {
    std::string ia_name;
    bool user_level = true;  // 'u' (true) or 'k' (false)
    DAT_UINT32 api_major = 0;
    DAT_UINT32 api_minor = 0;
    bool thread_safe = false;
    bool is_default = true;
    std::string library;
    std::string provider_id;  // "dapl" of "dapl.2.0"
    DAT_UINT32 provider_major = 0;
    DAT_UINT32 provider_minor = 0;
    std::string ia_params;
    std::string platform_params;
    int trace_level = -1;  // YAML: initial provider trace level, -1 = not set
    std::vector<std::pair<std::string, std::string>> settings;  // YAML: provider parameters
    std::string file;                                           // where the entry came from
    int line = 0;
    // Only 'u' + default entries enter the static registry; 'k' and nondefault entries are
    // parsed, kept here for datinfo, and never loaded. Set by the registry when it reads them.
    bool loadable = true;
    std::string not_loaded_reason;  // "kernel-level (k) entry", "nondefault entry"
};

// Applies the registry's rule to an entry it read: only 'u' + default entries enter the
// static registry; the others get loadable = false and the reason. datinfo reports with
// the same rule.
void mark_loadable(ConfigEntry &c) noexcept;

// What the registry read, from where, and why that file.
struct ConfigSnapshot {
    std::string path;     // the file read ("" when none)
    std::string reason;   // "DAT_OVERRIDE", "build tree", "installed default", "reference default"
    bool opened = false;  // false: file missing or unreadable (see diagnostics)
    std::vector<ConfigEntry> entries;  // every well-formed entry, in file order
    std::vector<ConfigDiagnostic> diagnostics;
};

class Registry {
  public:
    static Registry &instance() noexcept;

    // Reads the active configuration into the static registry. libdat2's constructor calls
    // this once; calling it again re-reads (tests use that after changing DAT_OVERRIDE).
    void initialize() noexcept;
    // Drops the static registry (libdat2's destructor). Libraries still referenced stay loaded.
    void shutdown() noexcept;
    bool initialized() const noexcept;

    // dat_ia_openv's lookup: opens the static entry for `key` (dlopen + dat_provider_init when
    // its reference count goes 0 -> 1; other same-key entries are tried in file order if a
    // library fails), then looks `key` up in the dynamic registry. On success *provider is
    // the registered table and one reference is held until close_provider(). On failure
    // nothing is held and the result is DAT_PROVIDER_NOT_FOUND|DAT_NAME_NOT_REGISTERED (or
    // DAT_INVALID_STATE when not initialised); the reasons are kept for last_failures().
    DAT_RETURN open_provider(const DAT_PROVIDER_INFO &key, const DAT_PROVIDER **provider) noexcept;

    // Releases one reference taken by open_provider(); when the last goes, calls
    // dat_provider_fini and dlcloses the library. DAT_PROVIDER_NOT_FOUND|NAME_NOT_REGISTERED
    // if `key` is not open. (A provider registered without a static entry — e.g. by hand —
    // is closed with DAT_SUCCESS: only its dynamic reference is dropped.)
    //
    // Threading (see registry.cpp): loads and unloads are serialised process-wide, and no
    // registry lock is held while provider code runs, so dat_provider_init/fini may call
    // add_provider/remove_provider, and may open/close *other* IA names; an init/fini that
    // opens its own IA name gets DAT_PROVIDER_NOT_FOUND instead of a deadlock.
    DAT_RETURN close_provider(const DAT_PROVIDER_INFO &key) noexcept;

    // The dynamic registry, with the reference semantics (see docs/dat-abi.md §5.2).
    DAT_RETURN add_provider(const DAT_PROVIDER *provider, const DAT_PROVIDER_INFO *info) noexcept;
    DAT_RETURN remove_provider(const DAT_PROVIDER *provider,
                               const DAT_PROVIDER_INFO *info) noexcept;
    // dat_registry_list_providers: static-registry entries ('u' and default) in file order.
    DAT_RETURN list_providers(DAT_COUNT max, DAT_COUNT *count, DAT_PROVIDER_INFO *list[]) noexcept;

    // Diagnostics for datinfo, traces and error messages.
    ConfigSnapshot snapshot() const;
    std::vector<LoadFailure> last_failures(const std::string &ia_name) const;

    struct Impl;  // registry.cpp

  private:
    Registry() noexcept;
    Registry(const Registry &) = delete;
    Registry &operator=(const Registry &) = delete;
    Impl *impl_;  // never freed: providers may call in from their destructors at process exit
};

}  // namespace opendat::registry

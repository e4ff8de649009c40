// One dlopen()ed provider library of one static-registry entry (RAII). Opening it calls
// dat_provider_init; destroying it calls dat_provider_fini and then dlclose.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <memory>
#include <string>

namespace opendat::registry {

class ProviderLibrary {
  public:
    // dlopen(path, RTLD_NOW|RTLD_GLOBAL) and look up the entry points. GLOBAL is required:
    // providers (e.g. Debian's libdaplofa.so.2) resolve dat_registry_add_provider from the
    // global scope. On failure returns null and sets `error` to the reason.
    static std::unique_ptr<ProviderLibrary> open(const std::string &path,
                                                 std::string &error) noexcept;

    ~ProviderLibrary();
    ProviderLibrary(const ProviderLibrary &) = delete;
    ProviderLibrary &operator=(const ProviderLibrary &) = delete;

    bool has_init() const noexcept { return init_ != nullptr; }
    bool has_fini() const noexcept { return fini_ != nullptr; }
    const std::string &path() const noexcept { return path_; }

    // Calls dat_provider_init(info, instance_data) if the library has it (the reference
    // calls nothing otherwise). `info` must stay valid until this object is destroyed: it
    // is what dat_provider_fini receives. The provider typically calls
    // dat_registry_add_provider from inside, so the caller must not hold registry locks.
    void init(const DAT_PROVIDER_INFO *info, const char *instance_data) noexcept;

  private:
    ProviderLibrary(void *handle, std::string path) noexcept
        : handle_(handle), path_(std::move(path)) {}

    void *handle_;
    std::string path_;
    DAT_PROVIDER_INIT_FUNC init_ = nullptr;
    DAT_PROVIDER_FINI_FUNC fini_ = nullptr;
    const DAT_PROVIDER_INFO *initialized_with_ = nullptr;  // set once init ran
};

}  // namespace opendat::registry

#include "provider_library.hpp"

#include "trace/trace.hpp"

#include <dlfcn.h>

namespace opendat::registry {
namespace {

// "<directory of the module holding this code>/opendat/<name>" for a bare name, else "".
std::string provider_dir_candidate(const std::string &name) {
    if (name.empty() || name.find('/') != std::string::npos) return {};
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&provider_dir_candidate), &info) == 0 || !info.dli_fname)
        return {};
    std::string self = info.dli_fname;
    auto slash = self.rfind('/');
    if (slash == std::string::npos) return {};
    return self.substr(0, slash) + "/opendat/" + name;
}

}  // namespace

std::unique_ptr<ProviderLibrary> ProviderLibrary::open(const std::string &path,
                                                       std::string &error) noexcept {
    try {
        dlerror();  // clear any stale message
        void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (!h) {
            const char *msg = dlerror();
            error = msg ? msg : path + ": dlopen failed";
            // A bare file name the dynamic linker cannot find may be one of our providers:
            // try the provider directory next to libdat2 (lib/opendat/), so that a
            // relocated installation works with a dat.conf that names providers by name.
            std::string fallback = provider_dir_candidate(path);
            if (fallback.empty()) return nullptr;
            dlerror();
            h = dlopen(fallback.c_str(), RTLD_NOW | RTLD_GLOBAL);
            if (!h) {
                const char *msg2 = dlerror();
                error += "; " + (msg2 ? std::string(msg2) : fallback + ": dlopen failed");
                return nullptr;
            }
            DAT_TRC(trace::kDetail, "registry", "%s: found as %s", path.c_str(), fallback.c_str());
        }
        std::unique_ptr<ProviderLibrary> lib(new ProviderLibrary(h, path));
        // The casts from void* to function pointers are what POSIX dlsym requires.
        lib->init_ = reinterpret_cast<DAT_PROVIDER_INIT_FUNC>(dlsym(h, DAT_PROVIDER_INIT_FUNC_STR));
        lib->fini_ = reinterpret_cast<DAT_PROVIDER_FINI_FUNC>(dlsym(h, DAT_PROVIDER_FINI_FUNC_STR));
        dlerror();
        DAT_TRC(trace::kDetail, "registry", "%s: loaded (init %s, fini %s)", path.c_str(),
                lib->init_ ? "present" : "missing", lib->fini_ ? "present" : "missing");
        return lib;
    } catch (...) {
        error = path + ": out of memory";
        return nullptr;
    }
}

void ProviderLibrary::init(const DAT_PROVIDER_INFO *info, const char *instance_data) noexcept {
    if (!init_) {
        DAT_TRC(trace::kDetail, "registry",
                "%s: no " DAT_PROVIDER_INIT_FUNC_STR " entry point, nothing called", path_.c_str());
        return;
    }
    DAT_TRC(trace::kDetail, "registry", "%s: calling " DAT_PROVIDER_INIT_FUNC_STR "('%s', \"%s\")",
            path_.c_str(), info->ia_name, instance_data);
    initialized_with_ = info;
    init_(info, instance_data);
}

ProviderLibrary::~ProviderLibrary() {
    if (initialized_with_ && fini_) {
        DAT_TRC(trace::kDetail, "registry", "%s: calling " DAT_PROVIDER_FINI_FUNC_STR "('%s')",
                path_.c_str(), initialized_with_->ia_name);
        fini_(initialized_with_);
    }
    if (dlclose(handle_) != 0) {
        const char *msg = dlerror();
        DAT_TRC(trace::kWarn, "registry", "dlclose(%s): %s", path_.c_str(), msg ? msg : "failed");
    }
}

}  // namespace opendat::registry

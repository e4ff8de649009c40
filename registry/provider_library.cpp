#include "provider_library.hpp"

#include "trace/trace.hpp"

#include <dlfcn.h>

namespace opendat::registry {

std::unique_ptr<ProviderLibrary> ProviderLibrary::open(const std::string &path, std::string &error) noexcept {
    try {
        dlerror();  // clear any stale message
        void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (!h) {
            const char *msg = dlerror();
            error = msg ? msg : path + ": dlopen failed";
            return nullptr;
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
        DAT_TRC(trace::kDetail, "registry", "%s: no " DAT_PROVIDER_INIT_FUNC_STR " entry point, nothing called",
                path_.c_str());
        return;
    }
    DAT_TRC(trace::kDetail, "registry", "%s: calling " DAT_PROVIDER_INIT_FUNC_STR "('%s', \"%s\")", path_.c_str(),
            info->ia_name, instance_data);
    initialized_with_ = info;
    init_(info, instance_data);
}

ProviderLibrary::~ProviderLibrary() {
    if (initialized_with_ && fini_) {
        DAT_TRC(trace::kDetail, "registry", "%s: calling " DAT_PROVIDER_FINI_FUNC_STR "('%s')", path_.c_str(),
                initialized_with_->ia_name);
        fini_(initialized_with_);
    }
    if (dlclose(handle_) != 0) {
        const char *msg = dlerror();
        DAT_TRC(trace::kWarn, "registry", "dlclose(%s): %s", path_.c_str(), msg ? msg : "failed");
    }
}

}  // namespace opendat::registry

#include "config_locator.hpp"
#include "tunables/tunables.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#ifndef OPENDAT_BUILD_CONF
#define OPENDAT_BUILD_CONF ""
#endif
#ifndef OPENDAT_BUILD_LIB_DIR
#define OPENDAT_BUILD_LIB_DIR ""
#endif
#ifndef OPENDAT_LIBDIR_TO_CONF
#define OPENDAT_LIBDIR_TO_CONF ""
#endif
#ifndef OPENDAT_INSTALLED_CONF
#define OPENDAT_INSTALLED_CONF "/etc/dat.conf"
#endif

namespace opendat::registry {
namespace {

// Directories compared after resolving symlinks and "..", so /build/lib/../lib matches.
bool same_dir(const std::string &a, const std::string &b) {
    if (a.empty() || b.empty()) return false;
    std::error_code ec1, ec2;
    auto ca = std::filesystem::weakly_canonical(a, ec1);
    auto cb = std::filesystem::weakly_canonical(b, ec2);
    if (ec1 || ec2) return a == b;
    return ca == cb;
}

}  // namespace

LocatorResult locate_config(const LocatorInputs &in) {
    LocatorResult r;
    if (in.dat_override) {
        if (in.setuid) {
            r.notes.push_back("DAT_OVERRIDE ignored in a setuid/setgid program");
        } else {
            // Like the reference: a bad DAT_OVERRIDE is an error, never a silent fallback.
            r.path = *in.dat_override;
            r.reason = "DAT_OVERRIDE";
            r.found = in.readable(r.path);
            if (!r.found) r.notes.push_back("DAT_OVERRIDE, bad filename - " + r.path);
            return r;
        }
    }
    if (same_dir(in.module_dir, in.build_lib_dir)) {
        if (in.readable(in.build_conf)) {
            r.path = in.build_conf;
            r.reason = "build tree";
            r.found = true;
            return r;
        }
        r.notes.push_back("running from the build tree but " + in.build_conf + " is missing");
    }
    if (!in.libdir_to_conf.empty() && !in.module_dir.empty() &&
        !same_dir(in.module_dir, in.build_lib_dir)) {
        std::error_code ec;
        auto relocated = std::filesystem::weakly_canonical(
                             std::filesystem::path(in.module_dir) / in.libdir_to_conf, ec)
                             .string();
        if (!ec && relocated != in.installed_conf && in.readable(relocated)) {
            r.path = relocated;
            r.reason = "installed (relocated)";
            r.found = true;
            return r;
        }
    }
    if (!in.installed_conf.empty() && in.readable(in.installed_conf)) {
        r.path = in.installed_conf;
        r.reason = "installed default";
        r.found = true;
        return r;
    }
    if (in.reference_conf != in.installed_conf && in.readable(in.reference_conf)) {
        r.path = in.reference_conf;
        r.reason = "reference default";
        r.found = true;
        return r;
    }
    r.path = in.installed_conf.empty() ? in.reference_conf : in.installed_conf;
    r.reason = in.installed_conf.empty() ? "reference default" : "installed default";
    r.notes.push_back(
        "no configuration file found (tried " + in.installed_conf +
        (in.reference_conf != in.installed_conf ? " and " + in.reference_conf : std::string()) +
        ")");
    return r;
}

LocatorInputs current_locator_inputs() {
    // The module that contains this function: libdat2 in production, the test binary in tests.
    LocatorInputs (*self)() = &current_locator_inputs;
    return current_locator_inputs(reinterpret_cast<const void *>(self));
}

LocatorInputs current_locator_inputs(const void *address_in_module) {
    LocatorInputs in;
    if (const char *v = std::getenv(tunables::kDatOverride.name)) in.dat_override = v;
    in.setuid = getuid() != geteuid() || getgid() != getegid();
    Dl_info info{};
    if (address_in_module != nullptr && dladdr(address_in_module, &info) != 0 && info.dli_fname) {
        std::error_code ec;
        auto p = std::filesystem::weakly_canonical(info.dli_fname, ec);
        in.module_dir = (ec ? std::filesystem::path(info.dli_fname) : p).parent_path().string();
    }
    in.build_lib_dir = OPENDAT_BUILD_LIB_DIR;
    in.build_conf = OPENDAT_BUILD_CONF;
    in.installed_conf = OPENDAT_INSTALLED_CONF;
    in.libdir_to_conf = OPENDAT_LIBDIR_TO_CONF;
    in.readable = [](const std::string &path) {
        return !path.empty() && access(path.c_str(), R_OK) == 0;
    };
    return in;
}

std::string unread_config_message(const LocatorResult &r) {
    if (r.reason != "DAT_OVERRIDE") return "configuration file not found";
    return r.path.empty() ? "DAT_OVERRIDE is set but empty: no file is read"
                          : "DAT_OVERRIDE, bad filename - " + r.path;
}

}  // namespace opendat::registry

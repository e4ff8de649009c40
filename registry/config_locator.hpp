// Which configuration file libdat2 reads, and why (docs/configuration.md "Lookup order").
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace opendat::registry {

struct LocatorInputs {
    std::optional<std::string> dat_override;  // DAT_OVERRIDE, if set
    bool setuid = false;                      // getuid() != geteuid(): DAT_OVERRIDE is ignored
    std::string module_dir;                   // directory libdat2 (this code) was loaded from
    std::string build_lib_dir;                // OPENDAT_BUILD_LIB_DIR
    std::string build_conf;                   // OPENDAT_BUILD_CONF
    std::string installed_conf;               // OPENDAT_INSTALLED_CONF
    // OPENDAT_LIBDIR_TO_CONF: the installed dat.conf relative to the installed library
    // directory (e.g. "../../etc/dat.conf"), so an installation moved or installed with
    // `cmake --install --prefix` still finds its own dat.conf. Empty: not used.
    std::string libdir_to_conf;
    std::string reference_conf = "/etc/dat.conf";
    std::function<bool(const std::string &)> readable;  // can this file be opened?
};

struct LocatorResult {
    std::string path;    // "" when no candidate exists
    std::string reason;  // "DAT_OVERRIDE", "build tree", "installed (relocated)",
                         // "installed default", "reference default"
    bool found = false;  // false: `path` (if any) is the candidate that could not be opened
    std::vector<std::string> notes;  // trace lines explaining the decision
};

// Pure decision, testable with fake inputs.
LocatorResult locate_config(const LocatorInputs &in);

// Why no file is read when `r` found none: DAT_OVERRIDE set but empty, DAT_OVERRIDE naming
// a file that cannot be opened, or the candidate not found. One wording for libdat2's
// trace and datinfo's report.
std::string unread_config_message(const LocatorResult &r);

// The real inputs: environment, uids, dladdr() of this code, compile definitions.
LocatorInputs current_locator_inputs();

// The same, but with module_dir taken from the module that contains `address_in_module`
// instead of the module containing this code. A tool linked with this code statically
// (datinfo) passes an address inside libdat2, so that the build-tree and relocation rules
// describe what libdat2 will do, not where the tool's executable lives. A null address, or
// one that belongs to no loaded module, leaves module_dir empty.
LocatorInputs current_locator_inputs(const void *address_in_module);

}  // namespace opendat::registry

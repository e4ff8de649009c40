// The active configuration as libdat2 sees it: which file and why, the entries, the
// parser's diagnostics and which entries are never loaded. Read with the registry's own
// locator and parsers (linked statically), using libdat2's location for the rules that
// depend on it.
#pragma once

#include "document.hpp"
#include "libdat2_location.hpp"

#include "registry/config_locator.hpp"
#include "registry/registry.hpp"

#include <string>
#include <vector>

namespace datinfo {

struct ConfigReport {
    Libdat2Location libdat2;
    opendat::registry::LocatorResult located;
    bool opened = false;                                  // the file was read
    std::vector<opendat::registry::ConfigEntry> entries;  // loadable / not_loaded_reason set
    std::vector<int> chained_behind;  // per entry: earlier same-key entry, or -1
    std::vector<opendat::registry::ConfigDiagnostic> diagnostics;
    std::vector<std::string> notes;  // locator notes and consistency warnings
};

ConfigReport read_configuration();

// "/etc/dat.conf:12"
std::string where(const opendat::registry::ConfigEntry &e);

Node configuration_node(const ConfigReport &report);
Node entry_fields_node(const opendat::registry::ConfigEntry &e);

}  // namespace datinfo

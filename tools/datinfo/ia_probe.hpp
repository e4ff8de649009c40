// Opens one configuration entry through libdat2's public API, queries the IA and reports
// its attributes, or why it could not be opened.
#pragma once

#include "document.hpp"
#include "options.hpp"

#include "registry/registry.hpp"

#include <string>

namespace datinfo {

struct ProbeOutcome {
    Node node;  // "status", attributes or "error" + "diagnosis", "trace"
    bool opened = false;
    bool trace_failed = false;
    bool verbs = false;  // a verbs provider: the memlock limit matters (reported once, by main)
};

ProbeOutcome probe_entry(const opendat::registry::ConfigEntry &e, const Options &opts,
                         const std::string &libdat2_dir);

}  // namespace datinfo

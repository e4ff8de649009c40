#include "config_report.hpp"

#include "registry/config_file.hpp"
#include "registry/provider_key.hpp"

#include <dat2/udat.h>

namespace datinfo {
namespace reg = opendat::registry;

namespace {

reg::LocatorInputs inputs_for(const Libdat2Location &lib) {
    // Same rules, same compiled-in paths as libdat2 itself, but judged from libdat2's
    // directory rather than datinfo's.
    reg::LocatorInputs in = reg::current_locator_inputs(lib.address);
    if (!lib.path.empty() && !lib.opendat) {
        // Another DAT implementation (e.g. the reference libdat2 via LD_LIBRARY_PATH) knows
        // only DAT_OVERRIDE and /etc/dat.conf.
        in.build_lib_dir.clear();
        in.build_conf.clear();
        in.libdir_to_conf.clear();
        in.installed_conf = in.reference_conf;
    }
    return in;
}

// The registry's own rules: which entries it loads, and which share a key (chained).
void classify(ConfigReport &r) {
    r.chained_behind.assign(r.entries.size(), -1);
    for (std::size_t i = 0; i < r.entries.size(); ++i) {
        auto &c = r.entries[i];
        reg::mark_loadable(c);
        if (!c.loadable) continue;
        for (std::size_t j = 0; j < i; ++j)
            if (r.entries[j].loadable && reg::same_key(reg::key_of(r.entries[j]), reg::key_of(c))) {
                r.chained_behind[i] = static_cast<int>(j);
                break;
            }
    }
}

// datinfo re-reads the file; libdat2 read it when it loaded. If the two disagree (the file
// changed in between, or libdat2 is not OpenDAT's), say so rather than mislead.
void cross_check(ConfigReport &r) {
    DAT_COUNT registered = 0;
    // max == 0 returns DAT_INVALID_PARAMETER (as in the reference) with the count set.
    (void)dat_registry_list_providers(0, &registered, nullptr);
    std::size_t unique = 0;
    for (std::size_t i = 0; i < r.entries.size(); ++i)
        if (r.entries[i].loadable && r.chained_behind[i] < 0) ++unique;
    if (static_cast<std::size_t>(registered) != unique)
        r.notes.push_back("libdat2 has " + std::to_string(registered) +
                          " static-registry entries but datinfo read " + std::to_string(unique) +
                          " from the file: the file changed after this process started, "
                          "or libdat2 reads a different file");
}

Node diagnostic_node(const reg::ConfigDiagnostic &d) {
    Node n = Node::map();
    n.set("file", d.file);
    n.set("line", d.line);
    n.set("field", d.field);
    n.set("severity", d.warning ? "warning" : "error");
    n.set("message", d.message);
    n.set("effect", d.warning           ? "entry still used"
                    : d.field == "file" ? "no entries read"
                                        : "entry skipped");
    return n;
}

}  // namespace

std::string where(const reg::ConfigEntry &e) {
    return e.file + ":" + std::to_string(e.line);
}

ConfigReport read_configuration() {
    ConfigReport r;
    r.libdat2 = find_libdat2();
    r.located = reg::locate_config(inputs_for(r.libdat2));
    r.notes = r.located.notes;
    if (r.located.found) {
        reg::FileParse fp = reg::read_config_file(r.located.path);
        r.opened = fp.opened;
        r.entries = std::move(fp.result.entries);
        r.diagnostics = std::move(fp.result.diagnostics);
    } else {
        r.diagnostics.push_back(reg::ConfigDiagnostic{
            r.located.path, 0, "file", reg::unread_config_message(r.located), false});
    }
    classify(r);
    if (r.opened) cross_check(r);
    return r;
}

Node entry_fields_node(const reg::ConfigEntry &e) {
    Node n = Node::map();
    n.set("name", e.ia_name);
    n.set("api", std::string(e.user_level ? "u" : "k") + std::to_string(e.api_major) + "." +
                     std::to_string(e.api_minor));
    n.set("thread_safe", e.thread_safe);
    n.set("default", e.is_default);
    n.set("library", e.library);
    n.set("provider_version", e.provider_id + "." + std::to_string(e.provider_major) + "." +
                                  std::to_string(e.provider_minor));
    n.set("ia_params", e.ia_params);
    n.set("platform_params", e.platform_params);
    if (e.trace_level >= 0) n.set("trace_level", e.trace_level);
    if (!e.settings.empty()) {
        Node s = Node::map();
        for (const auto &[k, v] : e.settings) s.set(k, v);
        n.set("settings", std::move(s));
    }
    n.set("source", where(e));
    return n;
}

Node configuration_node(const ConfigReport &r) {
    Node n = Node::map();
    n.set("libdat2", r.libdat2.path.empty() ? Node() : Node(r.libdat2.path));
    if (!r.libdat2.path.empty() && !r.libdat2.opendat)
        n.set("libdat2_kind", "not OpenDAT (reference rules: DAT_OVERRIDE, then /etc/dat.conf)");
    n.set("file", r.located.path.empty() ? Node() : Node(r.located.path));
    n.set("reason", r.located.reason);
    n.set("read", r.opened);
    n.set("format", r.located.path.empty()              ? "none"
                    : reg::is_yaml_path(r.located.path) ? "yaml"
                                                        : "dat.conf");
    std::size_t loadable = 0;
    for (const auto &e : r.entries) loadable += e.loadable ? 1 : 0;
    n.set("entries", static_cast<long>(r.entries.size()));
    n.set("loadable_entries", static_cast<long>(loadable));
    Node diags = Node::list();
    for (const auto &d : r.diagnostics) diags.push(diagnostic_node(d));
    n.set("problems", std::move(diags));
    Node not_loaded = Node::list();
    for (std::size_t i = 0; i < r.entries.size(); ++i) {
        const auto &e = r.entries[i];
        if (e.loadable && r.chained_behind[i] < 0) continue;
        Node x = Node::map();
        x.set("name", e.ia_name);
        x.set("source", where(e));
        x.set("reason", e.loadable
                            ? "same key as " +
                                  where(r.entries[static_cast<std::size_t>(r.chained_behind[i])]) +
                                  ": tried only if that library cannot be loaded"
                            : e.not_loaded_reason + ": parsed, never loaded");
        not_loaded.push(std::move(x));
    }
    n.set("not_loaded", std::move(not_loaded));
    Node notes = Node::list();
    for (const auto &s : r.notes) notes.push(s);
    if (!notes.empty()) n.set("notes", std::move(notes));
    return n;
}

}  // namespace datinfo

// datinfo: what DAT configuration libdat2 uses and what each entry gives when opened
// (in the spirit of fi_info and ibv_devinfo). See datinfo(1) / usage_text().
#include "config_report.hpp"
#include "diagnose.hpp"
#include "document.hpp"
#include "environment_report.hpp"
#include "exit_codes.hpp"
#include "ia_probe.hpp"
#include "options.hpp"
#include "render.hpp"
#include "report_output.hpp"
#include "trace_control.hpp"
#include "trclvl.hpp"
#include "tunables/tunables.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace datinfo {
namespace {

std::string directory_of(const std::string &path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// One entry of the report: its fields, then what happened when datinfo opened it.
Node entry_node(const ConfigReport &cfg, std::size_t i, const Options &opts, bool *opened,
                bool *trace_failed, bool *verbs) {
    const auto &e = cfg.entries[i];
    Node n = entry_fields_node(e);
    if (!e.loadable) {
        n.set("status", "not loaded");
        n.set("reason", e.not_loaded_reason + ": parsed, never loaded by libdat2");
        return n;
    }
    if (cfg.chained_behind[i] >= 0) {
        n.set("status", "chained");
        n.set("reason", "same key as " +
                            where(cfg.entries[static_cast<std::size_t>(cfg.chained_behind[i])]) +
                            ": libdat2 uses this library only if that one cannot be loaded");
        return n;
    }
    if (opts.list_only) {
        n.set("status", "not opened (-l)");
        return n;
    }
    ProbeOutcome p = probe_entry(e, opts, directory_of(cfg.libdat2.path));
    *opened = p.opened;
    *trace_failed = p.trace_failed;
    *verbs = *verbs || p.verbs;
    for (const auto &[k, v] : p.node.items()) n.set(k, v);
    return n;
}

int run(int argc, char **argv) {
    ReportOutput output;
    ParseOutcome parsed = parse_options(argc, argv);
    if (!parsed.error.empty()) {
        std::fprintf(stderr, "datinfo: %s\n%s", parsed.error.c_str(), usage_text(argv[0]).c_str());
        return kExitUsage;
    }
    const Options &opts = parsed.options;
    if (opts.help) {
        output.write(usage_text(argv[0]));
        return kExitOk;
    }
    if (opts.version) {
        output.write("datinfo (OpenDAT) " OPENDAT_VERSION "\n");
        return kExitOk;
    }
    // Like UCX: a misspelt variable is otherwise silently ignored. On stderr, so that the
    // YAML/JSON on stdout stays parseable.
    for (const auto &u : unknown_variables())
        std::fprintf(stderr, "datinfo: warning: %s\n", describe(u).c_str());

    int status = kExitOk;
    Node doc = Node::map();
    // DAT level changes first, so that opening the IAs below is traced at the new level.
    bool trace_failed = false;
    Node dat_trace;
    // datinfo explains every failure itself, so libdat2's own error lines would only repeat
    // it on stderr. They stay when the user asked for DAT tracing in any way.
    if (!opts.trace && !std::getenv(opendat::tunables::kDatTraceLevel.name) &&
        !std::getenv(opendat::tunables::kDatDbgType.name))
        (void)trclvl_modify(DAT_TRACE_COMPONENT_DAT, DAT_TRACE_LEVEL_OFF);
    if (opts.trace) dat_trace = apply_dat_trace(opts.trace_changes, &trace_failed);

    const ConfigReport cfg = read_configuration();
    doc.set("configuration", configuration_node(cfg));
    if (opts.env) doc.set("environment", environment_node());

    Node entries = Node::list();
    bool verbs = false;  // some verbs provider was opened (or tried)
    if (opts.provider) {
        // The entry libdat2 would use for the name: the first loadable one, else the first.
        std::size_t pick = cfg.entries.size();
        for (std::size_t i = 0; i < cfg.entries.size(); ++i) {
            if (cfg.entries[i].ia_name != *opts.provider) continue;
            if (pick == cfg.entries.size()) pick = i;
            if (cfg.entries[i].loadable && cfg.chained_behind[i] < 0) {
                pick = i;
                break;
            }
        }
        if (pick == cfg.entries.size()) {
            std::fprintf(stderr, "datinfo: no entry named '%s' in %s\n", opts.provider->c_str(),
                         cfg.located.path.empty() ? "the configuration" : cfg.located.path.c_str());
            status = cfg.opened ? kExitUnknownEntry : kExitNoConfig;
        } else {
            bool opened = false, failed = false;
            entries.push(entry_node(cfg, pick, opts, &opened, &failed, &verbs));
            trace_failed = trace_failed || failed;
            if (!cfg.entries[pick].loadable)
                status = kExitUnknownEntry;
            else if (!opened && !opts.list_only)
                status = kExitEntryFailed;
        }
    } else {
        for (std::size_t i = 0; i < cfg.entries.size(); ++i) {
            bool opened = false, failed = false;
            entries.push(entry_node(cfg, i, opts, &opened, &failed, &verbs));
            trace_failed = trace_failed || failed;
        }
        if (!cfg.opened) status = kExitNoConfig;
    }
    doc.set("entries", std::move(entries));
    // Once for the whole report rather than under every verbs entry: it is a property of
    // this process, and the same for all of them.
    if (verbs)
        if (auto m = memlock_warning()) {
            Node w = Node::list();
            w.push(diagnosis_node(*m));
            doc.set("warnings", std::move(w));
        }
    if (opts.trace) {
        Node t = Node::map();
        t.set("dat", std::move(dat_trace));
        t.set(
            "note",
            "trace levels live inside each process: datinfo changes only its own libdat2 and the "
            "IAs it "
            "opens, and cannot change the level of another running program; set DAT_TRACE_LEVEL / "
            "DAPL_TRACE_LEVEL before starting it, or have it call dat_trclvl_modify()");
        doc.set("trace", std::move(t));
    }
    if (trace_failed && status == kExitOk) status = kExitEntryFailed;

    std::string text;
    switch (opts.format) {
        case Format::Json:
            text = render_json(doc);
            break;
        case Format::Yaml:
            text = render_yaml(doc);
            break;
        case Format::Text:
            text = render_text(doc);
            break;
    }
    if (!output.write(text)) {
        std::fprintf(stderr, "datinfo: cannot write the report\n");
        return kExitInternal;
    }
    return status;
}

}  // namespace
}  // namespace datinfo

int main(int argc, char **argv) {
    // Nothing escapes: a failure becomes a message and exit status 5.
    try {
        return datinfo::run(argc, argv);
    } catch (const std::exception &ex) {
        std::fprintf(stderr, "datinfo: internal error: %s\n", ex.what());
    } catch (...) {
        std::fprintf(stderr, "datinfo: internal error\n");
    }
    return datinfo::kExitInternal;
}

#include "options.hpp"

#include "trace/environment.hpp"

#include <cstring>

namespace datinfo {
namespace {

// "dat=N" / "dapl=N" (several may be joined with commas). Returns false on a syntax error.
bool parse_trace_spec(const std::string &spec, std::vector<TraceChange> &out, std::string &error) {
    std::size_t start = 0;
    while (start <= spec.size()) {
        const std::size_t comma = spec.find(',', start);
        const std::string item =
            spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos) {
            error = "--trace: expected dat=N or dapl=N, got '" + item + "'";
            return false;
        }
        const std::string who = item.substr(0, eq), value = item.substr(eq + 1);
        TraceChange change;
        if (who == "dat")
            change.dapl = false;
        else if (who == "dapl")
            change.dapl = true;
        else {
            error = "--trace: unknown component '" + who + "' (use dat or dapl)";
            return false;
        }
        // The rule DAT_TRACE_LEVEL follows (digits only: "+3", " 3" or "3x" are refused).
        int level = 0;
        if (!opendat::trace::detail::parse_level(value.c_str(), &level)) {
            error = "--trace: level must be 0..10, got '" + value + "'";
            return false;
        }
        change.level = static_cast<unsigned>(level);
        out.push_back(change);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return true;
}

bool looks_like_trace_spec(const char *arg) {
    return std::strncmp(arg, "dat=", 4) == 0 || std::strncmp(arg, "dapl=", 5) == 0;
}

}  // namespace

ParseOutcome parse_options(int argc, char **argv) {
    ParseOutcome r;
    Options &o = r.options;
    // Hand-written rather than getopt_long: --trace takes an *optional* separate argument
    // (`--trace` alone shows levels, `--trace dat=3` changes one), which getopt cannot express.
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto need_value = [&](const std::string &opt) -> const char * {
            if (i + 1 >= argc) {
                r.error = opt + " needs a value";
                return nullptr;
            }
            return argv[++i];
        };
        if (a == "-h" || a == "--help")
            o.help = true;
        else if (a == "-V" || a == "--version")
            o.version = true;
        else if (a == "-v" || a == "--verbose")
            o.verbose = true;
        else if (a == "-l" || a == "--list")
            o.list_only = true;
        else if (a == "-e" || a == "--env")
            o.env = true;
        else if (a == "-P" || a == "--provider") {
            const char *v = need_value(a);
            if (!v) return r;
            o.provider = v;
        } else if (a.rfind("-P", 0) == 0 && a.size() > 2)
            o.provider = a.substr(2);
        else if (a.rfind("--provider=", 0) == 0)
            o.provider = a.substr(11);
        else if (a == "-f" || a == "--format" || a.rfind("--format=", 0) == 0) {
            std::string v;
            if (a.rfind("--format=", 0) == 0)
                v = a.substr(9);
            else {
                const char *p = need_value(a);
                if (!p) return r;
                v = p;
            }
            if (v == "text")
                o.format = Format::Text;
            else if (v == "yaml")
                o.format = Format::Yaml;
            else if (v == "json")
                o.format = Format::Json;
            else {
                r.error = "--format: expected text, yaml or json, got '" + v + "'";
                return r;
            }
        } else if (a == "-t" || a == "--trace") {
            o.trace = true;
            if (i + 1 < argc && looks_like_trace_spec(argv[i + 1])) {
                if (!parse_trace_spec(argv[++i], o.trace_changes, r.error)) return r;
            }
        } else if (a.rfind("--trace=", 0) == 0) {
            o.trace = true;
            if (!parse_trace_spec(a.substr(8), o.trace_changes, r.error)) return r;
        } else {
            r.error = "unknown argument '" + a + "'";
            return r;
        }
    }
    if (o.list_only && (!o.trace_changes.empty())) {
        // Changing a provider's level needs an open IA, and -l opens nothing.
        for (const auto &c : o.trace_changes)
            if (c.dapl) {
                r.error = "--trace dapl=N needs an open IA: it cannot be combined with -l";
                return r;
            }
    }
    return r;
}

std::string usage_text(const char *program) {
    std::string p = program ? program : "datinfo";
    return "Usage: " + p +
           " [options]\n"
           "Shows the DAT configuration libdat2 uses, opens each entry and prints its attributes.\n"
           "\n"
           "  -P, --provider NAME  only the entry NAME (exit status tells whether it opened)\n"
           "  -l, --list           list the configuration only; load no provider\n"
           "  -v, --verbose        every IA and provider attribute (default: a summary)\n"
           "  -f, --format FMT     text (default), yaml or json\n"
           "  -e, --env            the DAT_*/DAPL_* environment variables in effect and their "
           "meaning\n"
           "  -t, --trace [SPEC]   show trace levels; SPEC = dat=N, dapl=N or both (dat=N,dapl=M)\n"
           "                       changes them first, N = 0..10. dat=N applies to this process's\n"
           "                       libdat2 (dat_trclvl_modify); dapl=N to each IA datinfo opens,\n"
           "                       through the provider's debug_modify attribute.\n"
           "                       Trace levels live inside each process: datinfo cannot change\n"
           "                       the level of another running program. Set DAT_TRACE_LEVEL /\n"
           "                       DAPL_TRACE_LEVEL before starting it, or have it call\n"
           "                       dat_trclvl_modify() itself.\n"
           "  -V, --version        print the version\n"
           "  -h, --help           this text\n"
           "\n"
           "Exit status:\n"
           "  0  success (with -P: the IA opened)\n"
           "  1  -P NAME could not be opened, or a --trace change failed\n"
           "  2  usage error\n"
           "  3  no configuration file could be read (e.g. a bad DAT_OVERRIDE)\n"
           "  4  -P NAME is not in the configuration, or is never loaded (k or nondefault)\n"
           "  5  internal error\n"
           "\n"
           "See datinfo(1) and dat.conf(5).\n";
}

}  // namespace datinfo

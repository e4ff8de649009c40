#include "environment_report.hpp"

#include "trclvl.hpp"
#include "trace/environment.hpp"
#include "trace/trace.hpp"
#include "tunables/tunables.hpp"

#include <dat2/dat_trace.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

extern char **environ;

namespace datinfo {
namespace {

namespace tun = opendat::tunables;

struct Known {
    const char *name;
    const char *meaning;
    bool shown;  // listed by -e (the rest are provider-private: known, so not warned about)
};

// Variables that are not OpenDAT tunables but matter to it, and the provider-private
// variables of Debian's DAPL providers (docs/dat-abi.md §6.3). OpenDAT's own variables are
// the declared tunables (common/tunables/tunables.hpp).
constexpr Known kKnown[] = {
    {"LD_LIBRARY_PATH",
     "directories searched first for a provider library given by bare name in dat.conf", true},
    // Provider-private variables of the DAPL providers: known, not explained here.
    {"DAPL_DBG_LEVEL", "", false},
    {"DAPL_DBG_SYS_MEM", "", false},
    {"DAPL_IB_MTU", "", false},
    {"DAPL_IB_PKEY", "", false},
    {"DAPL_IB_SL", "", false},
    {"DAPL_LOOPBACK", "", false},
    {"DAPL_MAX_INLINE", "", false},
    {"DAPL_WR_MAX", "", false},
    {"DAPL_SCM_NETDEV", "", false},
    {"DAPL_CM_ARP_RETRY_COUNT", "", false},
    {"DAPL_CM_ARP_TIMEOUT_MS", "", false},
    {"DAPL_CM_ROUTE_RETRY_COUNT", "", false},
    {"DAPL_CM_ROUTE_TIMEOUT_MS", "", false},
    {"DAPL_CM_TOS", "", false},
    {"DAPL_MAX_CM_RESPONSE_TIME", "", false},
    {"DAPL_MAX_CM_RETRIES", "", false},
    {"DAPL_ACK_RETRY", "", false},
    {"DAPL_ACK_TIMER", "", false},
    {"DAPL_RNR_RETRY", "", false},
    {"DAPL_RNR_TIMER", "", false},
    {"DAPL_GLOBAL_ROUTING", "", false},
    {"DAPL_HOP_LIMIT", "", false},
    {"DAPL_TCLASS", "", false},
    {"DAPL_NETWORK_NODES", "", false},
    {"DAPL_NETWORK_PPN", "", false},
    {"DAPL_NETWORK_PROCESS_NUM", "", false},
    {"DAPL_NETWORK_TRESHOLD", "", false},
    {"DAPL_UCM_ARRAY_BITS", "", false},
    {"DAPL_UCM_CQ_SIZE", "", false},
    {"DAPL_UCM_DREP_TIME", "", false},
    {"DAPL_UCM_DREQ_RETRY", "", false},
    {"DAPL_UCM_ENTRY_BITS", "", false},
    {"DAPL_UCM_QP_SIZE", "", false},
    {"DAPL_UCM_REP_TIME", "", false},
    {"DAPL_UCM_RETRY", "", false},
    {"DAPL_UCM_RTU_TIME", "", false},
    {"DAPL_UCM_TIMER", "", false},
    {"DAPL_UCM_TX_BURST", "", false},
    {"DAPL_UCM_WAIT_TIME", "", false},
};

const char *level_name(long v) {
    if (v == 0) return "off";
    if (v <= 2) return v == 1 ? "errors" : "warnings";
    if (v <= 6) return "normal operation";
    if (v <= 8) return "detail";
    return "debug";
}

// The readers' verdict (common/tunables: the same code libdat2 and the providers run),
// stated for people.
std::string interpret(const tun::Spec &spec, const std::string &value) {
    namespace env = opendat::trace::detail;
    char why[160] = {};
    if (!tun::check(spec, value.c_str(), why, sizeof why)) {
        if (spec.type == tun::Type::kTraceLevel)
            return "invalid: the default level 1 is used (and a warning printed)";
        if (spec.type == tun::Type::kDestMask || spec.type == tun::Type::kTraceDest)
            return std::string("invalid (") + why + "): stderr is used";
        // A bad configuration file name is an error, never a fallback (registry/
        // config_locator.cpp): say what libdat2 does.
        if (spec.type == tun::Type::kPath)
            return std::string("invalid (") + why +
                   "): libdat2 reports a bad file name and registers no provider";
        return std::string("invalid (") + why + "): the default " + spec.default_text +
               " is used (and a warning printed)";
    }
    switch (spec.type) {
        case tun::Type::kTraceLevel: {
            int v = 0;
            env::parse_level(value.c_str(), &v);
            return "level " + std::to_string(v) + " (" + level_name(v) + ")";
        }
        case tun::Type::kDebugMask: {
            unsigned long m = 0;
            env::parse_mask(value.c_str(), &m);
            return "mask -> level " + std::to_string(env::level_from_legacy_mask(m)) +
                   " when the *_TRACE_LEVEL variable is unset";
        }
        case tun::Type::kDestMask: {
            unsigned long m = 0;
            unsigned dests = 0;
            env::parse_mask(value.c_str(), &m);
            env::dests_from_legacy_mask(m, &dests);
            const bool out = dests & opendat::trace::kDestStdout;
            const bool log = dests & opendat::trace::kDestSyslog;
            return out && log ? "stdout and syslog" : out ? "stdout" : "syslog";
        }
        case tun::Type::kKeepalive: {
            tun::Keepalive k;
            tun::parse_keepalive(value.c_str(), &k);
            if (!k.on) return "keepalive off";
            return "idle " + std::to_string(k.idle) + " s, interval " + std::to_string(k.interval) +
                   " s, " + std::to_string(k.probes) + " probes";
        }
        case tun::Type::kPath: {
            // A directory passes access(R_OK) but is no file to read (registry/config_file.cpp).
            struct stat st {};
            if (stat(value.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
                return "a directory, not a file: libdat2 reports it and registers no provider";
            return access(value.c_str(), R_OK) == 0
                       ? std::string("readable")
                       : "not readable: libdat2 reports a bad file name and registers no provider";
        }
        default:
            return {};
    }
}

bool known_name(const std::string &name) {
    return tun::find(name.c_str()) != nullptr ||
           std::any_of(std::begin(kKnown), std::end(kKnown),
                       [&](const Known &k) { return name == k.name; });
}

std::string prefix_of(const std::string &name) {
    if (name.rfind("DAT_", 0) == 0) return "DAT_";
    if (name.rfind("DAPL_", 0) == 0) return "DAPL_";
    return {};
}

}  // namespace

std::size_t edit_distance(const std::string &a, const std::string &b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min(
                {prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::vector<UnknownVariable> unknown_variables() {
    std::vector<UnknownVariable> out;
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        const char *eq = std::strchr(*e, '=');
        const std::string name(*e, eq ? static_cast<std::size_t>(eq - *e) : std::strlen(*e));
        if (prefix_of(name).empty()) continue;
        if (known_name(name)) continue;
        UnknownVariable u{name, {}};
        // Nearest known name, if it is close enough to be a plausible typo.
        std::size_t best = name.size();
        auto consider = [&](const char *known) {
            if (prefix_of(known).empty()) return;
            const std::size_t d = edit_distance(name, known);
            if (d < best) best = d, u.suggestion = known;
        };
        for (const tun::Spec *t : tun::all()) consider(t->name);
        for (const Known &k : kKnown) consider(k.name);
        if (best > std::max<std::size_t>(2, name.size() / 4)) u.suggestion.clear();
        out.push_back(std::move(u));
    }
    std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.name < b.name; });
    return out;
}

std::string describe(const UnknownVariable &u) {
    return "unknown environment variable " + u.name +
           (u.suggestion.empty() ? std::string(" (nothing reads it)")
                                 : " (did you mean " + u.suggestion + "?)");
}

Node environment_node() {
    Node n = Node::map();
    Node vars = Node::list();
    for (const tun::Spec *t : tun::all()) {
        Node v = Node::map();
        v.set("name", t->name);
        const char *value = std::getenv(t->name);
        v.set("set", value != nullptr);
        v.set("value", value ? Node(value) : Node());
        char why[160] = {};
        const bool valid = tun::check(*t, value, why, sizeof why);
        v.set("valid", valid);
        if (!valid) v.set("problem", why);
        v.set("meaning", t->help);
        v.set("read_by", t->reader);
        v.set("type", tun::type_name(t->type));
        v.set("default", t->default_text);
        if (t->type == tun::Type::kInt)
            v.set("range", std::to_string(t->min) + ".." + std::to_string(t->max));
        if (value) {
            std::string effect = interpret(*t, value);
            if (!effect.empty()) v.set("effect", effect);
        }
        vars.push(std::move(v));
    }
    for (const Known &k : kKnown) {
        if (!k.shown) continue;
        Node v = Node::map();
        v.set("name", k.name);
        const char *value = std::getenv(k.name);
        v.set("set", value != nullptr);
        v.set("value", value ? Node(value) : Node());
        v.set("meaning", k.meaning);
        vars.push(std::move(v));
    }
    n.set("variables", std::move(vars));
    // What is actually in force in this process, after precedence and defaults.
    Node levels = Node::map();
    DAT_UINT32 lvl = 0;
    if (trclvl_query(DAT_TRACE_COMPONENT_DAT, &lvl) == DAT_SUCCESS) levels.set("dat", lvl);
    n.set("effective_trace_levels", std::move(levels));
    Node unknown = Node::list();
    for (const auto &u : unknown_variables()) {
        Node x = Node::map();
        x.set("name", u.name);
        x.set("suggestion", u.suggestion.empty() ? Node() : Node(u.suggestion));
        unknown.push(std::move(x));
    }
    n.set("unknown", std::move(unknown));
    return n;
}

}  // namespace datinfo

#include "environment_report.hpp"

#include "trclvl.hpp"
#include "trace/environment.hpp"
#include "trace/trace.hpp"

#include <dat2/dat_trace.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

extern char **environ;

namespace datinfo {
namespace {

struct Known {
    const char *name;
    const char *meaning;
    bool shown;  // listed by -e (the rest are provider-private: known, so not warned about)
};

// Read by libdat2, the registry, the trace facility, OpenDAT's providers and Debian's DAPL
// providers (docs/dat-abi.md §6.3).
constexpr Known kKnown[] = {
    {"DAT_OVERRIDE",
     "configuration file to read instead of the default ones (read when libdat2 loads)", true},
    {"DAT_TRACE_LEVEL",
     "trace level of libdat2's front end and registry, 0..10 (1 errors, 3 normal, 7 detail)", true},
    {"DAT_TRACE_DEST",
     "where DAT trace lines go: stderr, stdout, syslog or a file (%p pid, %h host), "
     "comma-separated",
     true},
    {"DAT_DBG_TYPE", "reference debug mask for libdat2; used only when DAT_TRACE_LEVEL is unset",
     true},
    {"DAT_DBG_DEST",
     "reference destination mask for libdat2 (1 stdout, 2 syslog, 3 both); used only when "
     "DAT_TRACE_DEST is unset",
     true},
    {"DAPL_TRACE_LEVEL",
     "trace level of the providers, 0..10 (a YAML entry's trace_level sets it when unset)", true},
    {"DAPL_TRACE_DEST",
     "where provider trace lines go: stderr, stdout, syslog or a file, comma-separated", true},
    {"DAPL_DBG_TYPE",
     "reference debug mask for the providers; used only when DAPL_TRACE_LEVEL is unset", true},
    {"DAPL_DBG_DEST",
     "reference destination mask for the providers (1 stdout, 2 syslog, 3 both); used only when "
     "DAPL_TRACE_DEST is unset",
     true},
    {"DAT_TCP_KEEPALIVE",
     "tcp provider: dead-peer keepalive \"idle,interval,probes\" in seconds (default 10,2,5; "
     "\"0\" = off), read when an IA opens",
     true},
    {"DAT_TCP_USER_TIMEOUT_MS",
     "tcp provider: TCP_USER_TIMEOUT, how long sent data may stay unacknowledged before the "
     "connection is broken (unset = kernel default)",
     true},
    {"DAT_TCP_CONNECT_RETRY_MS",
     "tcp provider: how long a refused connect is retried before it is reported as rejected "
     "(default 3000)",
     true},
    {"OPENDAT_VERBS_MAX_INLINE",
     "verbs provider: inline sends up to this many bytes (default 0: off, so a bad lmr_context "
     "is always reported as a local protection error)",
     true},
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

// libdat2's own parsing (common/trace/environment.cpp), its verdict stated for people.
std::string interpret(const std::string &name, const std::string &value) {
    namespace env = opendat::trace::detail;
    if (name.ends_with("_TRACE_LEVEL")) {
        int v = 0;
        if (!env::parse_level(value.c_str(), &v))
            return "invalid: the default level 1 is used (and a warning printed)";
        return "level " + std::to_string(v) + " (" + level_name(v) + ")";
    }
    if (name.ends_with("_DBG_TYPE")) {
        unsigned long m = 0;
        if (!env::parse_mask(value.c_str(), &m)) return "invalid: ignored";
        return "mask -> level " + std::to_string(env::level_from_legacy_mask(m)) +
               " when the *_TRACE_LEVEL variable is unset";
    }
    if (name.ends_with("_DBG_DEST")) {
        unsigned long m = 0;
        unsigned dests = 0;
        if (!env::parse_mask(value.c_str(), &m) || !env::dests_from_legacy_mask(m, &dests))
            return "invalid: stderr is used";
        const bool out = dests & opendat::trace::kDestStdout;
        const bool log = dests & opendat::trace::kDestSyslog;
        return out && log ? "stdout and syslog" : out ? "stdout" : "syslog";
    }
    return {};
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
        if (std::any_of(std::begin(kKnown), std::end(kKnown),
                        [&](const Known &k) { return name == k.name; }))
            continue;
        UnknownVariable u{name, {}};
        // Nearest known name, if it is close enough to be a plausible typo.
        std::size_t best = name.size();
        for (const Known &k : kKnown) {
            if (prefix_of(k.name).empty()) continue;
            const std::size_t d = edit_distance(name, k.name);
            if (d < best) best = d, u.suggestion = k.name;
        }
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
    for (const Known &k : kKnown) {
        if (!k.shown) continue;
        Node v = Node::map();
        v.set("name", k.name);
        const char *value = std::getenv(k.name);
        v.set("set", value != nullptr);
        v.set("value", value ? Node(value) : Node());
        v.set("meaning", k.meaning);
        if (value) {
            std::string effect = interpret(k.name, value);
            if (!effect.empty()) v.set("effect", effect);
        }
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

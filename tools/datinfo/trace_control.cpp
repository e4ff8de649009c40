#include "trace_control.hpp"

#include "attributes.hpp"
#include "diagnose.hpp"
#include "trclvl.hpp"

#include <cstring>

namespace datinfo {
namespace {

Node level_or_error(DAT_RETURN rc, DAT_UINT32 level) {
    if (rc == DAT_SUCCESS) return Node(level);
    return Node("error: " + decode_dat_return(rc));
}

void scan(const DAT_NAMED_ATTR *attrs, DAT_COUNT n, ProviderTraceFns &fns) {
    if (attrs == nullptr || n <= 0) return;
    if (n > kMaxNamedAttrs) n = kMaxNamedAttrs;
    for (DAT_COUNT i = 0; i < n; ++i) {
        if (!fns.query) fns.query = dat_trclvl_attr_query(&attrs[i]);
        if (!fns.modify) fns.modify = dat_trclvl_attr_modify(&attrs[i]);
        if (attrs[i].name && std::strcmp(attrs[i].name, DAT_VENDOR_ATTR_EXTENSION) == 0)
            fns.vendor_extension = true;
    }
}

}  // namespace

Node apply_dat_trace(const std::vector<TraceChange> &changes, bool *failed) {
    Node n = Node::map();
    DAT_UINT32 before = 0;
    const DAT_RETURN q = trclvl_query(DAT_TRACE_COMPONENT_DAT, &before);
    n.set("level", level_or_error(q, before));
    for (const auto &c : changes) {
        if (c.dapl) continue;
        n.set("before", level_or_error(q, before));
        const DAT_RETURN rc = trclvl_modify(DAT_TRACE_COMPONENT_DAT, c.level);
        if (rc != DAT_SUCCESS) {
            n.set("error", "dat_trclvl_modify: " + decode_dat_return(rc));
            *failed = true;
        }
        DAT_UINT32 after = 0;
        const DAT_RETURN q2 = trclvl_query(DAT_TRACE_COMPONENT_DAT, &after);
        n.set("after", level_or_error(q2, after));
        n.set("level", level_or_error(q2, after));
    }
    n.set("scope", "this datinfo process only (front end and registry)");
    return n;
}

ProviderTraceFns find_trace_fns(const DAT_NAMED_ATTR *a, DAT_COUNT na, const DAT_NAMED_ATTR *b,
                                DAT_COUNT nb) {
    ProviderTraceFns fns;
    scan(a, na, fns);
    scan(b, nb, fns);
    return fns;
}

Node provider_trace(const ProviderTraceFns &fns, const std::vector<TraceChange> &changes,
                    bool *failed) {
    Node n = Node::map();
    if (!fns.query && !fns.modify) {
        n.set("supported", false);
        n.set(
            "note",
            "the provider has no debug_query/debug_modify attribute; set DAPL_TRACE_LEVEL (or the "
            "reference's DAPL_DBG_TYPE) before starting a program instead");
        for (const auto &c : changes)
            if (c.dapl) {
                n.set("error", "cannot change this provider's level at run time");
                *failed = true;
            }
        return n;
    }
    n.set("supported", true);
    DAT_UINT32 before = 0;
    const DAT_RETURN q = fns.query ? fns.query(DAT_TRACE_COMPONENT_DAPL, &before)
                                   : static_cast<DAT_RETURN>(DAT_NOT_IMPLEMENTED);
    n.set("level", level_or_error(q, before));
    for (const auto &c : changes) {
        if (!c.dapl) continue;
        n.set("before", level_or_error(q, before));
        if (!fns.modify) {
            n.set("error", "the provider has debug_query but no debug_modify");
            *failed = true;
            continue;
        }
        const DAT_RETURN rc = fns.modify(DAT_TRACE_COMPONENT_DAPL, c.level);
        if (rc != DAT_SUCCESS) {
            n.set("error", "debug_modify: " + decode_dat_return(rc));
            *failed = true;
        }
        DAT_UINT32 after = 0;
        const DAT_RETURN q2 = fns.query ? fns.query(DAT_TRACE_COMPONENT_DAPL, &after)
                                        : static_cast<DAT_RETURN>(DAT_NOT_IMPLEMENTED);
        n.set("after", level_or_error(q2, after));
        n.set("level", level_or_error(q2, after));
    }
    n.set("scope", "this IA, opened by datinfo; the change ends when datinfo closes it");
    return n;
}

}  // namespace datinfo

#include "ia_probe.hpp"

#include "attributes.hpp"
#include "diagnose.hpp"
#include "trace_control.hpp"

#include <dat2/udat.h>

#include <string>

namespace datinfo {
namespace {

// An IA opened by datinfo, closed on every path out (abrupt: it also frees the async EVD
// the provider created for us).
class OpenIa {
  public:
    OpenIa() = default;
    OpenIa(const OpenIa &) = delete;
    OpenIa &operator=(const OpenIa &) = delete;
    ~OpenIa() { close(); }

    DAT_RETURN open(const opendat::registry::ConfigEntry &e) {
        // The entry's own key: a threadsafe or non-2.0 entry is opened as what it says.
        // DAT_NAME_PTR is a non-const char *: hand it a private copy.
        std::string name = e.ia_name;
        return dat_ia_openv(name.data(), kAsyncQueueLength, &async_evd_, &ia_, e.api_major,
                            e.api_minor, e.thread_safe ? DAT_TRUE : DAT_FALSE);
    }
    DAT_IA_HANDLE handle() const noexcept { return ia_; }
    DAT_RETURN close() noexcept {
        if (ia_ == DAT_HANDLE_NULL) return DAT_SUCCESS;
        const DAT_RETURN rc = dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG);
        ia_ = DAT_HANDLE_NULL;
        return rc;
    }

  private:
    static constexpr DAT_COUNT kAsyncQueueLength = 8;
    DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
};

}  // namespace

ProbeOutcome probe_entry(const opendat::registry::ConfigEntry &e, const Options &opts,
                         const std::string &libdat2_dir) {
    ProbeOutcome out;
    out.node = Node::map();
    OpenIa ia;
    const DAT_RETURN rc = ia.open(e);
    if (rc != DAT_SUCCESS) {
        out.node.set("status", "failed");
        Node err = Node::map();
        err.set("code", hex_code(rc));
        err.set("name", decode_dat_return(rc));
        out.node.set("error", std::move(err));
        out.node.set("diagnosis", diagnosis_node(diagnose_open_failure(e, rc, libdat2_dir)));
        out.verbs = is_verbs_provider(e);
        return out;
    }
    out.opened = true;
    out.node.set("status", "ok");

    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_IA_ATTR ia_attr{};
    DAT_PROVIDER_ATTR provider_attr{};
    const DAT_RETURN q = dat_ia_query(ia.handle(), &async_evd, DAT_IA_FIELD_ALL, &ia_attr,
                                      DAT_PROVIDER_FIELD_ALL, &provider_attr);
    if (q != DAT_SUCCESS) {
        out.node.set("query_error",
                     "dat_ia_query: " + decode_dat_return(q) + " (" + hex_code(q) + ")");
    } else {
        // Everything is copied into the report now: the attribute arrays belong to the
        // provider and are gone once the IA is closed.
        out.node.set("ia", ia_attr_node(ia_attr, opts.verbose));
        out.node.set("provider", provider_attr_node(provider_attr, opts.verbose));
        if (opts.trace) {
            const ProviderTraceFns fns = find_trace_fns(
                ia_attr.vendor_attr, ia_attr.num_vendor_attr, provider_attr.provider_specific_attr,
                provider_attr.num_provider_specific_attr);
            out.node.set("trace", provider_trace(fns, opts.trace_changes, &out.trace_failed));
        }
    }
    out.verbs = is_verbs_provider(e);
    if (const DAT_RETURN c = ia.close(); c != DAT_SUCCESS)
        out.node.set("close_error",
                     "dat_ia_close: " + decode_dat_return(c) + " (" + hex_code(c) + ")");
    return out;
}

}  // namespace datinfo

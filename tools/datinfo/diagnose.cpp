#include "diagnose.hpp"

#include "host_checks.hpp"

#include <dat2/dat_registry.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <sstream>

namespace datinfo {
namespace {

std::string first_word(const std::string &s) {
    std::istringstream in(s);
    std::string w;
    in >> w;
    return w;
}

std::string basename_of(const std::string &path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct DlCloser {
    void operator()(void *h) const noexcept { dlclose(h); }
};
using DlHandle = std::unique_ptr<void, DlCloser>;

// dlopen as the registry does (provider_library.cpp), including its fallback to the
// provider directory next to libdat2 for a bare file name. RTLD_LOCAL: this is a probe;
// nothing of the library must stay visible to what datinfo loads later.
DlHandle probe_open(const std::string &library, const std::string &libdat2_dir,
                    std::string &error) {
    dlerror();
    DlHandle h(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (h) return h;
    const char *msg = dlerror();
    error = msg ? msg : library + ": dlopen failed";
    if (library.find('/') == std::string::npos && !libdat2_dir.empty()) {
        const std::string fallback = libdat2_dir + "/opendat/" + library;
        dlerror();
        h.reset(dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL));
        if (h) return h;
        const char *msg2 = dlerror();
        error += "; " + (msg2 ? std::string(msg2) : fallback + ": dlopen failed");
    }
    return h;
}

bool mentions_missing_file(const std::string &dlerror_text) {
    return dlerror_text.find("No such file") != std::string::npos ||
           dlerror_text.find("cannot open shared object file") != std::string::npos;
}

Diagnosis diagnose_not_found(const opendat::registry::ConfigEntry &e,
                             const std::string &libdat2_dir) {
    Diagnosis d;
    std::string error;
    DlHandle h = probe_open(e.library, libdat2_dir, error);
    const std::string at = e.file + ":" + std::to_string(e.line);
    if (!h) {
        if (mentions_missing_file(error) && error.find("undefined symbol") == std::string::npos) {
            d.cause = "library_not_found";
            d.detail = "provider library " + e.library + " cannot be found: " + error;
            const std::string base = basename_of(e.library);
            if (base.rfind("libdaplomcm", 0) == 0)
                d.fixes.push_back(
                    "Debian's libdapl2 does not ship the MCM provider (it needs Intel MPSS): "
                    "comment "
                    "out the entries that name " +
                    base);
            else if (base.rfind("libdapl", 0) == 0)
                d.fixes.push_back("install Debian's DAPL providers: apt-get install libdapl2");
            else if (base.rfind("libopendat-", 0) == 0)
                d.fixes.push_back(
                    "build OpenDAT's providers (cmake --build <build dir>) or install them (cmake "
                    "--install)");
            else
                d.fixes.push_back("install the package that provides " + base);
            std::string where_searched;
            if (e.library.find('/') == std::string::npos) {
                where_searched =
                    " (a bare name is searched in LD_LIBRARY_PATH, the ld.so cache and " +
                    (libdat2_dir.empty() ? std::string("<libdat2 dir>") : libdat2_dir) +
                    "/opendat)";
            } else if (e.library[0] != '/') {
                // dlopen takes a relative path from the process's current directory, which
                // is rarely the one the operator had in mind (dat.conf's).
                char cwd[4096];
                where_searched = std::string(
                                     " (a relative path is opened from the current "
                                     "directory, ") +
                                 (getcwd(cwd, sizeof cwd) ? cwd : "?") +
                                 ", not from the directory of " + e.file +
                                 ": give an absolute path)";
            }
            d.fixes.push_back("or correct the library field at " + at + where_searched);
        } else {
            d.cause = "library_load_error";
            d.detail = "provider library " + e.library + " exists but cannot be loaded: " + error;
            d.fixes.push_back("check its dependencies with: ldd " + e.library);
            d.fixes.push_back("rebuild or reinstall the provider so that it matches this system");
        }
        return d;
    }
    if (dlsym(h.get(), DAT_PROVIDER_INIT_FUNC_STR) == nullptr) {
        d.cause = "entry_point_missing";
        d.detail = e.library + " loads but has no " DAT_PROVIDER_INIT_FUNC_STR
                               ": it is not a DAT provider";
        d.fixes.push_back("correct the library field at " + at + " to name a DAT provider library");
        return d;
    }
    d.cause = "registered_nothing";
    d.detail = e.library +
               " was loaded and " DAT_PROVIDER_INIT_FUNC_STR
               " ran, but it registered no provider for '" +
               e.ia_name + "' (" + (e.thread_safe ? "threadsafe" : "nonthreadsafe") + ", api " +
               std::to_string(e.api_major) + "." + std::to_string(e.api_minor) + ")";
    d.fixes.push_back("check ia_params \"" + e.ia_params + "\" at " + at +
                      ": the provider may reject them");
    d.fixes.push_back(
        "run with DAPL_TRACE_LEVEL=7 (OpenDAT providers) or DAPL_DBG_TYPE=0xffff (DAPL) to see the "
        "provider's reason");
    return d;
}

// ia_params name a network interface, an address or an RDMA device: is it there?
std::optional<Diagnosis> diagnose_missing_device(const opendat::registry::ConfigEntry &e,
                                                 DAT_RETURN rc) {
    const std::string what = first_word(e.ia_params);
    if (what.empty()) return std::nullopt;
    Diagnosis d;
    bool assigned = false;
    if (is_ip_literal(what, &assigned)) {
        if (assigned) return std::nullopt;
        d.cause = "address_not_present";
        d.detail = "address " + what + " (from ia_params \"" + e.ia_params +
                   "\") is not assigned to any interface of this host";
        d.fixes.push_back("use an address of this host (ip -brief address) in ia_params at " +
                          e.file + ":" + std::to_string(e.line));
        return d;
    }
    if (network_interface_exists(what) || rdma_device_exists(what)) return std::nullopt;
    const bool address_error = DAT_GET_TYPE(rc) == DAT_INVALID_ADDRESS;
    d.cause = address_error ? "interface_not_present" : "device_not_present";
    d.detail = std::string(address_error ? "network interface" : "device") + " '" + what +
               "' (from ia_params \"" + e.ia_params + "\") is not present on this host";
    d.fixes.push_back(
        "list the interfaces with `ip -brief link` and the RDMA devices with `rdma link` or "
        "`ibv_devices`");
    d.fixes.push_back("use an entry whose ia_params name a present interface or device (edit " +
                      e.file + ":" + std::to_string(e.line) + "), or bring the device up");
    return d;
}

}  // namespace

std::string hex_code(DAT_RETURN rc) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(rc));
    return buf;
}

std::string decode_dat_return(DAT_RETURN rc) {
    const char *major = nullptr;
    const char *minor = nullptr;
    if (dat_strerror(rc, &major, &minor) != DAT_SUCCESS || major == nullptr) return hex_code(rc);
    std::string s = major;
    if (minor != nullptr && *minor != '\0') s += std::string(" ") + minor;
    return s;
}

bool is_verbs_provider(const opendat::registry::ConfigEntry &e) {
    const std::string base = basename_of(e.library);
    if (base.rfind("libdaplo", 0) == 0 || base.find("verbs") != std::string::npos) return true;
    return rdma_device_exists(first_word(e.ia_params));
}

std::optional<Diagnosis> memlock_warning() {
    const auto lim = memlock_limit();
    if (!lim || lim->soft == RLIM_INFINITY || lim->soft >= kMemlockRecommended) return std::nullopt;
    Diagnosis d;
    d.cause = "memlock_too_small";
    d.detail = "the locked-memory limit (RLIMIT_MEMLOCK) is " + describe_limit(lim->soft) +
               " (hard limit " + describe_limit(lim->hard) +
               "); RDMA registers memory by locking it, and " +
               "registrations beyond the limit fail";
    if (lim->hard == RLIM_INFINITY || lim->hard >= kMemlockRecommended)
        d.fixes.push_back(
            "raise it in this shell: ulimit -l " +
            std::string(lim->hard == RLIM_INFINITY
                            ? "unlimited"
                            : std::to_string(static_cast<unsigned long long>(lim->hard) / 1024)));
    d.fixes.push_back(
        "raise it for good (needs root): in /etc/security/limits.conf add `* soft memlock "
        "unlimited` "
        "and `* hard memlock unlimited`, then log in again");
    d.fixes.push_back(
        "for a systemd service: LimitMEMLOCK=infinity; for a container: docker run --ulimit "
        "memlock=-1");
    return d;
}

Diagnosis diagnose_open_failure(const opendat::registry::ConfigEntry &e, DAT_RETURN rc,
                                const std::string &libdat2_dir) {
    if (DAT_GET_TYPE(rc) == DAT_PROVIDER_NOT_FOUND) return diagnose_not_found(e, libdat2_dir);
    if (auto d = diagnose_missing_device(e, rc)) return *d;
    const bool verbs = is_verbs_provider(e);
    if (verbs && DAT_GET_TYPE(rc) != DAT_INSUFFICIENT_RESOURCES && rdma_device_count() == 0) {
        Diagnosis d;
        d.cause = "no_rdma_devices";
        d.detail =
            "this is a verbs provider and the host has no RDMA devices (/sys/class/infiniband is "
            "empty)";
        d.fixes.push_back(
            "load the adapter's driver, or for testing create a soft-RoCE device: "
            "modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <eth interface>");
        d.fixes.push_back("or use OpenDAT's tcp provider (an entry such as tcp-lo)");
        return d;
    }
    if (DAT_GET_TYPE(rc) == DAT_INSUFFICIENT_RESOURCES) {
        if (auto m = memlock_warning()) return *m;
    }
    Diagnosis d;
    d.cause = "provider_error";
    d.detail = "the provider's ia_open failed with " + decode_dat_return(rc);
    d.fixes.push_back(
        "run again with DAPL_TRACE_LEVEL=7 (OpenDAT providers) or DAPL_DBG_TYPE=0xffff (DAPL "
        "providers) "
        "to see the provider's reason");
    return d;
}

Node diagnosis_node(const Diagnosis &d) {
    Node n = Node::map();
    n.set("cause", d.cause);
    n.set("detail", d.detail);
    Node fixes = Node::list();
    for (const auto &f : d.fixes) fixes.push(f);
    n.set("what_to_do", std::move(fixes));
    return n;
}

}  // namespace datinfo

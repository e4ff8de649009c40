// The one fake DAT provider plugin of the test suites: the registry tests (test/registry),
// datinfo's (test/datinfo) and the front end's (test/frontend) all load this library.
//
// Like the DAPL providers it exports only dat_provider_init/fini and finds
// dat_registry_add_provider/remove_provider in the global scope (libdat2, or the registry
// test executable). One DAT_PROVIDER table per IA name, with device_name = the IA name.
//
// It reports what happens to whichever test host is listening, through hooks it looks up
// as weak symbols in the global scope (absent hooks are simply not called):
//   opendat_test_hook(event, ia_name, value)   registry_tests: "init", "add", "fini",
//                                              "remove", "nested-open", "nested-close",
//                                              "overlap"
//   opendat_test_open/close(ia_name)           registry_tests: for the "open:" mode
//   fj_record / fj_set_int (journal.hpp)       frontend_tests: "init:<ia>", "fini:<ia>",
//                                              "ia_open:<ia>", "ia_query", "ia_close",
//                                              "slot:<index>", "ext_open:<name>",
//                                              "ext_close", "ext", "debug_query",
//                                              "debug_modify", and the ints
//                                              "add_provider.result", "remove_provider.result",
//                                              "ia_close.flags", "ia_query.provider_mask",
//                                              "ext.op", "ext.arg"
//
// The dat.conf ia_params choose the behaviour of an entry:
//   noregister   init registers nothing
//   slow         init and fini sleep a little (widens race windows in the concurrency test)
//   open:<name>  init also opens IA name <name> through the registry (opendat_test_open),
//                fini closes it again: a provider layered on another one
//   good         the front end's IA: adapter and provider named after the IA, IB extensions
//                (version 209), debug_query/debug_modify among 3 provider attributes
//   noext        the same without extensions and without provider attributes
//   fail         ia_open fails with DAT_INVALID_ADDRESS
//   anything else (e.g. "fake 0") the plain IA datinfo reports: adapter "fake-adapter",
//                vendor "OpenDAT tests", provider "fake", a loopback address, small limits,
//                5 provider attributes (extension, ext version, debug_query, debug_modify,
//                fake_attr=hello) and 1 vendor attribute (fake_vendor_attr=vendor-value)
// Every table slot but the SRQ family, cr_handoff, ep_recv_query, ep_set_watermark and
// lmr_sync_rdma_* is filled: most are recording stubs ("slot:<index>" + the handle) that
// answer DAT_SUCCESS; the front end must answer DAT_NOT_IMPLEMENTED for the empty ones.
//
// Like DAPL's providers, init/fini rely on the registry never running two of them at once;
// an "overlap" event reports it if that assumption is ever broken.
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <dat2/dat_trace.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

extern "C" {
// Test hosts' hooks, resolved in the global scope when the plugin loads; null when absent.
__attribute__((weak)) void opendat_test_hook(const char *event, const char *ia_name, int value);
__attribute__((weak)) DAT_RETURN opendat_test_open(const char *ia_name);
__attribute__((weak)) DAT_RETURN opendat_test_close(const char *ia_name);
__attribute__((weak)) void fj_record(const char *event, const void *handle);
__attribute__((weak)) void fj_set_int(const char *key, long value);
}

namespace {

void hook(const char *event, const char *ia_name, int value) {
    if (opendat_test_hook) opendat_test_hook(event, ia_name, value);
}
void record(const std::string &event, const void *handle) {
    if (fj_record) fj_record(event.c_str(), handle);
}
void set_int(const char *key, long value) {
    if (fj_set_int) fj_set_int(key, value);
}

enum class Mode { Plain, Good, NoExt, Fail };

struct Entry {
    DAT_PROVIDER table{};
    DAT_PROVIDER_INFO info{};
    Mode mode = Mode::Plain;
    std::string nested;  // the IA name its init opened ("open:" mode)
};

struct FakeIa {
    const DAT_PROVIDER *provider;  // every handle starts with its provider table
    Entry *entry;
};

std::mutex g_mutex;
std::map<std::string, Entry *> g_entries;
std::atomic<DAT_UINT32> g_level{3};  // the provider's trace level (debug_query/modify)
std::atomic<int> g_busy{0};

void enter(const char *name) {
    if (g_busy.fetch_add(1) != 0) hook("overlap", name, 0);
}
void leave() {
    g_busy.fetch_sub(1);
}

Entry *find_entry(const char *name) {
    std::lock_guard lock(g_mutex);
    auto it = g_entries.find(name);
    return it == g_entries.end() ? nullptr : it->second;
}

template <typename F, int Slot>
struct Stub;
template <typename First, typename... Rest, int Slot>
struct Stub<DAT_RETURN (*)(First, Rest...), Slot> {
    static DAT_RETURN fn(First first, Rest...) {
        record("slot:" + std::to_string(Slot), reinterpret_cast<const void *>(first));
        return DAT_SUCCESS;
    }
};
#define FAKE_STUB(p, member) \
    (p).member = Stub<decltype((p).member), offsetof(DAT_PROVIDER, member) / sizeof(void *)>::fn

DAT_RETURN debug_query(DAT_TRACE_COMPONENT, DAT_UINT32 *level) {
    record("debug_query", nullptr);
    *level = g_level.load();
    return DAT_SUCCESS;
}
DAT_RETURN debug_modify(DAT_TRACE_COMPONENT, DAT_UINT32 level) {
    record("debug_modify", nullptr);
    if (level > DAT_TRACE_LEVEL_MAX)
        return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
    g_level.store(level);
    return DAT_SUCCESS;
}

// Provider-specific attributes: "good" reports the first three, the plain IA all five.
DAT_NAMED_ATTR g_good_attrs[3];
DAT_NAMED_ATTR g_plain_attrs[5];
DAT_NAMED_ATTR g_vendor_attrs[1] = {{"fake_vendor_attr", "vendor-value"}};
sockaddr_in g_address;

void init_attrs() {
    static std::once_flag once;
    std::call_once(once, [] {
        DAT_TRCLVL_QUERY_FUNC q = debug_query;
        DAT_TRCLVL_MODIFY_FUNC m = debug_modify;
        auto fill_hooks = [&](DAT_NAMED_ATTR &query, DAT_NAMED_ATTR &modify) {
            query.name = DAT_VENDOR_ATTR_DEBUG_QUERY;
            std::memcpy(&query.value, &q, sizeof q);
            modify.name = DAT_VENDOR_ATTR_DEBUG_MODIFY;
            std::memcpy(&modify.value, &m, sizeof m);
        };
        g_good_attrs[0] = {DAT_VENDOR_ATTR_EXTENSION, "1.0"};
        fill_hooks(g_good_attrs[1], g_good_attrs[2]);
        g_plain_attrs[0] = {DAT_VENDOR_ATTR_EXTENSION, "1.0"};
        g_plain_attrs[1] = {DAT_VENDOR_ATTR_EXT_VERSION, "1.0"};
        fill_hooks(g_plain_attrs[2], g_plain_attrs[3]);
        g_plain_attrs[4] = {"fake_attr", "hello"};
        g_address.sin_family = AF_INET;
        g_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    });
}

DAT_RETURN ia_open(const DAT_NAME_PTR name, DAT_COUNT, DAT_EVD_HANDLE *, DAT_IA_HANDLE *ia) {
    record(std::string("ia_open:") + name, nullptr);
    Entry *e = find_entry(name);
    if (e == nullptr) return DAT_CLASS_ERROR | DAT_INTERNAL_ERROR;
    if (e->mode == Mode::Fail) return DAT_CLASS_ERROR | DAT_INVALID_ADDRESS;
    *ia = new FakeIa{&e->table, e};
    return DAT_SUCCESS;
}

DAT_RETURN ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags) {
    record("ia_close", ia);
    set_int("ia_close.flags", flags);
    delete static_cast<FakeIa *>(ia);
    return DAT_SUCCESS;
}

void fill_ia_attr(const Entry &e, DAT_IA_ATTR *a) {
    std::memset(static_cast<void *>(a), 0, sizeof *a);
    if (e.mode == Mode::Plain) {
        std::snprintf(a->adapter_name, sizeof a->adapter_name, "fake-adapter");
        std::snprintf(a->vendor_name, sizeof a->vendor_name, "OpenDAT tests");
        a->ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(&g_address);
        a->max_eps = 16;
        a->max_evds = 8;
        a->max_message_size = 65536;
        a->max_pzs = 4;
        a->num_vendor_attr = 1;
        a->vendor_attr = g_vendor_attrs;
        return;
    }
    const bool good = e.mode == Mode::Good;
    std::snprintf(a->adapter_name, sizeof a->adapter_name, "%s", e.info.ia_name);
    a->extension_supported = good ? DAT_EXTENSION_IB : DAT_EXTENSION_NONE;
    a->extension_version = good ? 209 : 0;
}

void fill_provider_attr(const Entry &e, DAT_PROVIDER_ATTR *p) {
    // DAT_PROVIDER_ATTR has a const member: clear it as raw storage, as a C provider would.
    std::memset(static_cast<void *>(p), 0, sizeof *p);
    std::snprintf(p->provider_name, sizeof p->provider_name, "%s",
                  e.mode == Mode::Plain ? "fake" : e.info.ia_name);
    // Must match the dat.conf entry, or dat_ia_close cannot find the registration.
    p->dapl_version_major = e.info.dapl_version_major;
    p->dapl_version_minor = e.info.dapl_version_minor;
    p->is_thread_safe = e.info.is_thread_safe;
    if (e.mode == Mode::Plain) {
        p->provider_version_major = 1;
        p->optimal_buffer_alignment = 256;
        p->num_provider_specific_attr = 5;
        p->provider_specific_attr = g_plain_attrs;
    } else if (e.mode == Mode::Good) {
        p->num_provider_specific_attr = 3;
        p->provider_specific_attr = g_good_attrs;
    }
}

DAT_RETURN ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *evd, DAT_IA_ATTR_MASK ia_mask,
                    DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK provider_mask,
                    DAT_PROVIDER_ATTR *provider_attr) {
    record("ia_query", ia);
    set_int("ia_query.provider_mask", static_cast<long>(provider_mask));
    const Entry &e = *static_cast<FakeIa *>(ia)->entry;
    init_attrs();
    if (evd != nullptr && e.mode == Mode::Plain) *evd = DAT_HANDLE_NULL;
    if (ia_attr != nullptr && ia_mask != 0) fill_ia_attr(e, ia_attr);
    if (provider_attr != nullptr && provider_mask != 0) fill_provider_attr(e, provider_attr);
    return DAT_SUCCESS;
}

DAT_RETURN extendedop(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args) {
    if (op & DAT_OPEN_EXTENSION_BASE) {
        const char *name = static_cast<const char *>(handle);
        record(std::string("ext_open:") + name, handle);
        DAT_HANDLE *out = va_arg(args, DAT_HANDLE *);
        Entry *e = find_entry(name);
        if (e == nullptr || out == nullptr) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER;
        *out = new FakeIa{&e->table, e};
        return DAT_SUCCESS;
    }
    if (op & DAT_CLOSE_EXTENSION_BASE) {
        record("ext_close", handle);
        delete static_cast<FakeIa *>(handle);
        return DAT_SUCCESS;
    }
    set_int("ext.arg", va_arg(args, int));
    set_int("ext.op", op);
    record("ext", handle);
    return DAT_SUCCESS;
}

void fill(Entry &e) {
    DAT_PROVIDER &p = e.table;
    p.device_name = e.info.ia_name;
    p.extension = &e;
    p.ia_open_func = ia_open;
    p.ia_query_func = ia_query;
    p.ia_close_func = ia_close;
    FAKE_STUB(p, set_consumer_context_func);
    FAKE_STUB(p, get_consumer_context_func);
    FAKE_STUB(p, get_handle_type_func);
    FAKE_STUB(p, cno_create_func);
    FAKE_STUB(p, cno_modify_agent_func);
    FAKE_STUB(p, cno_query_func);
    FAKE_STUB(p, cno_free_func);
    FAKE_STUB(p, cno_wait_func);
    FAKE_STUB(p, cr_query_func);
    FAKE_STUB(p, cr_accept_func);
    FAKE_STUB(p, cr_reject_func);
    FAKE_STUB(p, evd_create_func);
    FAKE_STUB(p, evd_query_func);
    FAKE_STUB(p, evd_modify_cno_func);
    FAKE_STUB(p, evd_enable_func);
    FAKE_STUB(p, evd_disable_func);
    FAKE_STUB(p, evd_wait_func);
    FAKE_STUB(p, evd_resize_func);
    FAKE_STUB(p, evd_post_se_func);
    FAKE_STUB(p, evd_dequeue_func);
    FAKE_STUB(p, evd_free_func);
    FAKE_STUB(p, ep_create_func);
    FAKE_STUB(p, ep_query_func);
    FAKE_STUB(p, ep_modify_func);
    FAKE_STUB(p, ep_connect_func);
    FAKE_STUB(p, ep_dup_connect_func);
    FAKE_STUB(p, ep_disconnect_func);
    FAKE_STUB(p, ep_post_send_func);
    FAKE_STUB(p, ep_post_recv_func);
    FAKE_STUB(p, ep_post_rdma_read_func);
    FAKE_STUB(p, ep_post_rdma_write_func);
    FAKE_STUB(p, ep_get_status_func);
    FAKE_STUB(p, ep_free_func);
    FAKE_STUB(p, lmr_create_func);
    FAKE_STUB(p, lmr_query_func);
    FAKE_STUB(p, lmr_free_func);
    FAKE_STUB(p, rmr_create_func);
    FAKE_STUB(p, rmr_query_func);
    FAKE_STUB(p, rmr_bind_func);
    FAKE_STUB(p, rmr_free_func);
    FAKE_STUB(p, psp_create_func);
    FAKE_STUB(p, psp_query_func);
    FAKE_STUB(p, psp_free_func);
    FAKE_STUB(p, rsp_create_func);
    FAKE_STUB(p, rsp_query_func);
    FAKE_STUB(p, rsp_free_func);
    FAKE_STUB(p, pz_create_func);
    FAKE_STUB(p, pz_query_func);
    FAKE_STUB(p, pz_free_func);
    FAKE_STUB(p, psp_create_any_func);
    FAKE_STUB(p, ep_reset_func);
    FAKE_STUB(p, evd_set_unwaitable_func);
    FAKE_STUB(p, evd_clear_unwaitable_func);
    // Deliberately empty: cr_handoff, lmr_sync_rdma_read/write, ep_create_with_srq,
    // ep_recv_query, ep_set_watermark, srq_* (the front end must answer DAT_NOT_IMPLEMENTED).
    p.handle_extendedop_func = extendedop;
}

Mode mode_of(const std::string &params) {
    if (params == "good") return Mode::Good;
    if (params == "noext") return Mode::NoExt;
    if (params == "fail") return Mode::Fail;
    return Mode::Plain;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void dat_provider_init(const DAT_PROVIDER_INFO *info,
                                                              const char *instance_data) {
    const std::string params = instance_data != nullptr ? instance_data : "";
    enter(info->ia_name);
    hook("init", info->ia_name, 0);
    record(std::string("init:") + info->ia_name, nullptr);
    if (params == "slow") usleep(200);
    if (params == "noregister") {
        leave();
        return;
    }
    auto *e = new Entry;
    e->info = *info;
    e->mode = mode_of(params);
    fill(*e);
    if (params.rfind("open:", 0) == 0 && opendat_test_open) {
        // Leave the "busy" section: a nested init of another entry is legitimate.
        leave();
        const DAT_RETURN rc = opendat_test_open(params.c_str() + 5);
        hook("nested-open", info->ia_name, static_cast<int>(rc));
        enter(info->ia_name);
        if (rc == DAT_SUCCESS) e->nested = params.substr(5);
    }
    {
        std::lock_guard lock(g_mutex);
        auto [it, inserted] = g_entries.emplace(info->ia_name, e);
        if (!inserted) {  // initialised again without a fini: keep the registered table
            delete e;
            e = it->second;
        }
    }
    const DAT_RETURN rc = dat_registry_add_provider(&e->table, info);
    hook("add", info->ia_name, static_cast<int>(rc));
    set_int("add_provider.result", static_cast<long>(rc));
    leave();
}

__attribute__((visibility("default"))) void dat_provider_fini(const DAT_PROVIDER_INFO *info) {
    enter(info->ia_name);
    hook("fini", info->ia_name, 0);
    record(std::string("fini:") + info->ia_name, nullptr);
    usleep(50);
    Entry *e = nullptr;
    {
        std::lock_guard lock(g_mutex);
        auto it = g_entries.find(info->ia_name);
        if (it != g_entries.end()) {
            e = it->second;
            g_entries.erase(it);
        }
    }
    if (e == nullptr) {
        leave();
        return;
    }
    const DAT_RETURN rc = dat_registry_remove_provider(&e->table, &e->info);
    hook("remove", info->ia_name, static_cast<int>(rc));
    set_int("remove_provider.result", static_cast<long>(rc));
    const std::string nested = e->nested;
    delete e;
    leave();
    if (!nested.empty() && opendat_test_close) {
        const DAT_RETURN c = opendat_test_close(nested.c_str());
        hook("nested-close", info->ia_name, static_cast<int>(c));
    }
}

}  // extern "C"

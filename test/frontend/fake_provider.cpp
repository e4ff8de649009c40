// A fake DAPL-style provider plugin for the front-end tests.
//
// Like the DAPL providers it exports only dat_provider_init/fini and finds
// dat_registry_add_provider/remove_provider in the global scope (the test executable links
// libdat2). One DAT_PROVIDER table per IA name; the dat.conf ia_params choose the mode:
//   good   - extensions supported, "debug_query"/"debug_modify" vendor attributes
//   noext  - no extensions, no vendor attributes
//   fail   - ia_open fails with DAT_INVALID_ADDRESS
// Most slots are recording stubs (journal.hpp: "slot:<index>" + the handle received);
// the SRQ family, cr_handoff, ep_recv_query, ep_set_watermark and lmr_sync_rdma_* stay NULL.
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <dat2/dat_trace.h>

#include "journal.hpp"

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

struct Entry {
    DAT_PROVIDER table{};
    DAT_PROVIDER_INFO info{};
    std::string mode;
};

struct FakeIa {
    const DAT_PROVIDER *provider;  // every handle starts with its provider table
    Entry *entry;
};

std::mutex g_mutex;
std::map<std::string, Entry *> g_entries;
std::atomic<DAT_UINT32> g_level{3};

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
        const std::string event = "slot:" + std::to_string(Slot);
        fj_record(event.c_str(), reinterpret_cast<const void *>(first));
        return DAT_SUCCESS;
    }
};
#define FAKE_STUB(p, member) \
    (p).member = Stub<decltype((p).member), offsetof(DAT_PROVIDER, member) / sizeof(void *)>::fn

DAT_RETURN debug_query(DAT_TRACE_COMPONENT, DAT_UINT32 *level) {
    fj_record("debug_query", nullptr);
    *level = g_level.load();
    return DAT_SUCCESS;
}
DAT_RETURN debug_modify(DAT_TRACE_COMPONENT, DAT_UINT32 level) {
    fj_record("debug_modify", nullptr);
    g_level.store(level);
    return DAT_SUCCESS;
}

DAT_NAMED_ATTR g_vendor_attrs[3];

void init_vendor_attrs() {
    static std::once_flag once;
    std::call_once(once, [] {
        static const char ext_version[] = "1.0";
        g_vendor_attrs[0].name = DAT_VENDOR_ATTR_EXTENSION;
        g_vendor_attrs[0].value = ext_version;
        DAT_TRCLVL_QUERY_FUNC q = debug_query;
        DAT_TRCLVL_MODIFY_FUNC m = debug_modify;
        g_vendor_attrs[1].name = DAT_VENDOR_ATTR_DEBUG_QUERY;
        std::memcpy(&g_vendor_attrs[1].value, &q, sizeof q);
        g_vendor_attrs[2].name = DAT_VENDOR_ATTR_DEBUG_MODIFY;
        std::memcpy(&g_vendor_attrs[2].value, &m, sizeof m);
    });
}

DAT_RETURN ia_open(const DAT_NAME_PTR name, DAT_COUNT, DAT_EVD_HANDLE *, DAT_IA_HANDLE *ia) {
    fj_record((std::string("ia_open:") + name).c_str(), nullptr);
    Entry *e = find_entry(name);
    if (e == nullptr) return DAT_CLASS_ERROR | DAT_INTERNAL_ERROR;
    if (e->mode == "fail") return DAT_CLASS_ERROR | DAT_INVALID_ADDRESS;
    *ia = new FakeIa{&e->table, e};
    return DAT_SUCCESS;
}

DAT_RETURN ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags) {
    fj_record("ia_close", ia);
    fj_set_int("ia_close.flags", flags);
    delete static_cast<FakeIa *>(ia);
    return DAT_SUCCESS;
}

DAT_RETURN ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *, DAT_IA_ATTR_MASK ia_mask,
                    DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK provider_mask,
                    DAT_PROVIDER_ATTR *provider_attr) {
    fj_record("ia_query", ia);
    fj_set_int("ia_query.provider_mask", static_cast<long>(provider_mask));
    const Entry *e = static_cast<FakeIa *>(ia)->entry;
    const bool good = e->mode == "good";
    if (ia_attr != nullptr && ia_mask != 0) {
        std::memset(static_cast<void *>(ia_attr), 0, sizeof *ia_attr);
        std::snprintf(ia_attr->adapter_name, sizeof ia_attr->adapter_name, "%s", e->info.ia_name);
        ia_attr->extension_supported = good ? DAT_EXTENSION_IB : DAT_EXTENSION_NONE;
        ia_attr->extension_version = good ? 209 : 0;
    }
    if (provider_attr != nullptr && provider_mask != 0) {
        // DAT_PROVIDER_ATTR has a const member: clear it as raw storage, as a C provider would.
        std::memset(static_cast<void *>(provider_attr), 0, sizeof *provider_attr);
        std::snprintf(provider_attr->provider_name, sizeof provider_attr->provider_name, "%s",
                      e->info.ia_name);
        provider_attr->dapl_version_major = e->info.dapl_version_major;
        provider_attr->dapl_version_minor = e->info.dapl_version_minor;
        provider_attr->is_thread_safe = e->info.is_thread_safe;
        if (good) {
            init_vendor_attrs();
            provider_attr->num_provider_specific_attr = 3;
            provider_attr->provider_specific_attr = g_vendor_attrs;
        }
    }
    return DAT_SUCCESS;
}

DAT_RETURN extendedop(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args) {
    if (op & DAT_OPEN_EXTENSION_BASE) {
        const char *name = static_cast<const char *>(handle);
        fj_record((std::string("ext_open:") + name).c_str(), handle);
        DAT_HANDLE *out = va_arg(args, DAT_HANDLE *);
        Entry *e = find_entry(name);
        if (e == nullptr || out == nullptr) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER;
        *out = new FakeIa{&e->table, e};
        return DAT_SUCCESS;
    }
    if (op & DAT_CLOSE_EXTENSION_BASE) {
        fj_record("ext_close", handle);
        delete static_cast<FakeIa *>(handle);
        return DAT_SUCCESS;
    }
    fj_set_int("ext.arg", va_arg(args, int));
    fj_set_int("ext.op", op);
    fj_record("ext", handle);
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

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void dat_provider_init(const DAT_PROVIDER_INFO *info,
                                                              const char *instance_data) {
    fj_record((std::string("init:") + info->ia_name).c_str(), nullptr);
    auto *e = new Entry;
    e->info = *info;
    e->mode = instance_data != nullptr ? instance_data : "good";
    fill(*e);
    {
        std::lock_guard lock(g_mutex);
        g_entries[info->ia_name] = e;
    }
    const DAT_RETURN r = dat_registry_add_provider(&e->table, info);
    fj_set_int("add_provider.result", static_cast<long>(r));
}

__attribute__((visibility("default"))) void dat_provider_fini(const DAT_PROVIDER_INFO *info) {
    fj_record((std::string("fini:") + info->ia_name).c_str(), nullptr);
    Entry *e = nullptr;
    {
        std::lock_guard lock(g_mutex);
        auto it = g_entries.find(info->ia_name);
        if (it == g_entries.end()) return;
        e = it->second;
        g_entries.erase(it);
    }
    const DAT_RETURN r = dat_registry_remove_provider(&e->table, &e->info);
    fj_set_int("remove_provider.result", static_cast<long>(r));
    delete e;
}

}  // extern "C"

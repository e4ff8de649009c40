/* A tiny DAT provider for the datinfo tests: registers one table per IA name, opens,
 * queries and closes IAs, and reports provider-specific attributes including the
 * debug_query/debug_modify trace functions (dat_trace.h). Every other table slot is NULL:
 * datinfo calls nothing else.
 *
 * ia_params: "noregister" -> dat_provider_init registers nothing; anything else -> normal. */
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <dat2/dat_trace.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { kSlots = 8 };
static DAT_PROVIDER g_tables[kSlots];
static char g_names[kSlots][DAT_NAME_MAX_LENGTH];
static DAT_PROVIDER_INFO g_infos[kSlots];
static DAT_UINT32 g_level = 3; /* the provider's trace level, changed through debug_modify */

struct fake_ia {
    DAT_PROVIDER *provider; /* every DAT handle starts with its provider table */
    int slot;
};

static DAT_RETURN debug_query(DAT_TRACE_COMPONENT component, DAT_UINT32 *level) {
    (void)component;
    *level = g_level;
    return DAT_SUCCESS;
}

static DAT_RETURN debug_modify(DAT_TRACE_COMPONENT component, DAT_UINT32 level) {
    (void)component;
    if (level > DAT_TRACE_LEVEL_MAX)
        return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
    g_level = level;
    return DAT_SUCCESS;
}

static DAT_NAMED_ATTR g_provider_attrs[5];
static DAT_NAMED_ATTR g_vendor_attrs[1] = {{"fake_vendor_attr", "vendor-value"}};
static struct sockaddr_in g_address;

static void init_attrs(void) {
    DAT_TRCLVL_QUERY_FUNC q = debug_query;
    DAT_TRCLVL_MODIFY_FUNC m = debug_modify;
    g_provider_attrs[0].name = DAT_VENDOR_ATTR_EXTENSION;
    g_provider_attrs[0].value = "1.0";
    g_provider_attrs[1].name = DAT_VENDOR_ATTR_EXT_VERSION;
    g_provider_attrs[1].value = "1.0";
    g_provider_attrs[2].name = DAT_VENDOR_ATTR_DEBUG_QUERY;
    memcpy(&g_provider_attrs[2].value, &q, sizeof q);
    g_provider_attrs[3].name = DAT_VENDOR_ATTR_DEBUG_MODIFY;
    memcpy(&g_provider_attrs[3].value, &m, sizeof m);
    g_provider_attrs[4].name = "fake_attr";
    g_provider_attrs[4].value = "hello";
    g_address.sin_family = AF_INET;
    g_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static int slot_of(const char *name) {
    for (int i = 0; i < kSlots; ++i)
        if (strcmp(g_names[i], name) == 0) return i;
    return -1;
}

static DAT_RETURN ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *evd,
                          DAT_IA_HANDLE *ia) {
    (void)qlen;
    (void)evd;
    int slot = slot_of(name);
    if (slot < 0) return DAT_CLASS_ERROR | DAT_INTERNAL_ERROR;
    struct fake_ia *f = malloc(sizeof *f);
    if (f == NULL) return DAT_CLASS_ERROR | DAT_INSUFFICIENT_RESOURCES;
    f->provider = &g_tables[slot];
    f->slot = slot;
    *ia = f;
    return DAT_SUCCESS;
}

static DAT_RETURN ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags) {
    (void)flags;
    free(ia);
    return DAT_SUCCESS;
}

static DAT_RETURN ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *evd, DAT_IA_ATTR_MASK ia_mask,
                           DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK provider_mask,
                           DAT_PROVIDER_ATTR *provider_attr) {
    const struct fake_ia *f = ia;
    const DAT_PROVIDER_INFO *info = &g_infos[f->slot];
    if (evd != NULL) *evd = DAT_HANDLE_NULL;
    if (ia_attr != NULL && ia_mask != 0) {
        memset(ia_attr, 0, sizeof *ia_attr);
        snprintf(ia_attr->adapter_name, sizeof ia_attr->adapter_name, "fake-adapter");
        snprintf(ia_attr->vendor_name, sizeof ia_attr->vendor_name, "OpenDAT tests");
        ia_attr->ia_address_ptr = (DAT_IA_ADDRESS_PTR)&g_address;
        ia_attr->max_eps = 16;
        ia_attr->max_evds = 8;
        ia_attr->max_message_size = 65536;
        ia_attr->max_pzs = 4;
        ia_attr->num_vendor_attr = 1;
        ia_attr->vendor_attr = g_vendor_attrs;
    }
    if (provider_attr != NULL && provider_mask != 0) {
        /* DAT_PROVIDER_ATTR has a const member: clear it as raw storage. */
        memset((void *)provider_attr, 0, sizeof *provider_attr);
        snprintf(provider_attr->provider_name, sizeof provider_attr->provider_name, "fake");
        provider_attr->provider_version_major = 1;
        /* Must match the dat.conf entry, or dat_ia_close cannot find the registration. */
        provider_attr->dapl_version_major = info->dapl_version_major;
        provider_attr->dapl_version_minor = info->dapl_version_minor;
        provider_attr->is_thread_safe = info->is_thread_safe;
        provider_attr->optimal_buffer_alignment = 256;
        provider_attr->num_provider_specific_attr = 5;
        provider_attr->provider_specific_attr = g_provider_attrs;
    }
    return DAT_SUCCESS;
}

EXPORT void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data) {
    if (instance_data != NULL && strcmp(instance_data, "noregister") == 0) return;
    init_attrs();
    int slot = slot_of(info->ia_name);
    for (int i = 0; slot < 0 && i < kSlots; ++i)
        if (g_names[i][0] == '\0') slot = i;
    if (slot < 0) return;
    snprintf(g_names[slot], sizeof g_names[slot], "%s", info->ia_name);
    g_infos[slot] = *info;
    DAT_PROVIDER *p = &g_tables[slot];
    p->device_name = g_names[slot];
    p->ia_open_func = ia_open;
    p->ia_query_func = ia_query;
    p->ia_close_func = ia_close;
    dat_registry_add_provider(p, info);
}

EXPORT void dat_provider_fini(const DAT_PROVIDER_INFO *info) {
    int slot = slot_of(info->ia_name);
    if (slot < 0) return;
    dat_registry_remove_provider(&g_tables[slot], info);
    g_names[slot][0] = '\0';
}

/*
 * example_provider: the smallest useful DAT provider plugin (docs/provider-guide.md).
 *
 * It serves any IA name dat.conf gives it. Its IA opens, answers dat_ia_query with sensible
 * IA and provider attributes (including the OpenDAT vendor attributes vendor_extension,
 * vendor_ext_version, delayed_ack_supported and the debug_query/debug_modify trace
 * functions of <dat2/dat_trace.h>), creates protection zones, and closes. Every other
 * operation is left out of the table: OpenDAT's libdat2 answers DAT_NOT_IMPLEMENTED for an
 * empty slot.
 *
 * dat.conf line (ia_params: the adapter name the IA reports):
 *   example u2.0 nonthreadsafe default /path/to/libopendat-example.so example.1.0 "demo-adapter" ""
 *
 * Build on its own:
 *   cc -std=c11 -shared -fPIC -fvisibility=hidden -o libopendat-example.so example_provider.c \
 *      $(pkg-config --cflags dat2)
 * (no -ldat2: the registry functions come from the libdat2 that loads the plugin).
 */
#define _POSIX_C_SOURCE 200809L
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <dat2/dat_trace.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Only the two entry points leave the plugin (build with -fvisibility=hidden). */
#define EXPORT __attribute__((visibility("default")))

#define EXAMPLE_MAGIC_IA 0x45584941u /* "EXIA" */
#define EXAMPLE_MAGIC_PZ 0x45585a50u /* "EXPZ" */
#define EXAMPLE_MAGIC_DEAD 0xdeadbeefu

/* ---- trace: a level, changed at run time through debug_modify ---------------------------- */

static DAT_UINT32 trace_level = DAT_TRACE_LEVEL_ERROR;

static void trace(DAT_UINT32 level, const char *fmt, ...) {
    if (level > trace_level) return; /* a disabled trace point costs one comparison */
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof line, "DAPL %s example: ", level <= 1 ? "ERR" : "EVT");
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

static DAT_RETURN debug_query(DAT_TRACE_COMPONENT component, DAT_UINT32 *level) {
    if (level == NULL) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
    if (component != DAT_TRACE_COMPONENT_DAPL) return DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED;
    *level = trace_level;
    return DAT_SUCCESS;
}

static DAT_RETURN debug_modify(DAT_TRACE_COMPONENT component, DAT_UINT32 level) {
    if (level > DAT_TRACE_LEVEL_MAX)
        return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
    if (component != DAT_TRACE_COMPONENT_DAPL) return DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED;
    trace_level = level;
    return DAT_SUCCESS;
}

/* ---- one instance per IA name the registry initialised us for --------------------------- */

struct instance {
    DAT_PROVIDER table;     /* what the registry dispatches through */
    DAT_PROVIDER_INFO info; /* the dat.conf key: echoed in the provider attributes */
    char adapter[DAT_NAME_MAX_LENGTH];
    struct instance *next;
};
static struct instance *instances; /* init/fini are serialised by the registry */

/* Every handle we hand out starts with the DAT_PROVIDER pointer: libdat2 loads that first
 * word to dispatch. The magic lets us reject stale or foreign handles. */
struct example_ia {
    DAT_PROVIDER *provider;
    unsigned magic;
    struct instance *inst;
    DAT_CONTEXT context;
};
struct example_pz {
    DAT_PROVIDER *provider;
    unsigned magic;
    struct example_ia *ia;
    DAT_CONTEXT context;
};

static struct example_ia *as_ia(DAT_HANDLE h) {
    struct example_ia *ia = h;
    return ia != NULL && ia->magic == EXAMPLE_MAGIC_IA ? ia : NULL;
}
static struct example_pz *as_pz(DAT_HANDLE h) {
    struct example_pz *pz = h;
    return pz != NULL && pz->magic == EXAMPLE_MAGIC_PZ ? pz : NULL;
}

/* The IA handle the *consumer* holds for our IA. libdat2 gives consumers its own handles
 * (small integers, like the reference) and calls us with our raw pointer; whenever we
 * report an IA handle back (dat_pz_query, dat_ep_query, events...) we translate it with
 * the host's dats_get_ia_handle(), which maps raw -> consumer handle. Declared weak: a
 * libdat2 without it leaves the raw pointer. */
extern DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE, DAT_IA_HANDLE *) __attribute__((weak));
static DAT_IA_HANDLE consumer_ia_handle(struct example_ia *ia) {
    DAT_IA_HANDLE out = NULL;
    if (dats_get_ia_handle != NULL && dats_get_ia_handle(ia, &out) == DAT_SUCCESS && out != NULL)
        return out;
    return ia;
}

/* ---- the IA ---------------------------------------------------------------------------- */

static DAT_NAMED_ATTR specific_attrs[5];
static struct sockaddr_in ia_address;

static DAT_RETURN ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
                          DAT_IA_HANDLE *out) {
    (void)qlen;
    struct instance *inst = instances;
    while (inst != NULL && strcmp(inst->info.ia_name, name) != 0) inst = inst->next;
    if (inst == NULL) return DAT_CLASS_ERROR | DAT_PROVIDER_NOT_FOUND;
    if (out == NULL) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG4;
    struct example_ia *ia = calloc(1, sizeof *ia);
    if (ia == NULL) return DAT_CLASS_ERROR | DAT_INSUFFICIENT_RESOURCES | DAT_RESOURCE_MEMORY;
    ia->provider = &inst->table;
    ia->magic = EXAMPLE_MAGIC_IA;
    ia->inst = inst;
    /* No EVDs here, so no async EVD either (a real provider creates one when *async_evd is
     * DAT_HANDLE_NULL, or uses the one given). */
    if (async_evd != NULL) *async_evd = DAT_HANDLE_NULL;
    *out = ia;
    trace(DAT_TRACE_LEVEL_NORMAL, "opened %s as %p", name, (void *)ia);
    return DAT_SUCCESS;
}

static DAT_RETURN ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags) {
    (void)flags; /* abrupt or graceful: we hold nothing that needs draining */
    struct example_ia *ia = as_ia(h);
    if (ia == NULL) return DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_IA;
    trace(DAT_TRACE_LEVEL_NORMAL, "closing %s", ia->inst->info.ia_name);
    ia->magic = EXAMPLE_MAGIC_DEAD;
    free(ia);
    return DAT_SUCCESS;
}

static DAT_RETURN ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK ia_mask,
                           DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK provider_mask,
                           DAT_PROVIDER_ATTR *pa) {
    struct example_ia *ia = as_ia(h);
    if (ia == NULL) return DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_IA;
    if (async_evd != NULL) *async_evd = DAT_HANDLE_NULL;
    if (ia_attr != NULL && ia_mask != 0) {
        memset(ia_attr, 0, sizeof *ia_attr);
        snprintf(ia_attr->adapter_name, sizeof ia_attr->adapter_name, "%s", ia->inst->adapter);
        snprintf(ia_attr->vendor_name, sizeof ia_attr->vendor_name, "OpenDAT example");
        ia_attr->hardware_version_major = 1;
        ia_attr->ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ia_address;
        ia_attr->max_pzs = 16; /* the one kind of object we create */
        ia_attr->max_message_size = 0;
        ia_attr->extension_supported = DAT_EXTENSION_NONE;
    }
    if (pa != NULL && provider_mask != 0) {
        const DAT_PROVIDER_INFO *info = &ia->inst->info;
        /* DAT_PROVIDER_ATTR has a const member: clear it as raw storage. */
        memset((void *)pa, 0, sizeof *pa);
        snprintf(pa->provider_name, sizeof pa->provider_name, "%s", info->ia_name);
        pa->provider_version_major = 1;
        /* These three must echo the dat.conf key: libdat2 finds the registry entry with
         * them when the IA is closed. */
        pa->dapl_version_major = info->dapl_version_major;
        pa->dapl_version_minor = info->dapl_version_minor;
        pa->is_thread_safe = info->is_thread_safe;
        pa->lmr_mem_types_supported = DAT_MEM_TYPE_VIRTUAL;
        pa->iov_ownership_on_return = DAT_IOV_CONSUMER;
        pa->dat_qos_supported = DAT_QOS_BEST_EFFORT;
        pa->completion_flags_supported = DAT_COMPLETION_DEFAULT_FLAG;
        pa->ep_creator = DAT_PSP_CREATES_EP_NEVER;
        pa->pz_support = DAT_PZ_UNIQUE;
        pa->optimal_buffer_alignment = 64;
        pa->num_provider_specific_attr =
            (DAT_COUNT)(sizeof specific_attrs / sizeof specific_attrs[0]);
        pa->provider_specific_attr = specific_attrs;
    }
    return DAT_SUCCESS;
}

/* ---- generic handle operations ------------------------------------------------------------ */

static DAT_RETURN get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *type) {
    if (type == NULL) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
    if (as_ia(h) != NULL)
        *type = DAT_HANDLE_TYPE_IA;
    else if (as_pz(h) != NULL)
        *type = DAT_HANDLE_TYPE_PZ;
    else
        return DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE1;
    return DAT_SUCCESS;
}

static DAT_CONTEXT *context_of(DAT_HANDLE h) {
    if (as_ia(h) != NULL) return &as_ia(h)->context;
    if (as_pz(h) != NULL) return &as_pz(h)->context;
    return NULL;
}
static DAT_RETURN set_consumer_context(DAT_HANDLE h, DAT_CONTEXT context) {
    DAT_CONTEXT *c = context_of(h);
    if (c == NULL) return DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE1;
    *c = context;
    return DAT_SUCCESS;
}
static DAT_RETURN get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *context) {
    DAT_CONTEXT *c = context_of(h);
    if (c == NULL) return DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE1;
    if (context == NULL) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
    *context = *c;
    return DAT_SUCCESS;
}

/* ---- protection zones: a child object, and where the IA handle rule shows --------------- */

static DAT_RETURN pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE *out) {
    struct example_ia *ia = as_ia(h);
    if (ia == NULL) return DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_IA;
    if (out == NULL) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
    struct example_pz *pz = calloc(1, sizeof *pz);
    if (pz == NULL) return DAT_CLASS_ERROR | DAT_INSUFFICIENT_RESOURCES | DAT_RESOURCE_MEMORY;
    pz->provider = ia->provider; /* the same table: the first word of every handle */
    pz->magic = EXAMPLE_MAGIC_PZ;
    pz->ia = ia;
    *out = pz;
    return DAT_SUCCESS;
}

static DAT_RETURN pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param) {
    struct example_pz *pz = as_pz(h);
    if (pz == NULL) return DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_PZ;
    if (param == NULL) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG3;
    if (mask & DAT_PZ_FIELD_IA_HANDLE) param->ia_handle = consumer_ia_handle(pz->ia);
    return DAT_SUCCESS;
}

static DAT_RETURN pz_free(DAT_PZ_HANDLE h) {
    struct example_pz *pz = as_pz(h);
    if (pz == NULL) return DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_PZ;
    pz->magic = EXAMPLE_MAGIC_DEAD;
    free(pz);
    return DAT_SUCCESS;
}

/* ---- the registry entry points -------------------------------------------------------------- */

static void init_attrs(void) {
    DAT_TRCLVL_QUERY_FUNC q = debug_query;
    DAT_TRCLVL_MODIFY_FUNC m = debug_modify;
    specific_attrs[0].name = DAT_VENDOR_ATTR_EXTENSION;
    specific_attrs[0].value = "1.0";
    specific_attrs[1].name = DAT_VENDOR_ATTR_EXT_VERSION;
    specific_attrs[1].value = "1.0";
    specific_attrs[2].name = DAT_VENDOR_ATTR_DELAYED_ACK_SUPPORTED;
    specific_attrs[2].value = "false";
    /* The function pointers travel in the value field (see dat_trclvl_attr_query). */
    specific_attrs[3].name = DAT_VENDOR_ATTR_DEBUG_QUERY;
    memcpy(&specific_attrs[3].value, &q, sizeof q);
    specific_attrs[4].name = DAT_VENDOR_ATTR_DEBUG_MODIFY;
    memcpy(&specific_attrs[4].value, &m, sizeof m);
    ia_address.sin_family = AF_INET;
    ia_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const char *level = getenv("DAPL_TRACE_LEVEL"); /* the providers' trace variable */
    if (level != NULL && atoi(level) >= 0 && atoi(level) <= DAT_TRACE_LEVEL_MAX)
        trace_level = (DAT_UINT32)atoi(level);
}

/* Called once per dat.conf entry naming this library, when a program first opens it.
 * `info` is the entry's key (IA name, API version, thread safety); `ia_params` its
 * ia_params field. Register a table under exactly that key. */
EXPORT void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *ia_params) {
    init_attrs();
    struct instance *inst = calloc(1, sizeof *inst);
    if (inst == NULL) return;
    inst->info = *info;
    snprintf(inst->adapter, sizeof inst->adapter, "%s",
             ia_params != NULL && ia_params[0] != '\0' ? ia_params : "example-adapter");
    DAT_PROVIDER *t = &inst->table;
    t->device_name = inst->info.ia_name;
    t->extension = inst;
    t->ia_open_func = ia_open;
    t->ia_query_func = ia_query;
    t->ia_close_func = ia_close;
    t->set_consumer_context_func = set_consumer_context;
    t->get_consumer_context_func = get_consumer_context;
    t->get_handle_type_func = get_handle_type;
    t->pz_create_func = pz_create;
    t->pz_query_func = pz_query;
    t->pz_free_func = pz_free;
    /* Every other slot stays NULL: OpenDAT's libdat2 answers DAT_NOT_IMPLEMENTED. */
    /* Pass back the registry's own `info` pointer, as it was given. */
    DAT_RETURN rc = dat_registry_add_provider(t, info);
    trace(rc == DAT_SUCCESS ? DAT_TRACE_LEVEL_NORMAL : DAT_TRACE_LEVEL_ERROR,
          "register %s (ia_params \"%s\"): 0x%x", info->ia_name, ia_params ? ia_params : "", rc);
    if (rc != DAT_SUCCESS) {
        free(inst);
        return;
    }
    inst->next = instances;
    instances = inst;
}

/* Called when the last user of the entry has closed it, before the library is unloaded. */
EXPORT void dat_provider_fini(const DAT_PROVIDER_INFO *info) {
    for (struct instance **p = &instances; *p != NULL; p = &(*p)->next) {
        struct instance *inst = *p;
        if (strcmp(inst->info.ia_name, info->ia_name) != 0 ||
            inst->info.is_thread_safe != info->is_thread_safe)
            continue;
        dat_registry_remove_provider(&inst->table, info);
        trace(DAT_TRACE_LEVEL_NORMAL, "unregister %s", info->ia_name);
        *p = inst->next;
        free(inst);
        return;
    }
}

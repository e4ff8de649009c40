/*
 * registry_demo: what the DAT registry knows and what happens when each IA is opened.
 *
 * Lists the entries of the active dat.conf with dat_registry_list_providers(), then opens
 * every IA with dat_ia_openv() as the entry says (api version and thread safety: the
 * registry matches an open against the name *and* those, so a "threadsafe" entry is not
 * found by a non-thread-safe open), prints the adapter and provider names it reports (or
 * the error, decoded with dat_strerror) and closes it again.
 *
 *   registry_demo            every configured IA
 *   registry_demo NAME...    only the IAs named (opened as their entry says, when listed)
 */
#include <dat2/udat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ENTRIES = 256 };

static void print_error(const char *what, DAT_RETURN rc) {
    const char *major = "";
    const char *minor = "";
    dat_strerror(rc, &major, &minor);
    printf("    %s failed: 0x%08x %s %s\n", what, (unsigned)rc, major, minor);
}

/* Opens one IA as its registry entry describes, prints what it reports and closes it.
 * Returns 0 if it opened. */
static int try_ia(const DAT_PROVIDER_INFO *entry) {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    /* DAT_NAME_PTR is a non-const char *; the API does not modify the name. */
    DAT_RETURN rc =
        dat_ia_openv((DAT_NAME_PTR)entry->ia_name, 8, &async_evd, &ia, entry->dapl_version_major,
                     entry->dapl_version_minor, entry->is_thread_safe);
    printf("  %s\n", entry->ia_name);
    if (rc != DAT_SUCCESS) {
        print_error("dat_ia_open", rc);
        return 1;
    }

    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR prov_attr;
    memset(&ia_attr, 0, sizeof ia_attr);
    memset(&prov_attr, 0, sizeof prov_attr);
    rc = dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &prov_attr);
    if (rc == DAT_SUCCESS) {
        printf("    adapter %s (vendor %s), provider %s %u.%u, max_eps %d, max_srqs %d\n",
               ia_attr.adapter_name, ia_attr.vendor_name, prov_attr.provider_name,
               prov_attr.provider_version_major, prov_attr.provider_version_minor, ia_attr.max_eps,
               ia_attr.max_srqs);
        for (int i = 0; i < prov_attr.num_provider_specific_attr; i++) {
            const DAT_NAMED_ATTR *a = &prov_attr.provider_specific_attr[i];
            /* debug_query/debug_modify carry function pointers, not strings */
            int is_fn = strncmp(a->name, "debug_", 6) == 0;
            printf("      %-24s %s\n", a->name, is_fn ? "(function)" : a->value);
        }
    } else {
        print_error("dat_ia_query", rc);
    }
    rc = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    if (rc != DAT_SUCCESS) print_error("dat_ia_close", rc);
    return 0;
}

/* The registry entry named NAME, or, for a name the registry does not list, an entry that
 * opens it as this program's headers would (dat_ia_open's defaults). */
static DAT_PROVIDER_INFO entry_for(const char *name, const DAT_PROVIDER_INFO *infos,
                                   DAT_COUNT count) {
    for (DAT_COUNT i = 0; i < count; i++)
        if (strcmp(infos[i].ia_name, name) == 0) return infos[i];
    DAT_PROVIDER_INFO e;
    memset(&e, 0, sizeof e);
    snprintf(e.ia_name, sizeof e.ia_name, "%s", name);
    e.dapl_version_major = DAT_VERSION_MAJOR;
    e.dapl_version_minor = DAT_VERSION_MINOR;
    e.is_thread_safe = DAT_THREADSAFE;
    return e;
}

int main(int argc, char **argv) {
    static DAT_PROVIDER_INFO infos[MAX_ENTRIES];
    DAT_PROVIDER_INFO *list[MAX_ENTRIES];
    for (int i = 0; i < MAX_ENTRIES; i++) list[i] = &infos[i];
    DAT_COUNT count = 0;
    DAT_RETURN rc = dat_registry_list_providers(MAX_ENTRIES, &count, list);
    if (rc != DAT_SUCCESS) {
        print_error("dat_registry_list_providers", rc);
        return 1;
    }
    if (argc > 1) {
        int failed = 0;
        for (int i = 1; i < argc; i++) {
            DAT_PROVIDER_INFO e = entry_for(argv[i], infos, count);
            failed |= try_ia(&e);
        }
        return failed;
    }

    printf("%d registry entr%s:\n", count, count == 1 ? "y" : "ies");
    for (int i = 0; i < count; i++)
        printf("  %-24s api %u.%u %s\n", infos[i].ia_name, infos[i].dapl_version_major,
               infos[i].dapl_version_minor,
               infos[i].is_thread_safe ? "threadsafe" : "nonthreadsafe");
    printf("opening each IA:\n");
    int failed = 0;
    for (int i = 0; i < count; i++) failed |= try_ia(&infos[i]);
    return failed;
}

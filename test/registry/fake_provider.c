#define _DEFAULT_SOURCE 1 /* usleep */
/* A fake DAT provider for the registry tests. dat_provider_init registers one DAT_PROVIDER
 * table per IA name (as DAPL does); dat_provider_fini removes it. Both report to the test
 * executable through opendat_test_hook, which the executable exports (-rdynamic), exactly
 * like dat_registry_add_provider itself.
 *
 * instance_data (the entry's ia_params) selects the behaviour:
 *   "noregister"  init registers nothing;
 *   "slow"        init and fini sleep a little (widens race windows in the concurrency test);
 *   "open:<name>" init also opens IA name <name> through the registry (opendat_test_open),
 *                 fini closes it again: a provider layered on another one;
 *   anything else init registers the table under the info it was given.
 *
 * Like DAPL's providers, this one keeps unsynchronised per-library state and relies on the
 * registry never running two init/fini calls at once; it reports an "overlap" event if
 * that assumption is ever broken. */
#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

extern void opendat_test_hook(const char *event, const char *ia_name, int value);
extern DAT_RETURN opendat_test_open(const char *ia_name);
extern DAT_RETURN opendat_test_close(const char *ia_name);

enum { kSlots = 16 };
static DAT_PROVIDER g_tables[kSlots];
static char g_names[kSlots][DAT_NAME_MAX_LENGTH];

static int g_busy;
static char g_nested[kSlots][DAT_NAME_MAX_LENGTH]; /* per table: what its init opened */

static void enter(const char *name) {
    if (__atomic_fetch_add(&g_busy, 1, __ATOMIC_SEQ_CST) != 0)
        opendat_test_hook("overlap", name, 0);
}
static void leave(void) {
    __atomic_fetch_sub(&g_busy, 1, __ATOMIC_SEQ_CST);
}

static DAT_PROVIDER *table_for(const char *name) {
    for (int i = 0; i < kSlots; ++i)
        if (strcmp(g_names[i], name) == 0) return &g_tables[i];
    for (int i = 0; i < kSlots; ++i)
        if (g_names[i][0] == '\0') {
            snprintf(g_names[i], sizeof g_names[i], "%s", name);
            g_tables[i].device_name = g_names[i];
            return &g_tables[i];
        }
    return NULL;
}

EXPORT void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data) {
    enter(info->ia_name);
    opendat_test_hook("init", info->ia_name, 0);
    if (strcmp(instance_data, "slow") == 0) usleep(200);
    if (strncmp(instance_data, "open:", 5) == 0) {
        /* Leave the "busy" section: a nested init of another entry is legitimate. */
        leave();
        DAT_RETURN rc = opendat_test_open(instance_data + 5);
        opendat_test_hook("nested-open", info->ia_name, (int)rc);
        enter(info->ia_name);
        if (rc == DAT_SUCCESS)
            snprintf(g_nested[table_for(info->ia_name) - g_tables], DAT_NAME_MAX_LENGTH, "%s",
                     instance_data + 5);
    }
    if (strcmp(instance_data, "noregister") != 0) {
        DAT_PROVIDER *p = table_for(info->ia_name);
        DAT_RETURN rc = dat_registry_add_provider(p, info);
        opendat_test_hook("add", info->ia_name, (int)rc);
    }
    leave();
}

EXPORT void dat_provider_fini(const DAT_PROVIDER_INFO *info) {
    enter(info->ia_name);
    opendat_test_hook("fini", info->ia_name, 0);
    usleep(50);
    DAT_PROVIDER *p = table_for(info->ia_name);
    DAT_RETURN rc = dat_registry_remove_provider(p, info);
    opendat_test_hook("remove", info->ia_name, (int)rc);
    char *nested = g_nested[p - g_tables];
    if (nested[0] != '\0') {
        leave();
        rc = opendat_test_close(nested);
        opendat_test_hook("nested-close", info->ia_name, (int)rc);
        nested[0] = '\0';
        return;
    }
    leave();
}

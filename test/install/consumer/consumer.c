/* Lists the installed registry's entries: proves headers, library and dat.conf fit together. */
#include <dat2/udat.h>

#include <stdio.h>

int main(void) {
    DAT_PROVIDER_INFO info[32];
    DAT_PROVIDER_INFO *list[32];
    for (int i = 0; i < 32; i++) list[i] = &info[i];
    DAT_COUNT n = 0;
    DAT_RETURN rc = dat_registry_list_providers(32, &n, list);
    const char *major = "", *minor = "";
    dat_strerror(rc, &major, &minor);
    printf("list_providers: %s, %d entries\n", major, n);
    for (int i = 0; i < n; i++) printf("entry %s\n", info[i].ia_name);
    return rc == DAT_SUCCESS ? 0 : 1;
}

/*
 * trace_tuning: raise and lower a provider's trace level while the program runs.
 *
 *   trace_tuning [-l level] [IA]
 *
 *   IA  the IA name from dat.conf (default ofa-v2-tcp-lo, the loopback tcp entry)
 *   -l  the "high" level to demonstrate (default 7, detail; 0..10)
 *
 * OpenDAT providers list, among their provider-specific attributes (DAT_PROVIDER_ATTR),
 *   vendor_extension   "1.0" when the attributes below are present
 *   debug_query        a DAT_TRCLVL_QUERY_FUNC: reads the provider's trace level
 *   debug_modify       a DAT_TRCLVL_MODIFY_FUNC: changes it, effective at the next trace point
 * (<dat2/dat_trace.h>; dat_trclvl_attr_query/modify turn the attribute into a function).
 *
 * The program opens the IA, finds these attributes, then does the same small piece of work
 * (open a second IA, create an EP and a service point, free them, close the IA) at level 1
 * (errors only) and at the high level, capturing what the provider writes to stderr each
 * time: trace lines appear only at the high level. It restores the original level at the
 * end. Exit status 0 when the effect was seen (or could not be looked for because
 * DAPL_TRACE_DEST sends the trace elsewhere), 1 otherwise.
 *
 * Build on its own:  cc -std=c11 -o trace_tuning trace_tuning.c $(pkg-config --cflags --libs dat2)
 * Try it:            ./trace_tuning
 */
#define _POSIX_C_SOURCE 200809L
#include <dat2/udat.h>
#include <dat2/dat_trace.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *ia_name = "ofa-v2-tcp-lo";

static int fail(const char *what, DAT_RETURN rc) {
    const char *major = "", *minor = "";
    dat_strerror(rc, &major, &minor);
    fprintf(stderr, "%s failed: 0x%08x %s %s\n", what, (unsigned)rc, major, minor);
    return 1;
}

/* The work whose trace we look at: a second IA with an EP and a PSP, created and freed. */
static int workload(void) {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, dto_evd, conn_evd, cr_evd;
    DAT_PZ_HANDLE pz;
    DAT_EP_HANDLE ep;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL qual = 0;
    DAT_RETURN rc = dat_ia_open((DAT_NAME_PTR)ia_name, 8, &async_evd, &ia);
    if (rc != DAT_SUCCESS) return fail("dat_ia_open", rc);
    if ((rc = dat_pz_create(ia, &pz)) != DAT_SUCCESS) return fail("dat_pz_create", rc);
    /* one EVD per event stream: every provider supports that */
    rc = dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd);
    if (rc == DAT_SUCCESS)
        rc = dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd);
    if (rc == DAT_SUCCESS) rc = dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd);
    if (rc != DAT_SUCCESS) return fail("dat_evd_create", rc);
    if ((rc = dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, NULL, &ep)) != DAT_SUCCESS)
        return fail("dat_ep_create", rc);
    /* any free connection qualifier will do */
    rc = dat_psp_create_any(ia, &qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp);
    if (rc != DAT_SUCCESS) return fail("dat_psp_create_any", rc);
    dat_psp_free(psp);
    dat_ep_free(ep);
    dat_evd_free(cr_evd);
    dat_evd_free(conn_evd);
    dat_evd_free(dto_evd);
    dat_pz_free(pz);
    if ((rc = dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG)) != DAT_SUCCESS)
        return fail("dat_ia_close", rc);
    return 0;
}

/* Runs the workload with stderr redirected into a temporary file, then prints the provider
 * trace lines ("DAPL ...") it caught. Returns their number, or -1 on error. */
static int traced_workload(void) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO);
    if (tmp == NULL || saved < 0) return -1;
    dup2(fileno(tmp), STDERR_FILENO); /* the trace writes to file descriptor 2 */
    int rc = workload();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);

    int lines = 0;
    char line[4200];
    rewind(tmp);
    while (fgets(line, sizeof line, tmp) != NULL) {
        if (strncmp(line, "DAPL ", 5) == 0) {
            lines++;
            printf("    | %s", line);
        } else {
            fputs(line, stderr); /* anything else (an error of ours) goes where it belongs */
        }
    }
    fclose(tmp);
    return rc == 0 ? lines : -1;
}

int main(int argc, char **argv) {
    DAT_UINT32 high = DAT_TRACE_LEVEL_DETAIL;
    int opt;
    while ((opt = getopt(argc, argv, "l:")) != -1) {
        if (opt == 'l' && atoi(optarg) >= 0 && atoi(optarg) <= DAT_TRACE_LEVEL_MAX) {
            high = (DAT_UINT32)atoi(optarg);
            continue;
        }
        fprintf(stderr, "usage: %s [-l level 0..10] [IA]\n", argv[0]);
        return 2;
    }
    if (optind < argc) ia_name = argv[optind++];
    if (optind != argc || high < 2) {
        fprintf(stderr, "usage: %s [-l level 2..10] [IA]\n", argv[0]);
        return 2;
    }

    /* 1. Open the IA and read its provider-specific attributes. */
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_RETURN rc = dat_ia_open((DAT_NAME_PTR)ia_name, 8, &async_evd, &ia);
    if (rc != DAT_SUCCESS) return fail("dat_ia_open", rc);
    DAT_PROVIDER_ATTR pa;
    memset((void *)&pa, 0, sizeof pa); /* (a const member: clear it as raw storage) */
    rc = dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa);
    if (rc != DAT_SUCCESS) return fail("dat_ia_query", rc);

    const char *extension = NULL;
    DAT_TRCLVL_QUERY_FUNC query = NULL;
    DAT_TRCLVL_MODIFY_FUNC modify = NULL;
    for (DAT_COUNT i = 0; i < pa.num_provider_specific_attr; i++) {
        const DAT_NAMED_ATTR *a = &pa.provider_specific_attr[i];
        if (strcmp(a->name, DAT_VENDOR_ATTR_EXTENSION) == 0) extension = a->value;
        if (dat_trclvl_attr_query(a) != NULL) query = dat_trclvl_attr_query(a);
        if (dat_trclvl_attr_modify(a) != NULL) modify = dat_trclvl_attr_modify(a);
    }
    printf("IA %s, provider %s\n", ia_name, pa.provider_name);
    if (extension == NULL || query == NULL || modify == NULL) {
        printf("%s reports no %s: its trace level cannot be changed at run time\n", ia_name,
               extension == NULL ? DAT_VENDOR_ATTR_EXTENSION : "debug_query/debug_modify");
        dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG);
        return 0;
    }
    printf("%s = %s: debug_query and debug_modify found\n", DAT_VENDOR_ATTR_EXTENSION, extension);

    DAT_UINT32 original = 0;
    if ((rc = query(DAT_TRACE_COMPONENT_DAPL, &original)) != DAT_SUCCESS)
        return fail("debug_query", rc);
    printf("provider trace level at start: %u\n", original);

    const char *dest = getenv("DAPL_TRACE_DEST");
    int visible = dest == NULL || strcmp(dest, "stderr") == 0;
    if (!visible) printf("(DAPL_TRACE_DEST=%s: the trace lines go there, not to stderr)\n", dest);

    /* 2. The same work at level 1 and at the high level. */
    DAT_UINT32 levels[2] = {DAT_TRACE_LEVEL_ERROR, high};
    int lines[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        if ((rc = modify(DAT_TRACE_COMPONENT_DAPL, levels[i])) != DAT_SUCCESS)
            return fail("debug_modify", rc);
        DAT_UINT32 now = 0;
        query(DAT_TRACE_COMPONENT_DAPL, &now);
        printf("level %u (debug_query says %u): open an IA, create and free an EP and a PSP\n",
               levels[i], now);
        lines[i] = traced_workload();
        if (lines[i] < 0) return 1;
        printf("  -> %d provider trace line%s\n", lines[i], lines[i] == 1 ? "" : "s");
    }
    /* libdat2's own view of the provider level (an OpenDAT export, <dat2/dat_trace.h>) */
    DAT_UINT32 via_libdat2 = 0;
    if (dat_trclvl_query(DAT_TRACE_COMPONENT_DAPL, &via_libdat2) == DAT_SUCCESS)
        printf("dat_trclvl_query(DAT_TRACE_COMPONENT_DAPL) = %u\n", via_libdat2);

    /* 3. Put the level back. */
    modify(DAT_TRACE_COMPONENT_DAPL, original);
    printf("provider trace level restored to %u\n", original);
    dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG);

    if (visible && !(lines[1] > lines[0])) {
        printf("no effect seen: level %u gave no more trace lines than level 1\n", high);
        return 1;
    }
    if (visible)
        printf("%s\n", lines[0] == 0 ? "trace lines appeared only at the higher level"
                                     : "more trace lines at the higher level");
    return 0;
}

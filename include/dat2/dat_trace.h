/*
 * OpenDAT extension: dynamic trace levels.
 *
 * Not part of the reference DAT 2.0 header set; libdat2 exports these two functions under
 * the version node OPENDAT_2.0, so a program that uses them states that it needs OpenDAT.
 *
 * Levels run from 0 to 10: 0 silences a component, 1 reports errors, 3 is normal operation,
 * 7 is detail and 10 dumps everything. The initial levels come from DAT_TRACE_LEVEL (front
 * end and registry) and DAPL_TRACE_LEVEL (providers).
 *
 * Providers advertise the same two operations among their provider-specific attributes
 * (DAT_PROVIDER_ATTR.provider_specific_attr): the attribute named "debug_query" /
 * "debug_modify" carries, in its value field, a pointer to a function of type
 * DAT_TRCLVL_QUERY_FUNC / DAT_TRCLVL_MODIFY_FUNC. The attribute "vendor_extension" tells
 * that these attributes are present. dat_trclvl_attr_query() and dat_trclvl_attr_modify()
 * below turn such an attribute back into a callable pointer.
 */
#ifndef OPENDAT_DAT_TRACE_H
#define OPENDAT_DAT_TRACE_H

#include <dat2/udat.h>

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which part of the stack a level applies to. */
typedef enum dat_trace_component {
    DAT_TRACE_COMPONENT_DAT = 0,  /* the front end (libdat2) and its registry */
    DAT_TRACE_COMPONENT_DAPL = 1  /* providers */
} DAT_TRACE_COMPONENT;

#define DAT_TRACE_LEVEL_OFF 0
#define DAT_TRACE_LEVEL_ERROR 1
#define DAT_TRACE_LEVEL_NORMAL 3
#define DAT_TRACE_LEVEL_DETAIL 7
#define DAT_TRACE_LEVEL_MAX 10

/* Names of the vendor-specific attributes OpenDAT providers report. */
#define DAT_VENDOR_ATTR_EXTENSION "vendor_extension"           /* value "1.0" */
#define DAT_VENDOR_ATTR_EXT_VERSION "vendor_ext_version"       /* value e.g. "1.0" */
#define DAT_VENDOR_ATTR_DEBUG_QUERY "debug_query"              /* value: DAT_TRCLVL_QUERY_FUNC */
#define DAT_VENDOR_ATTR_DEBUG_MODIFY "debug_modify"            /* value: DAT_TRCLVL_MODIFY_FUNC */
#define DAT_VENDOR_ATTR_DELAYED_ACK_SUPPORTED "delayed_ack_supported" /* "true" / "false" */
/* Endpoint provider-specific attribute (DAT_EP_ATTR.ep_provider_specific), set with
 * dat_ep_modify: "true" or "false". */
#define DAT_EP_ATTR_DELAYED_ACK "delayed_ack"

typedef DAT_RETURN (*DAT_TRCLVL_QUERY_FUNC)(DAT_TRACE_COMPONENT component, DAT_UINT32 *level);
typedef DAT_RETURN (*DAT_TRCLVL_MODIFY_FUNC)(DAT_TRACE_COMPONENT component, DAT_UINT32 level);

/*
 * Reads the level in force for `component`.
 *   DAT:  the front end and registry of this libdat2.
 *   DAPL: the level of the first provider opened through this libdat2 that reports
 *         "debug_query"; DAT_INVALID_STATE when no such provider is open.
 * Errors: level == NULL -> DAT_INVALID_PARAMETER | DAT_INVALID_ARG2; an unknown component
 * -> DAT_INVALID_PARAMETER | DAT_INVALID_ARG1.
 */
extern DAT_RETURN dat_trclvl_query(DAT_TRACE_COMPONENT component, DAT_UINT32 *level);

/*
 * Changes the level of `component` at run time; it takes effect for the next trace point.
 *   DAT:  the front end and registry of this libdat2.
 *   DAPL: every provider currently open through this libdat2 that reports "debug_modify".
 * Errors: level > 10 -> DAT_INVALID_PARAMETER | DAT_INVALID_ARG2; unknown component ->
 * DAT_INVALID_PARAMETER | DAT_INVALID_ARG1; DAPL with no such provider open ->
 * DAT_INVALID_STATE.
 */
extern DAT_RETURN dat_trclvl_modify(DAT_TRACE_COMPONENT component, DAT_UINT32 level);

/* The function a provider's "debug_query" attribute carries, or NULL if `attr` is not one. */
static inline DAT_TRCLVL_QUERY_FUNC dat_trclvl_attr_query(const DAT_NAMED_ATTR *attr)
{
    DAT_TRCLVL_QUERY_FUNC fn = NULL;
    if (attr != NULL && attr->name != NULL && strcmp(attr->name, DAT_VENDOR_ATTR_DEBUG_QUERY) == 0)
        memcpy(&fn, &attr->value, sizeof fn);
    return fn;
}

/* The function a provider's "debug_modify" attribute carries, or NULL if `attr` is not one. */
static inline DAT_TRCLVL_MODIFY_FUNC dat_trclvl_attr_modify(const DAT_NAMED_ATTR *attr)
{
    DAT_TRCLVL_MODIFY_FUNC fn = NULL;
    if (attr != NULL && attr->name != NULL && strcmp(attr->name, DAT_VENDOR_ATTR_DEBUG_MODIFY) == 0)
        memcpy(&fn, &attr->value, sizeof fn);
    return fn;
}

#ifdef __cplusplus
}
#endif

#endif /* OPENDAT_DAT_TRACE_H */

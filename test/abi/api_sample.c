/*
 * OpenDAT ABI test — a consumer- and provider-style sample that touches a
 * broad part of the public API. It is only compiled (never linked or run):
 * the test builds it against include/dat2 as C99, C11 and C++20 with
 * -Wall -Wextra -Werror -pedantic to prove the headers are self-contained and
 * warning-free in both languages.
 */
#include <netinet/in.h>
#include <string.h>

#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>
#include <dat2/dat_registry.h>

#ifdef __cplusplus
#define SAMPLE_EXTERN extern "C"
#define SAMPLE_ZERO \
    {}
#else
#define SAMPLE_EXTERN
#define SAMPLE_ZERO \
    { 0 }
#endif

/* Compile-time facts the binaries rely on (LP64). */
typedef char check_event_size[sizeof(DAT_EVENT) == 120 ? 1 : -1];
typedef char check_ia_attr_size[sizeof(DAT_IA_ATTR) == 688 ? 1 : -1];
typedef char check_provider_attr_size[sizeof(DAT_PROVIDER_ATTR) == 520 ? 1 : -1];
typedef char check_provider_size[sizeof(DAT_PROVIDER) == 648 ? 1 : -1];
typedef char check_ext_data_fits[sizeof(DAT_IB_EXTENSION_EVENT_DATA) <=
                                         sizeof(((DAT_EVENT *)0)->event_extension_data)
                                     ? 1
                                     : -1];

/* Consumer side: open, query, create objects, post, wait, extensions. */
SAMPLE_EXTERN DAT_RETURN sample_consumer(char *ia_name);
DAT_RETURN sample_consumer(char *ia_name) {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE dto_evd = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE conn_evd = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lmr_ctx = 0;
    DAT_RMR_CONTEXT rmr_ctx = 0;
    DAT_VLEN reg_len = 0;
    DAT_VADDR reg_addr = 0;
    DAT_REGION_DESCRIPTION region;
    DAT_IA_ATTR ia_attr = SAMPLE_ZERO;
    /* const member (evd_stream_merging_supported): C++ needs an initializer */
    DAT_PROVIDER_ATTR prov_attr = SAMPLE_ZERO;
    DAT_EP_ATTR ep_attr = SAMPLE_ZERO;
    DAT_EVENT event = SAMPLE_ZERO;
    DAT_COUNT nmore = 0;
    DAT_LMR_TRIPLET iov;
    DAT_RMR_TRIPLET remote;
    DAT_DTO_COOKIE cookie;
    DAT_IB_ADDR_HANDLE ah;
    DAT_UINT64 counters[DCNT_EP_ALL_COUNTERS];
    DAT_HANDLE query_ia = DAT_HANDLE_NULL;
    const char *major = NULL;
    const char *minor = NULL;
    static char buffer[4096];
    struct sockaddr_in addr;
    DAT_RETURN rc;

    memset(&ah, 0, sizeof ah);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = DAT_AF_INET;

    rc = dat_ia_open(ia_name, 8, &async_evd, &ia);
    if (rc != DAT_SUCCESS) {
        dat_strerror(rc, &major, &minor);
        return DAT_GET_TYPE(rc) == DAT_PROVIDER_NOT_FOUND ? rc : DAT_GET_SUBTYPE(rc);
    }
    rc = dat_ia_query(ia, &async_evd, DAT_IA_FIELD_ALL, &ia_attr,
                      DAT_PROVIDER_FIELD_ALL | DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR,
                      &prov_attr);
    if (ia_attr.extension_supported == DAT_EXTENSION_IB &&
        ia_attr.extension_version >= DAT_IB_EXTENSION_VERSION && ia_attr.max_mtu_size > 0 &&
        ia_attr.max_rdma_read_per_ep > 0)
        rc = DAT_SUCCESS;

    (void)dat_pz_create(ia, &pz);
    (void)dat_evd_create(ia, 10, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd);
    (void)dat_evd_create(ia, 10, DAT_HANDLE_NULL,
                         (DAT_EVD_FLAGS)((int)DAT_EVD_CR_FLAG | (int)DAT_EVD_CONNECTION_FLAG),
                         &conn_evd);

    ep_attr.service_type = DAT_SERVICE_TYPE_RC;
    ep_attr.max_recv_dtos = 16;
    ep_attr.max_request_dtos = 16;
    ep_attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    ep_attr.srq_soft_hw = DAT_HW_DEFAULT;
    (void)dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, &ep_attr, &ep);

    region.for_va = buffer;
    (void)dat_lmr_create(
        ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof buffer, pz,
        (DAT_MEM_PRIV_FLAGS)((int)DAT_MEM_PRIV_ALL_FLAG | (int)DAT_IB_MEM_PRIV_REMOTE_ATOMIC),
        DAT_VA_TYPE_VA, &lmr, &lmr_ctx, &rmr_ctx, &reg_len, &reg_addr);

    (void)dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&addr, 45248, DAT_TIMEOUT_INFINITE, 0, NULL,
                         DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);

    iov.virtual_address = (DAT_VADDR)(unsigned long)buffer;
    iov.segment_length = 64;
    iov.lmr_context = lmr_ctx;
    remote.virtual_address = reg_addr;
    remote.segment_length = 64;
    remote.rmr_context = rmr_ctx;
    cookie.as_64 = 0x7777;

    (void)dat_ep_post_recv(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    (void)dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_SUPPRESS_FLAG);
    (void)dat_ep_post_rdma_write(ep, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG);
    (void)dat_ep_post_rdma_read(ep, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG);

    /* IB extensions through the convenience macros. */
    (void)dat_ib_post_rdma_write_immed(ep, 1, &iov, cookie, &remote, 0x7777,
                                       DAT_COMPLETION_DEFAULT_FLAG);
    (void)dat_ib_post_fetch_and_add(ep, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG);
    (void)dat_ib_post_cmp_and_swap(ep, 0, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG);
    (void)dat_ib_post_send_ud(ep, 1, &iov, &ah, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    (void)dat_ib_post_recv_ud(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    (void)dat_ib_query_counters(ep, DCNT_EP_ALL_COUNTERS, counters, 0);
    (void)dat_query_counters(ep, DCNT_EP_POST_SEND, counters, 1);
    (void)dat_ib_print_counters(ia, DCNT_IA_ALL_COUNTERS, 0);
    (void)dat_ib_ud_ah_free(ep, &ah);
    (void)dat_ib_ud_cm_free(ep, cookie);
    (void)dat_ib_open_query(ia_name, &query_ia, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL,
                            &prov_attr);
    (void)dat_ib_close_query(query_ia);

    rc = dat_evd_wait(dto_evd, DAT_TIMEOUT_INFINITE, 1, &event, &nmore);
    if (rc == DAT_SUCCESS && event.event_number == (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT) {
        const DAT_IB_EXTENSION_EVENT_DATA *ext =
            (const DAT_IB_EXTENSION_EVENT_DATA *)event.event_extension_data;
        if (ext->type == DAT_IB_RDMA_WRITE_IMMED_DATA && ext->val.immed.data == 0x7777 &&
            ext->remote_ah.qpn == 0 && ext->coll.handle == NULL)
            (void)dat_strerror_ext_status(ext->status, &major);
    }
    if (dat_evd_dequeue(dto_evd, &event) == DAT_QUEUE_EMPTY)
        (void)dat_strerror_extension(DAT_IB_ERR, &major);
    if (event.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS &&
        event.event_data.dto_completion_event_data.transfered_length == 64)
        rc = DAT_SUCCESS;

    (void)dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG);
    (void)dat_ep_free(ep);
    (void)dat_lmr_free(lmr);
    (void)dat_evd_free(conn_evd);
    (void)dat_evd_free(dto_evd);
    (void)dat_pz_free(pz);
    return dat_ia_close(ia, DAT_CLOSE_DEFAULT) | rc;
}

/* CNO with a proxy agent. */
static void DAT_API sample_agent(DAT_PVOID instance, DAT_EVD_HANDLE evd) {
    (void)instance;
    (void)evd;
}

SAMPLE_EXTERN DAT_RETURN sample_cno(DAT_IA_HANDLE ia);
DAT_RETURN sample_cno(DAT_IA_HANDLE ia) {
    DAT_OS_WAIT_PROXY_AGENT agent;
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_CNO_PARAM param;

    agent.instance_data = NULL;
    agent.proxy_agent_func = sample_agent;
#ifndef __cplusplus
    agent = DAT_OS_WAIT_PROXY_AGENT_NULL; /* a C compound literal */
#endif
    (void)dat_cno_create(ia, agent, &cno);
    (void)dat_cno_query(cno, DAT_CNO_FIELD_ALL, &param);
    (void)dat_cno_wait(cno, 1000000, &evd);
    return dat_cno_free(cno) | (param.proxy_type == DAT_PROXY_TYPE_AGENT);
}

/* Provider side: a method table, registration, dispatch macros. */
static DAT_RETURN DAT_API sample_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
                                         DAT_EVD_HANDLE *evd, DAT_IA_HANDLE *ia) {
    (void)name;
    (void)qlen;
    (void)evd;
    (void)ia;
    return DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API sample_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                              DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
    (void)ep;
    (void)n;
    (void)iov;
    (void)cookie;
    (void)flags;
    return DAT_SUCCESS;
}

static DAT_PROVIDER sample_provider;

SAMPLE_EXTERN void DAT_PROVIDER_INIT_FUNC_NAME(const DAT_PROVIDER_INFO *info, const char *params);
void DAT_PROVIDER_INIT_FUNC_NAME(const DAT_PROVIDER_INFO *info, const char *params) {
    DAT_PROVIDER_INIT_FUNC self = DAT_PROVIDER_INIT_FUNC_NAME;
    (void)self;
    (void)params;
    sample_provider.device_name = info->ia_name;
    sample_provider.ia_open_func = sample_ia_open;
    sample_provider.ep_post_send_func = sample_ep_post_send;
    (void)dat_registry_add_provider(&sample_provider, info);
}

SAMPLE_EXTERN void DAT_PROVIDER_FINI_FUNC_NAME(const DAT_PROVIDER_INFO *info);
void DAT_PROVIDER_FINI_FUNC_NAME(const DAT_PROVIDER_INFO *info) {
    DAT_PROVIDER_FINI_FUNC self = DAT_PROVIDER_FINI_FUNC_NAME;
    (void)self;
    (void)dat_registry_remove_provider(&sample_provider, info);
}

/* What libdat2 does with a handle: find the provider, call its slot. */
SAMPLE_EXTERN DAT_RETURN sample_dispatch(DAT_EP_HANDLE ep, DAT_LMR_TRIPLET *iov);
DAT_RETURN sample_dispatch(DAT_EP_HANDLE ep, DAT_LMR_TRIPLET *iov) {
    DAT_DTO_COOKIE cookie;
    DAT_PROVIDER *provider;

    cookie.as_ptr = NULL;
    if (ep == DAT_HANDLE_NULL) return DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP;
    provider = DAT_HANDLE_TO_PROVIDER(ep);
    if (provider->ep_post_send_func == NULL) return DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED;
    if (strcmp(DAT_PROVIDER_INIT_FUNC_STR, "dat_provider_init") != 0) return DAT_INTERNAL_ERROR;
    return DAT_EP_POST_SEND(ep, 1, iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
}

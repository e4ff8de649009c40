/*
 * sample_common.h: the plumbing the OpenDAT samples share, so that each sample shows only
 * what it is about. Header-only (static inline functions): copy it next to a sample.
 *
 * Every connected sample runs as the server (no -h) or as the client (-h <server address>):
 *
 *   - the server opens the IA, creates a public service point (PSP) on connection
 *     qualifier -p (default SAMPLE_DEFAULT_QUAL), waits for one connection request, reads
 *     the client's private data, accepts (with its own private data) and waits for
 *     DAT_CONNECTION_EVENT_ESTABLISHED;
 *   - the client opens the IA, resolves the server's address and calls dat_ep_connect()
 *     with the qualifier and its private data, then waits for ESTABLISHED, which carries
 *     the server's private data.
 *
 * On the tcp provider the qualifier is the TCP port (with the dat.conf port base 0); on
 * the verbs provider it is the rdma_cm port. The IA address to give -h is the server IA's
 * address: 127.0.0.1 for ofa-v2-tcp-lo, the IPoIB/RoCE address of the server for verbs.
 *
 * One endpoint per process, with its own EVDs: request completions (sends, RDMA reads and
 * writes), receive completions, connection events, and connection requests (server).
 */
#ifndef OPENDAT_SAMPLE_COMMON_H
#define OPENDAT_SAMPLE_COMMON_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* getopt, getaddrinfo, clock_gettime in strict C11 */
#endif

#include <dat2/udat.h>

#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define SAMPLE_DEFAULT_IA "ofa-v2-tcp-lo"  /* the loopback tcp entry of OpenDAT's dat.conf */
#define SAMPLE_DEFAULT_QUAL 18515          /* connection qualifier when -p is not given */
#define SAMPLE_TIMEOUT_US (30u * 1000000u) /* no single wait takes longer than 30 s */
#define SAMPLE_EVD_LEN 64                  /* events each EVD can hold */

struct sample {
    /* what the command line chose */
    const char *ia_name;     /* IA name from dat.conf */
    const char *server_addr; /* client: the server's address (-h); server: NULL */
    DAT_CONN_QUAL qual;      /* connection qualifier */
    /* the DAT objects */
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd; /* created by dat_ia_open */
    DAT_PZ_HANDLE pz;
    DAT_EVD_HANDLE req_evd;  /* completions of sends, RDMA reads and writes */
    DAT_EVD_HANDLE recv_evd; /* completions of receives */
    DAT_EVD_HANDLE conn_evd; /* ESTABLISHED, DISCONNECTED, ... */
    DAT_EVD_HANDLE cr_evd;   /* server: connection requests */
    DAT_PSP_HANDLE psp;      /* server: the public service point */
    DAT_CR_HANDLE cr;        /* server: the pending connection request */
    DAT_EP_HANDLE ep;
    /* private data the peer sent with its connection request (server) or accept (client) */
    unsigned char peer_pdata[64];
    DAT_COUNT peer_pdata_len;
};

/* A registered buffer: the memory, its LMR and the keys that name it. */
struct sample_buf {
    unsigned char *mem;
    DAT_VLEN len;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lmr_ctx; /* local key: goes into DAT_LMR_TRIPLETs */
    DAT_RMR_CONTEXT rmr_ctx; /* remote key: what the peer puts in a DAT_RMR_TRIPLET */
};

/* Prints "what: <DAT error>" to stderr; returns -1 so that callers can `return sample_fail`. */
static inline int sample_fail(const char *what, DAT_RETURN rc) {
    const char *major = "", *minor = "";
    dat_strerror(rc, &major, &minor);
    fprintf(stderr, "%s failed: 0x%08x %s %s\n", what, (unsigned)rc, major, minor);
    return -1;
}

/* Microseconds on a monotonic clock, for latency measurements. */
static inline double sample_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Opens the IA and creates the PZ, the EVDs and the endpoint (default attributes unless
 * `ep_attr` says otherwise). */
static inline int sample_open(struct sample *s, const DAT_EP_ATTR *ep_attr) {
    DAT_RETURN rc;
    s->async_evd = DAT_HANDLE_NULL;
    /* DAT_NAME_PTR is a non-const char *; libdat2 does not modify the name. */
    rc = dat_ia_open((DAT_NAME_PTR)s->ia_name, SAMPLE_EVD_LEN, &s->async_evd, &s->ia);
    if (rc != DAT_SUCCESS) return sample_fail("dat_ia_open", rc);
    rc = dat_pz_create(s->ia, &s->pz);
    if (rc != DAT_SUCCESS) return sample_fail("dat_pz_create", rc);
    rc = dat_evd_create(s->ia, SAMPLE_EVD_LEN, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->req_evd);
    if (rc == DAT_SUCCESS)
        rc = dat_evd_create(s->ia, SAMPLE_EVD_LEN, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->recv_evd);
    if (rc == DAT_SUCCESS)
        rc = dat_evd_create(s->ia, SAMPLE_EVD_LEN, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
                            &s->conn_evd);
    if (rc == DAT_SUCCESS && s->server_addr == NULL)
        rc = dat_evd_create(s->ia, SAMPLE_EVD_LEN, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr_evd);
    if (rc != DAT_SUCCESS) return sample_fail("dat_evd_create", rc);
    rc = dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, ep_attr, &s->ep);
    if (rc != DAT_SUCCESS) return sample_fail("dat_ep_create", rc);
    return 0;
}

/* Allocates and registers `len` bytes with the given privileges. */
static inline int sample_register(struct sample *s, struct sample_buf *b, size_t len,
                                  DAT_MEM_PRIV_FLAGS priv) {
    DAT_REGION_DESCRIPTION region;
    DAT_VLEN reg_len = 0;
    DAT_VADDR reg_addr = 0;
    memset(b, 0, sizeof *b);
    b->mem = calloc(1, len);
    if (b->mem == NULL) {
        fprintf(stderr, "out of memory (%zu bytes)\n", len);
        return -1;
    }
    b->len = len;
    region.for_va = b->mem;
    DAT_RETURN rc =
        dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, len, s->pz, priv, DAT_VA_TYPE_VA,
                       &b->lmr, &b->lmr_ctx, &b->rmr_ctx, &reg_len, &reg_addr);
    if (rc != DAT_SUCCESS) return sample_fail("dat_lmr_create", rc);
    return 0;
}

static inline void sample_unregister(struct sample_buf *b) {
    if (b->lmr != DAT_HANDLE_NULL) dat_lmr_free(b->lmr);
    free(b->mem);
    memset(b, 0, sizeof *b);
}

/* The local segment [off, off + len) of a registered buffer, for posting. */
static inline DAT_LMR_TRIPLET sample_iov(const struct sample_buf *b, size_t off, size_t len) {
    DAT_LMR_TRIPLET iov;
    iov.virtual_address = (DAT_VADDR)(uintptr_t)(b->mem + off);
    iov.segment_length = (DAT_SEG_LENGTH)len;
    iov.lmr_context = b->lmr_ctx;
    return iov;
}

/* The whole buffer as the peer names it in an RDMA read or write. */
static inline DAT_RMR_TRIPLET sample_rmr(const struct sample_buf *b) {
    DAT_RMR_TRIPLET rmr;
    rmr.virtual_address = (DAT_VADDR)(uintptr_t)b->mem;
    rmr.segment_length = (DAT_SEG_LENGTH)b->len;
    rmr.rmr_context = b->rmr_ctx;
    return rmr;
}

/* An RMR triplet travels between hosts in a fixed big-endian layout (16 bytes), so that
 * the peers need not agree on byte order or structure padding. */
enum { SAMPLE_RMR_WIRE_LEN = 16 };
static inline void sample_put_be(unsigned char *p, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--, v >>= 8) p[i] = (unsigned char)(v & 0xff);
}
static inline uint64_t sample_get_be(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v = (v << 8) | p[i];
    return v;
}
static inline void sample_rmr_encode(const DAT_RMR_TRIPLET *rmr, unsigned char *wire) {
    sample_put_be(wire, rmr->virtual_address, 8);
    sample_put_be(wire + 8, rmr->segment_length, 4);
    sample_put_be(wire + 12, rmr->rmr_context, 4);
}
static inline DAT_RMR_TRIPLET sample_rmr_decode(const unsigned char *wire) {
    DAT_RMR_TRIPLET rmr;
    rmr.virtual_address = sample_get_be(wire, 8);
    rmr.segment_length = (DAT_SEG_LENGTH)sample_get_be(wire + 8, 4);
    rmr.rmr_context = (DAT_RMR_CONTEXT)sample_get_be(wire + 12, 4);
    return rmr;
}

/* Waits for the next event on `evd` (at most SAMPLE_TIMEOUT_US). */
static inline int sample_wait(DAT_EVD_HANDLE evd, const char *what, DAT_EVENT *ev) {
    DAT_COUNT nmore = 0;
    DAT_RETURN rc = dat_evd_wait(evd, SAMPLE_TIMEOUT_US, 1, ev, &nmore);
    if (rc != DAT_SUCCESS) return sample_fail(what, rc);
    return 0;
}

/* Checks that `ev` is a successful DTO completion. */
static inline int sample_check_dto(const DAT_EVENT *ev, const char *what) {
    if (ev->event_number != DAT_DTO_COMPLETION_EVENT) {
        fprintf(stderr, "%s: unexpected event 0x%x\n", what, (unsigned)ev->event_number);
        return -1;
    }
    DAT_DTO_COMPLETION_STATUS status = ev->event_data.dto_completion_event_data.status;
    if (status != DAT_DTO_SUCCESS) {
        const char *why = status == DAT_DTO_ERR_FLUSHED         ? " (flushed: the connection ended)"
                          : status == DAT_DTO_ERR_LOCAL_LENGTH  ? " (local length error)"
                          : status == DAT_DTO_ERR_REMOTE_ACCESS ? " (remote access error)"
                          : status == DAT_DTO_ERR_LOCAL_PROTECTION ? " (local protection error)"
                                                                   : "";
        fprintf(stderr, "%s: completed with DTO status %d%s\n", what, (int)status, why);
        return -1;
    }
    return 0;
}

/* Waits for one DTO completion and checks that it succeeded. */
static inline int sample_wait_dto(DAT_EVD_HANDLE evd, const char *what) {
    DAT_EVENT ev;
    if (sample_wait(evd, what, &ev) != 0) return -1;
    return sample_check_dto(&ev, what);
}

/* Posts a receive for [off, off + len) of `b`. */
static inline int sample_post_recv(struct sample *s, struct sample_buf *b, size_t off, size_t len) {
    DAT_LMR_TRIPLET iov = sample_iov(b, off, len);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = off;
    DAT_RETURN rc = dat_ep_post_recv(s->ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    return rc == DAT_SUCCESS ? 0 : sample_fail("dat_ep_post_recv", rc);
}

/* Posts a send of [off, off + len) of `b`. */
static inline int sample_post_send(struct sample *s, struct sample_buf *b, size_t off, size_t len) {
    DAT_LMR_TRIPLET iov = sample_iov(b, off, len);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = off;
    DAT_RETURN rc = dat_ep_post_send(s->ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    return rc == DAT_SUCCESS ? 0 : sample_fail("dat_ep_post_send", rc);
}

/* Server, step 1: listen on the qualifier and wait for a connection request. The client's
 * private data is copied to s->peer_pdata. Post receives after this and before
 * sample_accept(), so that the client's first message finds one. */
static inline int sample_listen(struct sample *s) {
    DAT_RETURN rc = dat_psp_create(s->ia, s->qual, s->cr_evd, DAT_PSP_CONSUMER_FLAG, &s->psp);
    if (rc != DAT_SUCCESS) return sample_fail("dat_psp_create", rc);
    printf("server: waiting for a client on %s, connection qualifier %llu\n", s->ia_name,
           (unsigned long long)s->qual);
    fflush(stdout); /* scripts wait for this line before starting the client */

    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    /* The server may wait for its client for as long as it takes. */
    rc = dat_evd_wait(s->cr_evd, DAT_TIMEOUT_INFINITE, 1, &ev, &nmore);
    if (rc != DAT_SUCCESS) return sample_fail("waiting for a connection request", rc);
    if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
        fprintf(stderr, "unexpected event 0x%x on the CR EVD\n", (unsigned)ev.event_number);
        return -1;
    }
    s->cr = ev.event_data.cr_arrival_event_data.cr_handle;

    DAT_CR_PARAM param;
    rc = dat_cr_query(s->cr, DAT_CR_FIELD_ALL, &param);
    if (rc != DAT_SUCCESS) return sample_fail("dat_cr_query", rc);
    s->peer_pdata_len = param.private_data_size;
    if (s->peer_pdata_len > (DAT_COUNT)sizeof s->peer_pdata)
        s->peer_pdata_len = (DAT_COUNT)sizeof s->peer_pdata;
    if (s->peer_pdata_len > 0) memcpy(s->peer_pdata, param.private_data, s->peer_pdata_len);
    return 0;
}

/* The name of a connection event, for messages. */
static inline const char *sample_event_name(DAT_EVENT_NUMBER n) {
    switch (n) {
        case DAT_CONNECTION_EVENT_ESTABLISHED:
            return "ESTABLISHED";
        case DAT_CONNECTION_EVENT_PEER_REJECTED:
            return "PEER_REJECTED";
        case DAT_CONNECTION_EVENT_NON_PEER_REJECTED:
            return "NON_PEER_REJECTED (nobody listens there?)";
        case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR:
            return "ACCEPT_COMPLETION_ERROR";
        case DAT_CONNECTION_EVENT_DISCONNECTED:
            return "DISCONNECTED";
        case DAT_CONNECTION_EVENT_BROKEN:
            return "BROKEN";
        case DAT_CONNECTION_EVENT_TIMED_OUT:
            return "TIMED_OUT";
        case DAT_CONNECTION_EVENT_UNREACHABLE:
            return "UNREACHABLE";
        default:
            return "unexpected event";
    }
}

/* Waits for ESTABLISHED on the connection EVD; keeps its private data (client side). */
static inline int sample_wait_established(struct sample *s) {
    DAT_EVENT ev;
    if (sample_wait(s->conn_evd, "waiting for the connection", &ev) != 0) return -1;
    if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        fprintf(stderr, "connection failed: %s (event 0x%x)\n", sample_event_name(ev.event_number),
                (unsigned)ev.event_number);
        return -1;
    }
    const DAT_CONNECTION_EVENT_DATA *cd = &ev.event_data.connect_event_data;
    if (s->server_addr != NULL && cd->private_data_size > 0 && cd->private_data != NULL) {
        s->peer_pdata_len = cd->private_data_size;
        if (s->peer_pdata_len > (DAT_COUNT)sizeof s->peer_pdata)
            s->peer_pdata_len = (DAT_COUNT)sizeof s->peer_pdata;
        memcpy(s->peer_pdata, cd->private_data, s->peer_pdata_len);
    }
    return 0;
}

/* Server, step 2: accept the request on our EP, sending `pdata` back. */
static inline int sample_accept(struct sample *s, const void *pdata, DAT_COUNT len) {
    DAT_RETURN rc = dat_cr_accept(s->cr, s->ep, len, (DAT_PVOID)pdata);
    if (rc != DAT_SUCCESS) return sample_fail("dat_cr_accept", rc);
    if (sample_wait_established(s) != 0) return -1;
    printf("server: connected\n");
    return 0;
}

/* Client: connect to the server's address and qualifier, sending `pdata` with the request.
 * The server's private data ends up in s->peer_pdata. */
static inline int sample_connect(struct sample *s, const void *pdata, DAT_COUNT len) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(s->server_addr, NULL, &hints, &res);
    if (gai != 0) {
        fprintf(stderr, "cannot resolve %s: %s\n", s->server_addr, gai_strerror(gai));
        return -1;
    }
    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof addr);
    memcpy(&addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);

    DAT_RETURN rc =
        dat_ep_connect(s->ep, (DAT_IA_ADDRESS_PTR)&addr, s->qual, SAMPLE_TIMEOUT_US, len,
                       (DAT_PVOID)pdata, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
    if (rc != DAT_SUCCESS) return sample_fail("dat_ep_connect", rc);
    if (sample_wait_established(s) != 0) return -1;
    printf("client: connected to %s, connection qualifier %llu\n", s->server_addr,
           (unsigned long long)s->qual);
    return 0;
}

/* Ends the connection: the client disconnects, the server waits until it has (and
 * disconnects itself if the client does not within the timeout). Both then see
 * DAT_CONNECTION_EVENT_DISCONNECTED. */
static inline int sample_disconnect(struct sample *s) {
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    DAT_RETURN rc;
    if (s->server_addr != NULL) {
        rc = dat_ep_disconnect(s->ep, DAT_CLOSE_GRACEFUL_FLAG);
        if (rc != DAT_SUCCESS) return sample_fail("dat_ep_disconnect", rc);
    }
    rc = dat_evd_wait(s->conn_evd, SAMPLE_TIMEOUT_US, 1, &ev, &nmore);
    if (rc != DAT_SUCCESS && s->server_addr == NULL) {
        /* the client did not hang up: hang up ourselves */
        dat_ep_disconnect(s->ep, DAT_CLOSE_ABRUPT_FLAG);
        rc = dat_evd_wait(s->conn_evd, SAMPLE_TIMEOUT_US, 1, &ev, &nmore);
    }
    if (rc != DAT_SUCCESS) return sample_fail("waiting for the disconnect", rc);
    if (ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED) {
        fprintf(stderr, "connection ended with %s (event 0x%x)\n",
                sample_event_name(ev.event_number), (unsigned)ev.event_number);
        return -1;
    }
    return 0;
}

/* Frees everything sample_open() and sample_listen() created, in reverse order. */
static inline void sample_close(struct sample *s) {
    if (s->ep != DAT_HANDLE_NULL) dat_ep_free(s->ep);
    if (s->psp != DAT_HANDLE_NULL) dat_psp_free(s->psp);
    if (s->cr_evd != DAT_HANDLE_NULL) dat_evd_free(s->cr_evd);
    if (s->conn_evd != DAT_HANDLE_NULL) dat_evd_free(s->conn_evd);
    if (s->recv_evd != DAT_HANDLE_NULL) dat_evd_free(s->recv_evd);
    if (s->req_evd != DAT_HANDLE_NULL) dat_evd_free(s->req_evd);
    if (s->pz != DAT_HANDLE_NULL) dat_pz_free(s->pz);
    if (s->ia != DAT_HANDLE_NULL) {
        DAT_RETURN rc = dat_ia_close(s->ia, DAT_CLOSE_GRACEFUL_FLAG);
        if (rc != DAT_SUCCESS) dat_ia_close(s->ia, DAT_CLOSE_ABRUPT_FLAG);
    }
    memset(s, 0, sizeof *s);
}

/* Handles the options every connected sample has: -h <server address> and -p <connection
 * qualifier>. Returns 1 if `opt` was one of them. */
static inline unsigned long long sample_number(const char *opt, const char *text);
static inline int sample_common_option(struct sample *s, int opt, const char *arg) {
    if (opt == 'h') {
        s->server_addr = arg;
        return 1;
    }
    if (opt == 'p') {
        s->qual = (DAT_CONN_QUAL)sample_number("-p", arg);
        return 1;
    }
    return 0;
}

/* The optional last argument: the IA name (default SAMPLE_DEFAULT_IA). */
static inline int sample_ia_argument(struct sample *s, int argc, char **argv, int optind_) {
    s->ia_name = SAMPLE_DEFAULT_IA;
    if (optind_ < argc) s->ia_name = argv[optind_++];
    return optind_ == argc ? 0 : -1; /* -1: unexpected extra arguments */
}

/* Parses a decimal number option; exits with a message if it is not one. */
static inline unsigned long long sample_number(const char *opt, const char *text) {
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (text[0] == '\0' || text[0] == '-' || *end != '\0') {
        fprintf(stderr, "%s wants a non-negative number, not '%s'\n", opt, text);
        exit(2);
    }
    return v;
}

#endif /* OPENDAT_SAMPLE_COMMON_H */

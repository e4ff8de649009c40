/*
 * delayed_ack: what the endpoint attribute "delayed_ack" changes, measured.
 *
 *   server:  delayed_ack [-p qual] [IA]
 *   client:  delayed_ack -h <server address> [-p qual] [-s size] [-n count] [IA]
 *
 *   IA  the IA name from dat.conf (default ofa-v2-tcp-lo, the loopback tcp entry)
 *   -p  connection qualifier the server listens on (default 18515)
 *   -s  bytes per RDMA write (default 64), -n writes per phase (default 2000)
 *
 * By default an OpenDAT tcp endpoint completes a send or RDMA write as soon as the data is
 * handed to the transport: fast, but the completion says nothing about the peer. With the
 * provider-specific EP attribute delayed_ack = "true" (<dat2/dat_trace.h>), the write
 * completes only when the target has placed the data and acknowledged it, as on
 * InfiniBand. The IA tells whether it can do this in the provider-specific attribute
 * delayed_ack_supported.
 *
 * The client reads delayed_ack_supported, then runs two phases of -n RDMA writes into the
 * server's buffer, waiting for each write's completion before posting the next:
 *   phase 1 with delayed_ack "false", phase 2 after dat_ep_modify() set it to "true",
 * and prints the average time from post to completion in each phase. Finally it sends
 * "done"; the server checks that the last write arrived intact.
 *
 * Build on its own:  cc -std=c11 -O2 -o delayed_ack delayed_ack.c $(pkg-config --cflags --libs
 * dat2) Try it:            ./delayed_ack &  ./delayed_ack -h 127.0.0.1
 */
#define _POSIX_C_SOURCE 200809L
#include "sample_common.h"

#include <dat2/udat.h>
#include <dat2/dat_trace.h>

#include <unistd.h>

static unsigned char pattern(size_t i) {
    return (unsigned char)(i * 7u + 3u);
}

/* The IA's "delayed_ack_supported" provider-specific attribute: 1 if "true". */
static int delayed_ack_supported(struct sample *s) {
    DAT_PROVIDER_ATTR pa;
    memset((void *)&pa, 0, sizeof pa); /* (a const member: clear it as raw storage) */
    DAT_RETURN rc = dat_ia_query(s->ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa);
    if (rc != DAT_SUCCESS) {
        sample_fail("dat_ia_query", rc);
        return 0;
    }
    for (DAT_COUNT i = 0; i < pa.num_provider_specific_attr; i++) {
        const DAT_NAMED_ATTR *a = &pa.provider_specific_attr[i];
        if (strcmp(a->name, DAT_VENDOR_ATTR_DELAYED_ACK_SUPPORTED) == 0) {
            printf("client: %s = %s\n", a->name, a->value);
            return strcmp(a->value, "true") == 0;
        }
    }
    printf("client: this IA does not report %s\n", DAT_VENDOR_ATTR_DELAYED_ACK_SUPPORTED);
    return 0;
}

/* Sets the EP's delayed_ack attribute with dat_ep_modify and reads it back. */
static int set_delayed_ack(struct sample *s, int on) {
    DAT_NAMED_ATTR attr = {DAT_EP_ATTR_DELAYED_ACK, on ? "true" : "false"};
    DAT_EP_PARAM param;
    memset(&param, 0, sizeof param);
    param.ep_attr.ep_provider_specific_count = 1;
    param.ep_attr.ep_provider_specific = &attr;
    DAT_RETURN rc = dat_ep_modify(s->ep, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, &param);
    if (rc != DAT_SUCCESS) return sample_fail("dat_ep_modify(delayed_ack)", rc);

    memset(&param, 0, sizeof param);
    rc = dat_ep_query(s->ep, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, &param);
    if (rc != DAT_SUCCESS) return sample_fail("dat_ep_query", rc);
    for (DAT_COUNT i = 0; i < param.ep_attr.ep_provider_specific_count; i++) {
        const DAT_NAMED_ATTR *a = &param.ep_attr.ep_provider_specific[i];
        if (strcmp(a->name, DAT_EP_ATTR_DELAYED_ACK) == 0 && strcmp(a->value, attr.value) != 0) {
            fprintf(stderr, "dat_ep_query reports delayed_ack = %s\n", a->value);
            return -1;
        }
    }
    return 0;
}

/* -n RDMA writes, each waited for; returns the average microseconds from post to completion. */
static double write_phase(struct sample *s, struct sample_buf *from, DAT_RMR_TRIPLET *to,
                          size_t size, unsigned long count) {
    DAT_LMR_TRIPLET iov = sample_iov(from, 0, size);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = 0;
    double total = 0;
    for (unsigned long i = 0; i < count; i++) {
        double t0 = sample_now_us();
        DAT_RETURN rc =
            dat_ep_post_rdma_write(s->ep, 1, &iov, cookie, to, DAT_COMPLETION_DEFAULT_FLAG);
        if (rc != DAT_SUCCESS) return sample_fail("dat_ep_post_rdma_write", rc);
        if (sample_wait_dto(s->req_evd, "RDMA write") != 0) return -1;
        total += sample_now_us() - t0;
    }
    return total / (double)count;
}

static void report(int delayed_ack, unsigned long count, size_t size, double us) {
    printf("client: delayed_ack = %s %lu RDMA writes of %zu bytes, average completion %.2f us\n",
           delayed_ack ? "true: " : "false:", count, size, us);
}

/* The registered buffers; main() frees them whatever happened. */
static struct sample_buf src, dst, msg;

static int run_client(struct sample *s, size_t size, unsigned long count) {
    unsigned char pdata[4];
    int local = DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG;
    int supported = delayed_ack_supported(s);
    if (sample_register(s, &src, size, local) != 0 || sample_register(s, &msg, 8, local) != 0)
        return 1;
    for (size_t i = 0; i < size; i++) src.mem[i] = pattern(i);
    sample_put_be(pdata, size, 4);
    if (sample_connect(s, pdata, sizeof pdata) != 0) return 1;
    if (s->peer_pdata_len < SAMPLE_RMR_WIRE_LEN) {
        fprintf(stderr, "client: the server sent no RMR triplet\n");
        return 1;
    }
    DAT_RMR_TRIPLET target = sample_rmr_decode(s->peer_pdata);
    target.segment_length = (DAT_SEG_LENGTH)size;

    /* Phase 1: completion means "handed to the transport". */
    if (supported && set_delayed_ack(s, 0) != 0) return 1;
    double off = write_phase(s, &src, &target, size, count);
    if (off < 0) return 1;
    report(0, count, size, off);
    if (supported) {
        /* Phase 2: completion means "placed in the server's memory". */
        if (set_delayed_ack(s, 1) != 0) return 1;
        double on = write_phase(s, &src, &target, size, count);
        if (on < 0) return 1;
        report(1, count, size, on);
        printf("client: waiting for the target's acknowledgement costs %.2f us per write\n",
               on - off);
    } else {
        printf("client: delayed_ack not supported: only phase 1 was run\n");
    }

    /* "done" carries the number of writes; the server then checks its buffer. */
    sample_put_be(msg.mem, supported ? 2 * count : count, 8);
    if (sample_post_send(s, &msg, 0, 8) != 0 || sample_wait_dto(s->req_evd, "sending done") != 0)
        return 1;
    return sample_disconnect(s) == 0 ? 0 : 1;
}

static int run_server(struct sample *s) {
    unsigned char pdata[SAMPLE_RMR_WIRE_LEN];
    int local = DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG;
    if (sample_listen(s) != 0) return 1;
    if (s->peer_pdata_len < 4) {
        fprintf(stderr, "server: the client sent no size\n");
        return 1;
    }
    size_t size = (size_t)sample_get_be(s->peer_pdata, 4);
    if (sample_register(s, &dst, size, local | DAT_MEM_PRIV_REMOTE_WRITE_FLAG) != 0 ||
        sample_register(s, &msg, 8, local) != 0 || sample_post_recv(s, &msg, 0, 8) != 0)
        return 1;
    DAT_RMR_TRIPLET rmr = sample_rmr(&dst);
    sample_rmr_encode(&rmr, pdata);
    if (sample_accept(s, pdata, sizeof pdata) != 0) return 1;

    if (sample_wait_dto(s->recv_evd, "receiving done") != 0) return 1;
    size_t bad = 0;
    while (bad < size && dst.mem[bad] == pattern(bad)) bad++;
    printf("server: %llu RDMA writes of %zu bytes received, the buffer %s\n",
           (unsigned long long)sample_get_be(msg.mem, 8), size,
           bad == size ? "verified" : "is CORRUPT");
    return sample_disconnect(s) == 0 && bad == size ? 0 : 1;
}

int main(int argc, char **argv) {
    struct sample s = {0};
    size_t size = 64;
    unsigned long count = 2000;
    s.qual = SAMPLE_DEFAULT_QUAL;
    int opt;
    while ((opt = getopt(argc, argv, "h:p:s:n:")) != -1) {
        if (sample_common_option(&s, opt, optarg)) continue;
        switch (opt) {
            case 's':
                size = (size_t)sample_number("-s", optarg);
                break;
            case 'n':
                count = (unsigned long)sample_number("-n", optarg);
                break;
            default:
                fprintf(stderr, "usage: %s [-h server] [-p qual] [-s size] [-n count] [IA]\n",
                        argv[0]);
                return 2;
        }
    }
    if (sample_ia_argument(&s, argc, argv, optind) != 0 || size == 0 || count == 0) {
        fprintf(stderr, "usage: %s [-h server] [-p qual] [-s size] [-n count] [IA]\n", argv[0]);
        return 2;
    }

    int status = 1;
    if (sample_open(&s, NULL) == 0)
        status = s.server_addr == NULL ? run_server(&s) : run_client(&s, size, count);
    sample_unregister(&src);
    sample_unregister(&dst);
    sample_unregister(&msg);
    sample_close(&s);
    return status;
}

/*
 * rdma_rw: RDMA write and RDMA read between two peers, as in the classic verbs read/write
 * tutorial: the peers exchange RMR triplets (address, length, remote key) over a send,
 * then access each other's memory directly.
 *
 *   server:  rdma_rw [-p qual] [IA]
 *   client:  rdma_rw -h <server address> [-p qual] [-s size] [IA]
 *
 *   IA  the IA name from dat.conf (default ofa-v2-tcp-lo, the loopback tcp entry)
 *   -p  connection qualifier the server listens on (default 18515)
 *   -s  buffer size in bytes (default 65536); the client passes it to the server in the
 *       private data of its connection request
 *
 * Each peer registers a buffer the other may read and write (REMOTE_READ | REMOTE_WRITE).
 *   1. Both send their buffer's RMR triplet to the other (one send each).
 *   2. The client fills its buffer with a pattern and RDMA-writes it into the server's
 *      buffer, then sends "written".
 *   3. The server verifies that its buffer now holds the pattern, RDMA-reads the client's
 *      buffer back into a scratch buffer, verifies that too, and sends "read".
 *   4. The client RDMA-reads the server's buffer back and verifies it holds what it wrote.
 * Exit status 0 when every check passed.
 *
 * Build on its own:  cc -std=c11 -o rdma_rw rdma_rw.c $(pkg-config --cflags --libs dat2)
 * Try it:            ./rdma_rw &  ./rdma_rw -h 127.0.0.1 -s 1048576
 */
#define _POSIX_C_SOURCE 200809L
#include "sample_common.h"

#include <dat2/udat.h>

#include <unistd.h>

enum { MSG_LEN = 16, MSG_WRITTEN = 1, MSG_READ = 2 };

/* The bytes the client writes: anything that a misplaced or partial transfer would break. */
static unsigned char pattern(size_t i) {
    return (unsigned char)((i * 131u + (i >> 8)) ^ 0x5a);
}

/* Index of the first byte of `b` that differs from the pattern, or `len` if none does. */
static size_t first_mismatch(const unsigned char *b, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (b[i] != pattern(i)) return i;
    return len;
}

/* The peer's buffers and ours, and the small message buffer. */
struct rw {
    struct sample_buf data;    /* the buffer the peer reads and writes */
    struct sample_buf scratch; /* where our RDMA read lands */
    struct sample_buf msg;     /* [0,16) [16,32): receives; [32,48): sends */
    DAT_RMR_TRIPLET peer;      /* the peer's data buffer */
    size_t size;
};

static int setup(struct sample *s, struct rw *rw) {
    int local = DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG;
    if (sample_register(s, &rw->data, rw->size,
                        local | DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG) ||
        sample_register(s, &rw->scratch, rw->size, local) ||
        sample_register(s, &rw->msg, 3 * MSG_LEN, local))
        return -1;
    /* Two receives, posted before the connection exists: the peer's RMR triplet, then its
     * "written"/"read" message. Receives complete in the order they were posted. */
    if (sample_post_recv(s, &rw->msg, 0, MSG_LEN) ||
        sample_post_recv(s, &rw->msg, MSG_LEN, MSG_LEN))
        return -1;
    return 0;
}

/* Step 1: send our RMR triplet, receive the peer's. */
static int exchange_rmr(struct sample *s, struct rw *rw) {
    DAT_RMR_TRIPLET mine = sample_rmr(&rw->data);
    sample_rmr_encode(&mine, rw->msg.mem + 2 * MSG_LEN);
    if (sample_post_send(s, &rw->msg, 2 * MSG_LEN, MSG_LEN) != 0) return -1;
    if (sample_wait_dto(s->req_evd, "sending our RMR triplet") != 0) return -1;
    if (sample_wait_dto(s->recv_evd, "receiving the peer's RMR triplet") != 0) return -1;
    rw->peer = sample_rmr_decode(rw->msg.mem);
    if (rw->peer.segment_length < rw->size) {
        fprintf(stderr, "the peer's buffer is too small (%u bytes)\n", rw->peer.segment_length);
        return -1;
    }
    return 0;
}

/* "<ms> ms, <MB/s> MB/s" for `bytes` moved in `us` microseconds, into `out`. */
static const char *figure(char *out, size_t n, size_t bytes, double us) {
    snprintf(out, n, "%.2f ms, %.0f MB/s", us / 1000.0, us > 0 ? (double)bytes / us : 0.0);
    return out;
}

/* Posts an RDMA read (read != 0) or write of the whole buffer and waits for it; *us (when
 * not NULL) gets the time from the post to the completion. */
static int rdma(struct sample *s, struct rw *rw, int read, double *us) {
    double start = sample_now_us();
    DAT_LMR_TRIPLET iov = sample_iov(read ? &rw->scratch : &rw->data, 0, rw->size);
    DAT_RMR_TRIPLET remote = rw->peer;
    remote.segment_length = (DAT_SEG_LENGTH)rw->size;
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = (DAT_UINT64)read;
    DAT_RETURN rc =
        read ? dat_ep_post_rdma_read(s->ep, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG)
             : dat_ep_post_rdma_write(s->ep, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG);
    if (rc != DAT_SUCCESS)
        return sample_fail(read ? "dat_ep_post_rdma_read" : "dat_ep_post_rdma_write", rc);
    int r = sample_wait_dto(s->req_evd, read ? "RDMA read" : "RDMA write");
    if (us != NULL) *us = sample_now_us() - start;
    return r;
}

/* Sends a one-word message, or waits for one and checks its code. */
static int send_msg(struct sample *s, struct rw *rw, unsigned code) {
    sample_put_be(rw->msg.mem + 2 * MSG_LEN, code, 4);
    if (sample_post_send(s, &rw->msg, 2 * MSG_LEN, MSG_LEN) != 0) return -1;
    return sample_wait_dto(s->req_evd, "sending a message");
}
static int recv_msg(struct sample *s, struct rw *rw, unsigned code) {
    if (sample_wait_dto(s->recv_evd, "receiving a message") != 0) return -1;
    unsigned got = (unsigned)sample_get_be(rw->msg.mem + MSG_LEN, 4);
    if (got != code) {
        fprintf(stderr, "expected message %u, got %u\n", code, got);
        return -1;
    }
    return 0;
}

static int run_server(struct sample *s, struct rw *rw) {
    if (sample_listen(s) != 0) return 1;
    if (s->peer_pdata_len < 4) {
        fprintf(stderr, "server: the client sent no buffer size\n");
        return 1;
    }
    rw->size = (size_t)sample_get_be(s->peer_pdata, 4);
    if (setup(s, rw) != 0 || sample_accept(s, NULL, 0) != 0 || exchange_rmr(s, rw) != 0) return 1;

    /* 3. The client's write has landed when its "written" message arrives. */
    if (recv_msg(s, rw, MSG_WRITTEN) != 0) return 1;
    size_t bad = first_mismatch(rw->data.mem, rw->size);
    printf("server: the client's RDMA write of %zu bytes %s\n", rw->size,
           bad == rw->size ? "arrived intact" : "is CORRUPT");
    if (bad != rw->size) return 1;
    if (rdma(s, rw, 1, NULL) != 0) return 1;
    bad = first_mismatch(rw->scratch.mem, rw->size);
    printf("server: RDMA read of the client's buffer: %zu bytes %s\n", rw->size,
           bad == rw->size ? "verified" : "CORRUPT");
    if (bad != rw->size || send_msg(s, rw, MSG_READ) != 0) return 1;
    return sample_disconnect(s) == 0 ? 0 : 1;
}

static int run_client(struct sample *s, struct rw *rw) {
    unsigned char pdata[4];
    if (setup(s, rw) != 0) return 1;
    for (size_t i = 0; i < rw->size; i++) rw->data.mem[i] = pattern(i);
    sample_put_be(pdata, rw->size, 4);
    if (sample_connect(s, pdata, sizeof pdata) != 0 || exchange_rmr(s, rw) != 0) return 1;

    /* 2. Write our buffer into the server's, then tell it so. The figures are the time
     * from post to completion, one transfer of the whole buffer: an impression, not a
     * benchmark (tools/datbench is one). */
    double write_us = 0, read_us = 0;
    char fig[64];
    if (rdma(s, rw, 0, &write_us) != 0 || send_msg(s, rw, MSG_WRITTEN) != 0) return 1;
    printf("client: wrote %zu bytes into the server's buffer (RDMA write, %s)\n", rw->size,
           figure(fig, sizeof fig, rw->size, write_us));
    /* 4. When the server has checked and read, read its buffer back. */
    if (recv_msg(s, rw, MSG_READ) != 0 || rdma(s, rw, 1, &read_us) != 0) return 1;
    size_t bad = first_mismatch(rw->scratch.mem, rw->size);
    if (bad == rw->size)
        printf("client: RDMA read of the server's buffer: %zu bytes verified (%s)\n", rw->size,
               figure(fig, sizeof fig, rw->size, read_us));
    else
        printf("client: RDMA read of the server's buffer: byte %zu differs\n", bad);
    return bad == rw->size && sample_disconnect(s) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    struct sample s = {0};
    struct rw rw;
    memset(&rw, 0, sizeof rw);
    rw.size = 65536;
    s.qual = SAMPLE_DEFAULT_QUAL;
    int opt;
    while ((opt = getopt(argc, argv, "h:p:s:")) != -1) {
        if (sample_common_option(&s, opt, optarg)) continue;
        if (opt == 's') {
            rw.size = (size_t)sample_number("-s", optarg);
            continue;
        }
        fprintf(stderr, "usage: %s [-h server] [-p qual] [-s size] [IA]\n", argv[0]);
        return 2;
    }
    if (sample_ia_argument(&s, argc, argv, optind) != 0 || rw.size == 0 || rw.size > 0x7fffffff) {
        fprintf(stderr, "usage: %s [-h server] [-p qual] [-s size] [IA]\n", argv[0]);
        return 2;
    }

    int status = 1;
    if (sample_open(&s, NULL) == 0)
        status = s.server_addr == NULL ? run_server(&s, &rw) : run_client(&s, &rw);
    sample_unregister(&rw.data);
    sample_unregister(&rw.scratch);
    sample_unregister(&rw.msg);
    sample_close(&s);
    return status;
}

/*
 * add_ints: the add-two-integers client and server.
 *
 *   server:  add_ints [-p qual] [IA]
 *   client:  add_ints -h <server address> [-p qual] [-a A] [-b B] [IA]
 *
 *   IA  the IA name from dat.conf (default ofa-v2-tcp-lo, the loopback tcp entry)
 *   -p  connection qualifier the server listens on (default 18515)
 *   -a  the first integer (default 17), -b the second (default 25)
 *
 * 1. The server registers an 8-byte slot the client may write into (REMOTE_WRITE) and
 *    accepts the connection with the slot's RMR triplet as private data.
 * 2. The client writes A into that slot with an RDMA write, then sends B.
 * 3. The send arrives after the write has landed (an RDMA write followed by a send on the
 *    same connection is placed in order), so when the server's receive completes it finds
 *    A in the slot and B in the message. It adds them and sends the sum back.
 * 4. The client prints the sum and checks it.
 * Integers travel as 64-bit big-endian two's complement.
 *
 * Build on its own:  cc -std=c11 -o add_ints add_ints.c $(pkg-config --cflags --libs dat2)
 * Try it:            ./add_ints &  ./add_ints -h 127.0.0.1 -a 40 -b 2
 */
#define _POSIX_C_SOURCE 200809L
#include "sample_common.h"

#include <dat2/udat.h>

#include <unistd.h>

static void put_int(unsigned char *p, long long v) {
    sample_put_be(p, (uint64_t)v, 8);
}
static long long get_int(const unsigned char *p) {
    return (long long)sample_get_be(p, 8);
}

/* The registered buffers; main() frees them whatever happened. */
static struct sample_buf slot, msg, out, in;

static int run_server(struct sample *s) {
    unsigned char pdata[SAMPLE_RMR_WIRE_LEN];
    /* slot: written by the client's RDMA write. msg: [0, 8) receives B, [8, 16) sends the sum */
    if (sample_register(s, &slot, 8,
                        DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG |
                            DAT_MEM_PRIV_REMOTE_WRITE_FLAG) != 0 ||
        sample_register(s, &msg, 16, DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG))
        return 1;
    if (sample_listen(s) != 0) return 1;
    if (sample_post_recv(s, &msg, 0, 8) != 0) return 1;
    DAT_RMR_TRIPLET rmr = sample_rmr(&slot);
    sample_rmr_encode(&rmr, pdata); /* the client learns where to write from the accept */
    if (sample_accept(s, pdata, sizeof pdata) != 0) return 1;

    if (sample_wait_dto(s->recv_evd, "receiving B") != 0) return 1;
    long long a = get_int(slot.mem), b = get_int(msg.mem);
    long long sum = (long long)((unsigned long long)a + (unsigned long long)b); /* wraps */
    printf("server: %lld (RDMA write) + %lld (send) = %lld\n", a, b, sum);
    put_int(msg.mem + 8, sum);
    if (sample_post_send(s, &msg, 8, 8) != 0) return 1;
    if (sample_wait_dto(s->req_evd, "sending the sum") != 0) return 1;

    return sample_disconnect(s) == 0 ? 0 : 1;
}

static int run_client(struct sample *s, long long a, long long b) {
    int prot = DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG;
    /* out: [0, 8) is the RDMA write's source (A), [8, 16) the send's (B); in: the sum */
    if (sample_register(s, &out, 16, prot) != 0 || sample_register(s, &in, 8, prot) != 0) return 1;
    if (sample_post_recv(s, &in, 0, 8) != 0) return 1;
    if (sample_connect(s, NULL, 0) != 0) return 1;
    if (s->peer_pdata_len < SAMPLE_RMR_WIRE_LEN) {
        fprintf(stderr, "client: the server sent no RMR triplet\n");
        return 1;
    }
    DAT_RMR_TRIPLET server_slot = sample_rmr_decode(s->peer_pdata); /* where A goes */

    put_int(out.mem, a);
    put_int(out.mem + 8, b);
    DAT_LMR_TRIPLET iov = sample_iov(&out, 0, 8);
    server_slot.segment_length = 8;
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = 1;
    DAT_RETURN rc =
        dat_ep_post_rdma_write(s->ep, 1, &iov, cookie, &server_slot, DAT_COMPLETION_DEFAULT_FLAG);
    if (rc != DAT_SUCCESS) {
        sample_fail("dat_ep_post_rdma_write", rc);
        return 1;
    }
    if (sample_post_send(s, &out, 8, 8) != 0) return 1;
    /* two request completions, in posting order: the write, then the send */
    if (sample_wait_dto(s->req_evd, "writing A") != 0) return 1;
    if (sample_wait_dto(s->req_evd, "sending B") != 0) return 1;

    if (sample_wait_dto(s->recv_evd, "receiving the sum") != 0) return 1;
    long long sum = get_int(in.mem);
    long long expected = (long long)((unsigned long long)a + (unsigned long long)b);
    printf("client: %lld + %lld = %lld (%s)\n", a, b, sum, sum == expected ? "correct" : "WRONG");

    return sample_disconnect(s) == 0 && sum == expected ? 0 : 1;
}

static long long parse_int(const char *opt, const char *text) {
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (text[0] == '\0' || *end != '\0') {
        fprintf(stderr, "%s wants an integer, not '%s'\n", opt, text);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    struct sample s = {0};
    long long a = 17, b = 25;
    s.qual = SAMPLE_DEFAULT_QUAL;
    int opt;
    while ((opt = getopt(argc, argv, "h:p:a:b:")) != -1) {
        if (sample_common_option(&s, opt, optarg)) continue;
        switch (opt) {
            case 'a':
                a = parse_int("-a", optarg);
                break;
            case 'b':
                b = parse_int("-b", optarg);
                break;
            default:
                fprintf(stderr, "usage: %s [-h server] [-p qual] [-a A] [-b B] [IA]\n", argv[0]);
                return 2;
        }
    }
    if (sample_ia_argument(&s, argc, argv, optind) != 0) {
        fprintf(stderr, "usage: %s [-h server] [-p qual] [-a A] [-b B] [IA]\n", argv[0]);
        return 2;
    }

    int status = 1;
    if (sample_open(&s, NULL) == 0)
        status = s.server_addr == NULL ? run_server(&s) : run_client(&s, a, b);
    sample_unregister(&slot);
    sample_unregister(&msg);
    sample_unregister(&out);
    sample_unregister(&in);
    sample_close(&s);
    return status;
}

/*
 * pingpong: send/receive ping-pong between two processes; prints the average round trip.
 *
 *   server:  pingpong [-p qual] [IA]
 *   client:  pingpong -h <server address> [-p qual] [-s size] [-n count] [-b] [IA]
 *
 *   IA  the IA name from dat.conf (default ofa-v2-tcp-lo, the loopback tcp entry)
 *   -p  connection qualifier the server listens on (default 18515)
 *   -s  message size in bytes (default 64)
 *   -n  number of round trips (default 10000)
 *   -b  busy-poll: both sides poll the EVDs with dat_evd_dequeue() instead of sleeping in
 *       dat_evd_wait() (lower latency, one core busy)
 *
 * The client sends a message, the server sends it back, -n times. The client tells the
 * server the size, the count and -b in the private data of its connection request, so the
 * server needs no options. Each side posts its next receive before the message it answers
 * can arrive, so no message ever waits for a buffer.
 *
 * Build on its own:  cc -std=c11 -O2 -o pingpong pingpong.c $(pkg-config --cflags --libs dat2)
 * Try it:            ./pingpong &  ./pingpong -h 127.0.0.1 -s 4096 -n 1000
 */
#define _POSIX_C_SOURCE 200809L
#include "sample_common.h"

#include <dat2/udat.h>

#include <unistd.h>

/* Waits for a DTO completion on `evd`, sleeping or busy-polling. */
static int wait_dto(DAT_EVD_HANDLE evd, int busy_poll, const char *what) {
    if (!busy_poll) return sample_wait_dto(evd, what);
    double deadline = sample_now_us() + SAMPLE_TIMEOUT_US;
    DAT_EVENT ev;
    for (;;) {
        DAT_RETURN rc = dat_evd_dequeue(evd, &ev);
        if (rc == DAT_SUCCESS) return sample_check_dto(&ev, what);
        /* an empty queue is DAT_QUEUE_EMPTY; anything else is an error */
        if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY) return sample_fail(what, rc);
        if (sample_now_us() > deadline) {
            fprintf(stderr, "%s: timed out\n", what);
            return -1;
        }
    }
}

/* The setup the client sends in its connection request: size, count, busy-poll flag. */
static void encode_setup(unsigned char *p, size_t size, unsigned long count, int busy) {
    sample_put_be(p, size, 4);
    sample_put_be(p + 4, count, 4);
    sample_put_be(p + 8, (uint64_t)busy, 4);
}

/* The registered buffers; main() frees them whatever happened. */
static struct sample_buf buf, ping, pong;

static int run_server(struct sample *s) {
    if (sample_listen(s) != 0) return 1;
    if (s->peer_pdata_len < 12) {
        fprintf(stderr, "server: the client sent no setup\n");
        return 1;
    }
    size_t size = (size_t)sample_get_be(s->peer_pdata, 4);
    unsigned long count = (unsigned long)sample_get_be(s->peer_pdata + 4, 4);
    int busy = (int)sample_get_be(s->peer_pdata + 8, 4);
    /* One buffer: each ping is received into it and sent back from it. */
    if (sample_register(s, &buf, size,
                        DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG))
        return 1;
    if (sample_post_recv(s, &buf, 0, size) != 0) return 1;
    if (sample_accept(s, NULL, 0) != 0) return 1;

    for (unsigned long i = 0; i < count; i++) {
        if (wait_dto(s->recv_evd, busy, "receiving a ping") != 0) return 1;
        if (sample_post_send(s, &buf, 0, size) != 0) return 1;
        /* The send must complete before the buffer is reused for the next ping. */
        if (wait_dto(s->req_evd, busy, "sending a pong") != 0) return 1;
        if (i + 1 < count && sample_post_recv(s, &buf, 0, size) != 0) return 1;
    }
    printf("server: echoed %lu messages of %zu bytes\n", count, size);
    return sample_disconnect(s) == 0 ? 0 : 1;
}

static int run_client(struct sample *s, size_t size, unsigned long count, int busy) {
    unsigned char setup[12];
    int prot = DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG;
    if (sample_register(s, &ping, size, prot) != 0) return 1;
    if (sample_register(s, &pong, size, prot) != 0) return 1;
    if (sample_post_recv(s, &pong, 0, size) != 0) return 1;
    encode_setup(setup, size, count, busy);
    if (sample_connect(s, setup, sizeof setup) != 0) return 1;

    double start = sample_now_us();
    for (unsigned long i = 0; i < count; i++) {
        memset(ping.mem, (int)(i & 0xff), size); /* each ping carries its number */
        if (sample_post_send(s, &ping, 0, size) != 0) return 1;
        if (wait_dto(s->req_evd, busy, "sending a ping") != 0) return 1;
        if (wait_dto(s->recv_evd, busy, "receiving a pong") != 0) return 1;
        if (pong.mem[0] != (unsigned char)(i & 0xff) || pong.mem[size - 1] != pong.mem[0]) {
            fprintf(stderr, "client: pong %lu does not echo its ping\n", i);
            return 1;
        }
        if (i + 1 < count && sample_post_recv(s, &pong, 0, size) != 0) return 1;
    }
    double elapsed = sample_now_us() - start;
    printf("client: %lu round trips of %zu bytes, average round trip %.2f us (%s)\n", count, size,
           elapsed / (double)count, busy ? "busy polling" : "dat_evd_wait");
    return sample_disconnect(s) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    struct sample s = {0};
    size_t size = 64;
    unsigned long count = 10000;
    int busy = 0;
    s.qual = SAMPLE_DEFAULT_QUAL;
    int opt;
    while ((opt = getopt(argc, argv, "h:p:s:n:b")) != -1) {
        if (sample_common_option(&s, opt, optarg)) continue;
        switch (opt) {
            case 's':
                size = (size_t)sample_number("-s", optarg);
                break;
            case 'n':
                count = (unsigned long)sample_number("-n", optarg);
                break;
            case 'b':
                busy = 1;
                break;
            default:
                fprintf(stderr, "usage: %s [-h server] [-p qual] [-s size] [-n count] [-b] [IA]\n",
                        argv[0]);
                return 2;
        }
    }
    if (sample_ia_argument(&s, argc, argv, optind) != 0 || size == 0 || count == 0) {
        fprintf(stderr, "usage: %s [-h server] [-p qual] [-s size] [-n count] [-b] [IA]\n",
                argv[0]);
        return 2;
    }

    int status = 1;
    if (sample_open(&s, NULL) == 0)
        status = s.server_addr == NULL ? run_server(&s) : run_client(&s, size, count, busy);
    sample_unregister(&buf);
    sample_unregister(&ping);
    sample_unregister(&pong);
    sample_close(&s);
    return status;
}

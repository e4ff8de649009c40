// bench_linecost: what one more cache line, page or instruction costs a busy-polled
// ping-pong on this machine, between two system calls.
//
// Two processes (server on CPU 0, client on CPU 1) turn an 8-byte message around over a
// loopback TCP connection, each polling with recv(MSG_DONTWAIT) as raw TCP does in
// datbench. In every turnaround each process also does a fixed extra piece of work:
//   lines: touches N data lines, 16 per page, on N/16 pages of its own;
//   pages: touches one line on each of N pages;
//   code:  calls N functions, each on a code page of its own;
//   adds:  runs N dependent additions (one per cycle, an instruction's floor).
// It prints the round trip's median over the rounds, and what one item added to one
// turnaround ((round trip - baseline) / 2 / N). On a machine whose system calls flush the
// TLB (page-table isolation without PCID) or evict the caches, the hot path's cost is in
// the lines and pages it touches, not the instructions it runs (docs/benchmarks.md).
//
//   bench_linecost [-r ROUNDS] [-n ROUND_TRIPS]   (defaults 5 and 20000; a free port)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// Functions that each start a code page of their own. A use ends with a semicolon (the
// static assertion) so that each reads as one declaration.
#define CODE_FN(n)                                                                            \
    __attribute__((noinline, aligned(4096))) static unsigned long code_##n(unsigned long x) { \
        return x * 3 + n;                                                                     \
    }                                                                                         \
    _Static_assert(n > 0, "a code page")
#define CODE_FN8(a) \
    CODE_FN(a##0);  \
    CODE_FN(a##1);  \
    CODE_FN(a##2);  \
    CODE_FN(a##3);  \
    CODE_FN(a##4);  \
    CODE_FN(a##5);  \
    CODE_FN(a##6);  \
    CODE_FN(a##7)
CODE_FN8(1);
CODE_FN8(2);
CODE_FN8(3);
CODE_FN8(4);
static unsigned long (*const code_pages[32])(unsigned long) = {
    code_10, code_11, code_12, code_13, code_14, code_15, code_16, code_17,
    code_20, code_21, code_22, code_23, code_24, code_25, code_26, code_27,
    code_30, code_31, code_32, code_33, code_34, code_35, code_36, code_37,
    code_40, code_41, code_42, code_43, code_44, code_45, code_46, code_47};

enum kind { BASE, LINES, PAGES, CODE, ADDS };
struct work {
    const char *name;
    enum kind kind;
    int n;
};
static const struct work cases[] = {
    {"baseline", BASE, 0},    {"lines", LINES, 256}, {"pages", PAGES, 256},
    {"code pages", CODE, 32}, {"adds", ADDS, 8000},
};
#define NCASES (sizeof cases / sizeof cases[0])

static volatile unsigned char *arena;  // 256 pages of this process's own
static volatile unsigned long sink;    // unsigned: the work may wrap it, by design

static void do_work(const struct work *w) {
    unsigned long acc = sink;
    switch (w->kind) {
        case LINES:
            for (int i = 0; i < w->n; i++) acc += arena[(long)(i / 16) * 4096 + (i % 16) * 64]++;
            break;
        case PAGES:
            for (int i = 0; i < w->n; i++) acc += arena[(long)i * 4096 + (i % 64) * 64]++;
            break;
        case CODE:
            for (int i = 0; i < w->n; i++) acc = code_pages[i](acc);
            break;
        case ADDS:
            for (int i = 0; i < w->n; i++) __asm__ volatile("add $1, %0" : "+r"(acc));
            break;
        case BASE:
            break;
    }
    sink = acc;
}

static pid_t server_pid;  // the client's child: it must not outlive a client that gives up

static void give_up(void) {
    if (server_pid > 0) kill(server_pid, SIGKILL);
    exit(2);
}

static void die(const char *what) {
    perror(what);
    give_up();
}

// The server ended early (it prints its own reason); errno says nothing here.
static void peer_gone(void) {
    fprintf(stderr, "bench_linecost: the server closed the connection\n");
    give_up();
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) fprintf(stderr, "cannot pin to CPU %d\n", cpu);
}

// Busy-polls for one 8-byte message; 0 when the peer closed.
static int recv8(int fd, char *b) {
    size_t got = 0;
    while (got < 8) {
        ssize_t r = recv(fd, b + got, 8 - got, MSG_DONTWAIT);
        if (r > 0)
            got += (size_t)r;
        else if (r == 0)
            return 0;
        else if (errno != EAGAIN && errno != EINTR)
            die("recv");
    }
    return 1;
}

static void send8(int fd, const char *b) {
    if (send(fd, b, 8, MSG_NOSIGNAL) != 8) die("send");
}

static void nodelay(int fd) {
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) die("TCP_NODELAY");
}

// The server answers every message after the work its first byte names.
static void serve(int listener) {
    pin(0);
    int fd = accept(listener, NULL, NULL);
    if (fd < 0) die("accept");
    nodelay(fd);
    char b[8];
    while (recv8(fd, b)) {
        do_work(&cases[(unsigned char)b[0] % NCASES]);
        send8(fd, b);
    }
    _exit(0);
}

static double round_trip_us(int fd, const struct work *w, int n) {
    char b[8] = {(char)(w - cases)};
    for (int i = 0; i < n / 10; i++) {  // warm up
        send8(fd, b);
        if (!recv8(fd, b)) peer_gone();
        do_work(w);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        send8(fd, b);
        if (!recv8(fd, b)) peer_gone();
        do_work(w);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rounds = 5, n = 20000, o;
    while ((o = getopt(argc, argv, "r:n:h")) != -1) {
        switch (o) {
            case 'r':
                rounds = atoi(optarg);
                break;
            case 'n':
                n = atoi(optarg);
                break;
            default:
                fprintf(stderr, "usage: bench_linecost [-r ROUNDS] [-n ROUND_TRIPS]\n");
                return 2;
        }
    }
    if (rounds < 1 || rounds > 99 || n < 100) {
        fprintf(stderr, "bench_linecost: -r 1..99, -n at least 100\n");
        return 2;
    }
    void *m = mmap(NULL, 256 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) die("mmap");
    memset(m, 1, 256 * 4096);  // present before timing; the fork copies it on first write
    arena = m;

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0) die("socket");
    struct sockaddr_in sa = {.sin_family = AF_INET};  // port 0: the kernel picks a free one
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (bind(listener, (struct sockaddr *)&sa, sizeof sa) != 0) die("bind");
    if (listen(listener, 1) != 0) die("listen");
    if (getsockname(listener, (struct sockaddr *)&sa, &len) != 0) die("getsockname");
    pid_t server = fork();
    if (server < 0) die("fork");
    if (server == 0) serve(listener);
    server_pid = server;
    close(listener);
    pin(1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) die("connect");
    nodelay(fd);

    double t[NCASES][99];
    for (int r = 0; r < rounds; r++)  // the cases alternate, so a slow minute hits them all
        for (size_t c = 0; c < NCASES; c++) t[c][r] = round_trip_us(fd, &cases[c], n);
    close(fd);
    int status = 0;
    waitpid(server, &status, 0);

    printf(
        "Busy-polled 8 B TCP ping-pong over loopback, server on CPU 0, client on CPU 1;\n"
        "%d rounds x %d round trips, medians. Each process does the work in each turnaround.\n",
        rounds, n);
    printf("| work per turnaround              | round trip, us | per item, ns |\n");
    printf("|----------------------------------|----------------|--------------|\n");
    double base = 0;
    for (size_t c = 0; c < NCASES; c++) {
        qsort(t[c], (size_t)rounds, sizeof(double), cmp_double);
        double med = t[c][rounds / 2];
        char what[64];
        const struct work *w = &cases[c];
        if (w->kind == BASE) {
            base = med;
            snprintf(what, sizeof what, "none");
            printf("| %-32s | %14.3f | %12s |\n", what, med, "");
            continue;
        }
        snprintf(what, sizeof what,
                 w->kind == LINES   ? "%d data lines on %d pages"
                 : w->kind == PAGES ? "1 data line on each of %d pages"
                 : w->kind == CODE  ? "%d calls, a code page each"
                                    : "%d dependent adds",
                 w->n, w->n / 16);
        printf("| %-32s | %14.3f | %12.2f |\n", what, med, (med - base) * 1e3 / 2 / w->n);
    }
    return 0;
}

// SPDX-License-Identifier: BSD-2-Clause
/* spinload.c - a closed-loop HTTP/1.1 load generator that never sleeps, for measuring
 * what a tool costs a server (tests/bench/service-side.sh CLIENT=spin).
 *
 * Why not wrk alone: on loopback the server's send() delivers the response in its own
 * context, and when the client sleeps in epoll_wait that delivery wakes it: a wakeup
 * across CPUs (an IPI; a VM exit on a virtual machine) charged to the server's CPU time.
 * How often the client sleeps depends on how fast the server answers, so a server slowed
 * by a tool pays for more of the client's wakeups too: `perf record` on a /hello server
 * shows 6% to 15% of its time in that wakeup (_raw_spin_unlock_irqrestore under
 * sock_def_readable), moving from run to run by more than any tool costs. A remote
 * client's wakeups are never the server's. This client polls its non-blocking sockets
 * without ever waiting on them, so no wakeup is queued on them and the server's CPU
 * time is its own work and the TCP stack's.
 *
 *   spinload -c CONNS -d SECONDS PORT 'GET /hello' ['PUT /kv/k1 some value' ...]
 *
 * Each connection cycles through the requests (a method, a path and an optional body),
 * starting at its own index, one outstanding request at a time. At the end it prints
 * wrk's summary line as tests/bench/http/report.lua writes it (latencies in us). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define BUF 65536
#define HIST_US 1000000 /* latencies to 1 s by the microsecond; longer ones count as 1 s */

typedef struct {
    int fd;
    unsigned next;       /* the request to send next */
    size_t have;         /* bytes of the response in buf */
    uint64_t sentNs;
    char buf[BUF];
} Conn;

static char **reqs;
static size_t *reqLen;
static unsigned nreqs;
static uint32_t hist[HIST_US + 1];
static uint64_t done, non2xx, readErrors, writeErrors, maxUs;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* "METHOD PATH [BODY]" as an HTTP/1.1 request. */
static void build_request(unsigned i, const char *spec)
{
    char method[16], path[1024];
    int used = 0;
    if (sscanf(spec, "%15s %1023s %n", method, path, &used) < 2) {
        fprintf(stderr, "spinload: a request is 'METHOD PATH [BODY]', not '%s'\n", spec);
        exit(2);
    }
    const char *body = used ? spec + used : "";
    if (asprintf(&reqs[i], "%s %s HTTP/1.1\r\nHost: load\r\nContent-Length: %zu\r\n\r\n%s", method, path,
                 strlen(body), body) < 0)
        die("asprintf");
    reqLen[i] = strlen(reqs[i]);
}

static int open_conn(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_next(Conn *c)
{
    unsigned i = c->next++ % nreqs;
    /* A request is a few dozen bytes: the socket's buffer takes it whole. */
    if (send(c->fd, reqs[i], reqLen[i], MSG_NOSIGNAL) != (ssize_t)reqLen[i]) {
        writeErrors++;
        exit(1);
    }
    c->have = 0;
    c->sentNs = now_ns();
}

/* The length of the response in c->buf if it is complete, else 0. */
static size_t complete(Conn *c)
{
    char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
    if (!end) return 0;
    size_t head = (size_t)(end - c->buf) + 4, body = 0;
    for (char *p = c->buf; p && p < end; p = memchr(p, '\n', (size_t)(end - p))) {
        if (*p == '\n') p++;
        if (!strncasecmp(p, "Content-Length:", 15)) body = strtoul(p + 15, NULL, 10);
    }
    return c->have >= head + body ? head + body : 0;
}

static void receive(Conn *c)
{
    ssize_t n = recv(c->fd, c->buf + c->have, BUF - c->have, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
        readErrors++;
        fprintf(stderr, "spinload: the server closed a connection\n");
        exit(1);
    }
    c->have += (size_t)n;
    size_t len = complete(c);
    if (!len) {
        if (c->have == BUF) { fprintf(stderr, "spinload: a response over %d bytes\n", BUF); exit(1); }
        return;
    }
    uint64_t us = (now_ns() - c->sentNs) / 1000;
    hist[us < HIST_US ? us : HIST_US]++;
    if (us > maxUs) maxUs = us;
    if (c->have < 12 || c->buf[9] != '2') non2xx++;
    done++;
    send_next(c);
}

static uint64_t percentile(double p)
{
    uint64_t want = (uint64_t)(p / 100 * (double)done), seen = 0;
    for (uint64_t us = 0; us <= HIST_US; us++)
        if ((seen += hist[us]) > want) return us;
    return HIST_US;
}

int main(int argc, char **argv)
{
    int conns = 32, secs = 3, opt;
    while ((opt = getopt(argc, argv, "c:d:")) != -1) {
        if (opt == 'c') conns = atoi(optarg);
        else if (opt == 'd') secs = atoi(optarg);
        else goto usage;
    }
    if (argc - optind < 2 || conns < 1 || conns > MAX_CONNS || secs < 1) {
    usage:
        fprintf(stderr, "usage: spinload [-c CONNS] [-d SECONDS] PORT 'METHOD PATH [BODY]'...\n");
        return 2;
    }
    int port = atoi(argv[optind]);
    nreqs = (unsigned)(argc - optind - 1);
    reqs = calloc(nreqs, sizeof *reqs);
    reqLen = calloc(nreqs, sizeof *reqLen);
    Conn *c = calloc((size_t)conns, sizeof *c);
    if (!reqs || !reqLen || !c) die("calloc");
    for (unsigned i = 0; i < nreqs; i++) build_request(i, argv[optind + 1 + i]);
    for (int i = 0; i < conns; i++) {
        c[i].fd = open_conn(port);
        c[i].next = (unsigned)i;
    }
    uint64_t start = now_ns(), stop = start + (uint64_t)secs * 1000000000u, t = start;
    for (int i = 0; i < conns; i++) send_next(&c[i]);
    while (t < stop) {
        for (int i = 0; i < conns; i++) receive(&c[i]);
        t = now_ns();
    }
    printf("RESULT requests=%lu rps=%.0f p50=%lu p90=%lu p99=%lu p999=%lu max=%lu non2xx=%lu connect=0 read=%lu "
           "write=%lu timeout=0\n",
           (unsigned long)done, (double)done / ((double)(t - start) / 1e9), (unsigned long)percentile(50),
           (unsigned long)percentile(90), (unsigned long)percentile(99), (unsigned long)percentile(99.9),
           (unsigned long)maxUs, (unsigned long)non2xx, (unsigned long)readErrors, (unsigned long)writeErrors);
    return 0;
}

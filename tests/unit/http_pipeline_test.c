// SPDX-License-Identifier: BSD-2-Clause
/* http_pipeline_test.c - tools/sqhttp.c against one client that pipelines 4,000 requests
 * in one burst, the server run on a thread with a 256 KiB stack and built without
 * optimisation (the Makefile's rule), so that no compiler turns a recursion into a loop.
 * Review finding 18: answering a pipelined request called back into the read, once per
 * request while sends completed, with an 8 KiB buffer in each frame; a burst like this one
 * ran the stack out. Every request must get its 200, in order, on one connection. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sqhttp.h"

#define REQUESTS 4000

static atomic_bool done;

static int render(void *ctx, int type, FILE *f)
{
	(void)ctx;
	(void)type;
	fputs("ok\n", f);
	return 0;
}

static void *serve(void *h)
{
	struct pollfd p = { .fd = sq_http_fd(h), .events = POLLIN };

	while (!atomic_load(&done))
		if (poll(&p, 1, 100) > 0)
			sq_http_service(h);
	return NULL;
}

static int port_of(const char *url)
{
	const char *colon = strrchr(url, ':');

	return colon ? atoi(colon + 1) : 0;
}

int main(void)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
	static const char ok[] = "HTTP/1.1 200 OK\r\n";
	static const char *const types[] = { "text/plain" };
	struct sq_http *h = sq_http_open("127.0.0.1:0", "/metrics", types, 1, render, NULL);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	size_t len = REQUESTS * (sizeof(req) - 1), off = 0, have = 0, cap = 1 << 20;
	char *burst = malloc(len), *in = malloc(cap);
	pthread_attr_t attr;
	pthread_t t;
	int s, answers = 0;

	if (!h || !burst || !in)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	pthread_create(&t, &attr, serve, h);
	for (int i = 0; i < REQUESTS; i++)
		memcpy(burst + i * (sizeof(req) - 1), req, sizeof(req) - 1);
	sa.sin_port = htons(port_of(sq_http_url(h)));
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("connect");
		return 1;
	}
	/* the whole burst, and the answers read as they come, so that the server's sends
	 * keep completing */
	while (answers < REQUESTS) {
		struct pollfd p = { .fd = s, .events = POLLIN | (off < len ? POLLOUT : 0) };

		if (poll(&p, 1, 10000) <= 0)
			break;
		if (p.revents & POLLOUT) {
			ssize_t n = send(s, burst + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				off += (size_t)n;
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			ssize_t n = recv(s, in + have, cap - have - 1, 0);
			char *at;

			if (n <= 0)
				break;
			have += (size_t)n;
			in[have] = '\0';
			/* whole answers, each a 200, in turn; a partial one stays */
			while ((at = strstr(in, "\r\n\r\nok\n"))) {
				size_t used = (size_t)(at - in) + 7;

				if (strncmp(in, ok, sizeof(ok) - 1) != 0) {
					fprintf(stderr, "http_pipeline_test: answer %d is not a 200: %.60s\n", answers + 1, in);
					return 1;
				}
				answers++;
				memmove(in, in + used, have - used + 1);
				have -= used;
			}
		}
	}
	atomic_store(&done, true);
	pthread_join(t, NULL);
	close(s);
	sq_http_close(h);
	if (answers != REQUESTS) {
		fprintf(stderr, "http_pipeline_test: %d answers to %d pipelined requests\n", answers, REQUESTS);
		return 1;
	}
	printf("http_pipeline_test: %d pipelined requests, %d answers of 200, on a 256 KiB stack\n", REQUESTS, answers);
	return 0;
}

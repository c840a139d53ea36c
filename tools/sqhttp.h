// SPDX-License-Identifier: BSD-2-Clause
/* sqhttp.h - a small HTTP/1.1 server for one resource, what an exporter needs to serve
 * /metrics to Prometheus: GET and HEAD of that path (200, in the form the request's
 * Accept prefers), 404 for any other path, 405 for other methods, 400 for what is not a
 * request. Event-driven and non-blocking: one
 * epoll set (sq_http_fd) that the tool's event loop watches, sq_http_service doing
 * whatever is ready and never waiting, so no client, slow or malformed, can hold up the
 * tool or the other clients. Keep-alive and pipelined requests as HTTP/1.1 has them;
 * bounded: requests of at most 8 KiB of headers (431 beyond), no bodies, 64
 * connections (when full, the longest idle one makes room, else the newcomer is closed
 * at once), 10 s to send a request or take a response, 60 s idle between requests. */
#ifndef SQHTTP_H
#define SQHTTP_H

#include <stdio.h>

/* Writes the resource's body into f in the form types[type] (sq_http_open's); 0, or a
 * negative errno (the client gets a 500). */
typedef int (*sq_http_render_fn)(void *ctx, int type, FILE *f);

struct sq_http;

/* The most forms (Content-Types) a resource may be served in. */
#define SQ_HTTP_TYPES 4

/* Listens on addr, "HOST:PORT", ":PORT" (every address) or "[V6]:PORT"; port 0 lets the
 * kernel choose (sq_http_url says which). path is the one resource ("/metrics"), served
 * in one of ntypes forms, types[i] its Content-Type: the one the request's Accept
 * prefers (tools/sqaccept.h), types[0] if it has none or accepts none of them (a client
 * that asks for nothing we have gets the default rather than a 406, as Prometheus's
 * own exporters do). The responses say Vary: Accept when there is more than one form.
 * NULL after printing why. */
struct sq_http *sq_http_open(const char *addr, const char *path, const char *const *types, int ntypes,
			     sq_http_render_fn render, void *ctx);

/* The address listened on, as a URL of the resource: "http://127.0.0.1:9464/metrics". */
const char *sq_http_url(const struct sq_http *h);

/* An fd that is readable when there is work for sq_http_service. */
int sq_http_fd(const struct sq_http *h);

/* Accepts, reads, answers and times out what is ready now; never blocks. Always 0: a
 * client's trouble ends that client's connection, not the server. */
int sq_http_service(void *h);

void sq_http_close(struct sq_http *h);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sqhttp.c - a small non-blocking HTTP/1.1 server for one resource; see sqhttp.h.
 *
 * Every socket is non-blocking and level-triggered in the server's own epoll set; a
 * connection is a small state machine: READ (headers into a fixed buffer), WRITE (the
 * whole response, built before the first byte goes out), DRAIN (after a response that
 * closes: our side shut, what the client still sends read and dropped, so that closing
 * never resets the connection under a response in flight). A timer ticks every second
 * while connections are open and ends those past their deadline. */
#define _GNU_SOURCE
#include "sqhttp.h"

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "sqaccept.h"
#include "sqopts.h"

#define IN_MAX 8192			/* request line and headers */
#define MAX_CONNS 64
#define REQUEST_NS 10000000000ULL	/* to send a whole request, or take a whole response */
#define IDLE_NS 60000000000ULL		/* between two requests of a kept-alive connection */
#define DRAIN_NS 2000000000ULL		/* to close after a response that ends the connection */
#define PIPELINE_MAX 16			/* pipelined requests answered in one turn; more on the next */

enum { TOKEN_LISTEN = 0, TOKEN_TIMER = 1, TOKEN_CONN = 16 };

enum state { FREE, READ, WRITE, DRAIN };

struct conn {
	int fd;
	enum state state;
	bool keep_alive;		/* after this response, read the next request */
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC */
	uint64_t idle_since;		/* waiting for a request with nothing of it yet; else 0 */
	uint64_t progress_ns;		/* when a byte last came in or went out (or it was accepted) */
	char head[384];			/* the response's status line and headers */
	size_t head_len;
	char *out;			/* its body, as the renderer wrote it (not copied) */
	size_t out_len, out_off;	/* out_off counts head, then body */
	size_t in_len;
	char in[IN_MAX];
};

struct sq_http {
	int epfd, lfd, tfd;
	int nconns;
	sq_http_render_fn render;
	void *ctx;
	char path[256], url[128];
	char types[SQ_HTTP_TYPES][128];		/* the forms of the resource (Content-Types) */
	const char *offers[SQ_HTTP_TYPES];
	int ntypes;
	struct conn conns[MAX_CONNS];
};

/* ===================================================================== */
/* Sockets and the epoll set                                             */
/* ===================================================================== */

static int watch(struct sq_http *h, int op, int fd, uint32_t events, uint32_t token)
{
	struct epoll_event ev = { .events = events, .data.u32 = token };

	return epoll_ctl(h->epfd, op, fd, &ev);
}

/* "HOST:PORT", ":PORT" or "[V6]:PORT" into host (NULL: every address) and port. */
static int split_addr(const char *addr, char *host, size_t len, const char **port)
{
	const char *colon = strrchr(addr, ':');
	size_t n;

	if (!colon || !colon[1])
		return -EINVAL;
	*port = colon + 1;
	n = (size_t)(colon - addr);
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	if (n >= len)
		return -EINVAL;
	memcpy(host, addr, n);
	host[n] = 0;
	return 0;
}

/* The bound address as a URL of the resource (the kernel's port, if 0 was asked for). */
static void make_url(struct sq_http *h)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (getsockname(h->lfd, (struct sockaddr *)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
			port = ntohs(a->sin6_port);
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
			port = ntohs(a->sin_port);
		}
	}
	snprintf(h->url, sizeof(h->url), ss.ss_family == AF_INET6 ? "http://[%s]:%d%s" : "http://%s:%d%s", ip,
		 port, h->path);
}

static int listen_on(struct sq_http *h, const char *addr)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *res;
	char host[256];
	const char *port;
	int one = 1, err;

	if (split_addr(addr, host, sizeof(host), &port)) {
		sq_error("--listen %s: give ADDR:PORT (e.g. 127.0.0.1:9464, :9464, [::1]:9464)", addr);
		return -EINVAL;
	}
	err = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (err) {
		sq_error("--listen %s: %s", addr, gai_strerror(err));
		return -EINVAL;
	}
	h->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0 || setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(h->lfd, res->ai_addr, res->ai_addrlen) || listen(h->lfd, 64)) {
		err = -errno;
		sq_error("--listen %s: %s", addr, strerror(errno));
	}
	freeaddrinfo(res);
	return err;
}

/* The timer ticks every second while a connection is open. */
static void arm_timer(struct sq_http *h, bool on)
{
	struct itimerspec its = { { on, 0 }, { on, 0 } };

	timerfd_settime(h->tfd, 0, &its, NULL);
}

struct sq_http *sq_http_open(const char *addr, const char *path, const char *const *types, int ntypes,
			     sq_http_render_fn render, void *ctx)
{
	struct sq_http *h = calloc(1, sizeof(*h));

	if (!h || ntypes < 1 || ntypes > SQ_HTTP_TYPES) {
		sq_error("--listen: %s", h ? "bad content types" : "out of memory");
		free(h);
		return NULL;
	}
	h->ntypes = ntypes;
	for (int i = 0; i < ntypes; i++) {
		snprintf(h->types[i], sizeof(h->types[i]), "%s", types[i]);
		h->offers[i] = h->types[i];
	}
	h->lfd = h->tfd = -1;
	h->render = render;
	h->ctx = ctx;
	snprintf(h->path, sizeof(h->path), "%s", path);
	for (int i = 0; i < MAX_CONNS; i++)
		h->conns[i].fd = -1;
	h->epfd = epoll_create1(EPOLL_CLOEXEC);
	h->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (h->epfd < 0 || h->tfd < 0 || watch(h, EPOLL_CTL_ADD, h->tfd, EPOLLIN, TOKEN_TIMER)) {
		sq_error("--listen: %s", strerror(errno));
		sq_http_close(h);
		return NULL;
	}
	if (listen_on(h, addr) || watch(h, EPOLL_CTL_ADD, h->lfd, EPOLLIN, TOKEN_LISTEN)) {
		sq_http_close(h);
		return NULL;
	}
	make_url(h);
	return h;
}

const char *sq_http_url(const struct sq_http *h)
{
	return h->url;
}

int sq_http_fd(const struct sq_http *h)
{
	return h->epfd;
}

/* ===================================================================== */
/* Connections                                                           */
/* ===================================================================== */

static void conn_close(struct sq_http *h, struct conn *c)
{
	close(c->fd);		/* leaves the epoll set too */
	free(c->out);
	c->out = NULL;
	c->fd = -1;
	c->state = FREE;
	if (--h->nconns == 0)
		arm_timer(h, false);
}

/* Waiting for a request: from now, idle (nothing of it yet) or reading one. */
static void conn_read(struct sq_http *h, struct conn *c, uint64_t now)
{
	c->state = READ;
	c->idle_since = c->in_len ? 0 : now;
	c->deadline_ns = now + (c->in_len ? REQUEST_NS : IDLE_NS);
	watch(h, EPOLL_CTL_MOD, c->fd, EPOLLIN, TOKEN_CONN + (uint32_t)(c - h->conns));
}

/* A free slot; when there is none, the connection idle the longest gives up its own, else
 * the one that has moved no byte for the longest. Never none: clients that each send a
 * byte and stall, or never read, must not lock a scraper out; one that keeps moving bytes
 * is the last to go. */
static struct conn *free_slot(struct sq_http *h)
{
	struct conn *idlest = NULL, *stalest = NULL;

	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &h->conns[i];
		if (c->state == FREE)
			return c;
		if (c->state == READ && c->idle_since && (!idlest || c->idle_since < idlest->idle_since))
			idlest = c;
		if (!stalest || c->progress_ns < stalest->progress_ns)
			stalest = c;
	}
	if (!idlest)
		idlest = stalest;
	conn_close(h, idlest);
	return idlest;
}

static void accept_all(struct sq_http *h, uint64_t now)
{
	for (;;) {
		int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;

		if (fd < 0)
			return;		/* EAGAIN: all taken; anything else: the client's loss */
		c = free_slot(h);
		*c = (struct conn){ .fd = fd, .state = READ, .idle_since = now, .progress_ns = now,
				    .deadline_ns = now + REQUEST_NS };
		if (watch(h, EPOLL_CTL_ADD, fd, EPOLLIN, TOKEN_CONN + (uint32_t)(c - h->conns))) {
			close(fd);
			c->fd = -1;
			c->state = FREE;
			continue;
		}
		if (h->nconns++ == 0)
			arm_timer(h, true);
	}
}

/* ===================================================================== */
/* Requests and responses                                                */
/* ===================================================================== */

struct request {
	int status;			/* 0: fine so far; else the error to answer */
	bool head;
	bool found;			/* the path is the resource */
	bool close;			/* the client wants the connection closed after it */
	char *accept;			/* its Accept headers' values, joined by commas (IN_MAX bytes) */
	size_t accept_len;
};

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

/* Does the comma-separated header value hold token (case-insensitive)? */
static bool has_token(const char *value, const char *token)
{
	size_t n = strlen(token);

	for (const char *s = value; *s;) {
		s += strspn(s, " \t,");
		if (strncasecmp(s, token, n) == 0 && (!s[n] || strchr(" \t,", s[n])))
			return true;
		s += strcspn(s, ",");
	}
	return false;
}

/* The request line: METHOD SP TARGET SP HTTP/1.x. */
static void parse_request_line(struct sq_http *h, char *line, struct request *r, bool *http11)
{
	char *method = strtok(line, " "), *target = strtok(NULL, " "), *version = strtok(NULL, " ");

	if (!method || !target || !version || strtok(NULL, " ") || strncmp(version, "HTTP/", 5)) {
		r->status = 400;
		return;
	}
	if (strcmp(version, "HTTP/1.1") && strcmp(version, "HTTP/1.0")) {
		r->status = 505;
		return;
	}
	*http11 = strcmp(version, "HTTP/1.1") == 0;
	r->close = !*http11;
	if (!strncmp(target, "http://", 7) || !strncmp(target, "https://", 8)) {	/* absolute form */
		char *slash = strchr(strstr(target, "//") + 2, '/');
		target = slash ? slash : "/";
	}
	target[strcspn(target, "?#")] = 0;
	r->found = strcmp(target, h->path) == 0;
	r->head = strcmp(method, "HEAD") == 0;
	if (!r->head && strcmp(method, "GET"))
		r->status = 405;
}

/* Adds an Accept header's value to the request's (RFC 9110: several such headers are one
 * list). They come from a head of at most IN_MAX bytes, so they fit. */
static void add_accept(struct request *r, const char *value)
{
	size_t n = strlen(value);

	if (r->accept_len + n + 2 > IN_MAX)
		return;
	if (r->accept_len)
		r->accept[r->accept_len++] = ',';
	memcpy(r->accept + r->accept_len, value, n + 1);
	r->accept_len += n;
}

/* The request in c->in[0..len) (its header lines NUL-free, ending in an empty line);
 * its Accept values into accept (IN_MAX bytes). */
static void parse(struct sq_http *h, char *text, struct request *r, char *accept)
{
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	bool http11 = false, host = false;

	*r = (struct request){ .accept = accept };
	accept[0] = 0;
	if (!line) {
		r->status = 400;
		return;
	}
	line[strcspn(line, "\r")] = 0;
	parse_request_line(h, line, r, &http11);
	if (r->status == 400 || r->status == 505)
		return;
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *colon, *value;
		line[strcspn(line, "\r")] = 0;
		if (!*line)
			break;
		if (!(colon = strchr(line, ':')) || colon == line || strchr(" \t", line[0])) {
			r->status = 400;	/* not a header, or an obsolete folded line */
			return;
		}
		*colon = 0;
		value = colon + 1 + strspn(colon + 1, " \t");
		if (!strcasecmp(line, "host"))
			host = true;
		else if (!strcasecmp(line, "accept"))
			add_accept(r, value);
		else if (!strcasecmp(line, "connection"))
			r->close = has_token(value, "close") || (!http11 && !has_token(value, "keep-alive"));
		else if (!strcasecmp(line, "transfer-encoding") ||
			 (!strcasecmp(line, "content-length") && strspn(value, "0") != strlen(value)))
			r->status = 400;	/* a body: none is expected, and it would be read as a request */
	}
	if (http11 && !host)
		r->status = 400;	/* RFC 9112: a 1.1 request names its host */
}

/* The response to r: its headers in c->head, its body (but for HEAD) in c->out, the
 * renderer's own buffer: a large scrape is held once, not copied behind its headers. */
static void respond(struct sq_http *h, struct conn *c, struct request *r, uint64_t now)
{
	char *body = NULL, date[64];
	size_t body_len = 0;
	time_t t = time(NULL);
	struct tm tm;
	FILE *f;
	int len, status = r->status ? r->status : r->found ? 200 : 404;
	int type = r->accept && r->accept_len ? sq_accept_choose(r->accept, h->offers, h->ntypes) : 0;

	if (type < 0)
		type = 0;	/* nothing it accepts: the default (sqhttp.h) */
	if (status == 200 && (f = open_memstream(&body, &body_len))) {
		if (h->render(h->ctx, type, f) || ferror(f))
			status = 500;
		fclose(f);
	}
	if (status != 200) {
		free(body);
		len = asprintf(&body, "%d %s\n", status, reason(status));
		if (len < 0)
			body = NULL;
		body_len = len < 0 ? 0 : (size_t)len;
	}
	c->keep_alive = !r->close && status != 400 && status != 431 && status != 500 && status != 505;
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	free(c->out);
	len = snprintf(c->head, sizeof(c->head), "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Type: %s\r\n"
		       "Content-Length: %zu\r\n%s%sConnection: %s\r\n\r\n", status, reason(status), date,
		       status == 200 ? h->types[type] : "text/plain; charset=utf-8", body_len,
		       status == 405 ? "Allow: GET, HEAD\r\n" : "", h->ntypes > 1 ? "Vary: Accept\r\n" : "",
		       c->keep_alive ? "keep-alive" : "close");
	c->head_len = len > 0 && (size_t)len < sizeof(c->head) ? (size_t)len : 0;
	if (!c->head_len || r->head) {	/* no head (cannot happen: ctype is bounded) or HEAD */
		free(body);
		body = NULL;
		body_len = 0;
	}
	c->out = body;
	c->out_len = body_len;
	c->out_off = 0;
	c->state = WRITE;
	c->deadline_ns = now + REQUEST_NS;
}

static void on_writable(struct sq_http *h, struct conn *c, uint64_t now);

/* A whole request in c->in? Then make its response (what follows it stays, for the
 * next) and answer true. */
static bool try_request(struct sq_http *h, struct conn *c, uint64_t now)
{
	struct request r;
	char text[IN_MAX + 1], accept[IN_MAX];	/* the request's head, parsed in place; its Accept */
	char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4), *lf = memmem(c->in, c->in_len, "\n\n", 2);
	size_t used;

	if (lf && (!end || lf < end)) {
		end = lf;
		used = (size_t)(lf - c->in) + 2;
	} else {
		used = end ? (size_t)(end - c->in) + 4 : 0;
	}
	if (!end && c->in_len < IN_MAX)
		return false;	/* not all there yet */
	if (!end || memchr(c->in, 0, used)) {
		r = (struct request){ .status = end ? 400 : 431, .close = true };
		used = c->in_len;
	} else {
		memcpy(text, c->in, used);
		text[used] = 0;
		parse(h, text, &r, accept);
	}
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	respond(h, c, &r, now);
	return true;
}

/* Answers the requests in c->in, one after the other (a loop, not a recursion: each
 * level held a request's text), at most PIPELINE_MAX in one turn so that one client's
 * pipeline cannot hold the loop: with more left, the connection also waits for
 * EPOLLOUT, which is ready at once, and on_readable goes on from there. */
static bool answer(struct sq_http *h, struct conn *c, uint64_t now)
{
	for (int k = 0; k < PIPELINE_MAX; k++) {
		if (!try_request(h, c, now))
			return false;
		on_writable(h, c, now);
		if (c->state != READ || !c->in_len)
			return false;	/* waiting to send, draining, closed, or nothing left */
	}
	watch(h, EPOLL_CTL_MOD, c->fd, EPOLLIN | EPOLLOUT, TOKEN_CONN + (uint32_t)(c - h->conns));
	return true;
}

static void on_readable(struct sq_http *h, struct conn *c, uint64_t now)
{
	char scratch[4096];
	ssize_t n;

	if (c->state == DRAIN) {	/* what the client sends after our last word */
		while ((n = recv(c->fd, scratch, sizeof(scratch), 0)) > 0)
			;
		if (n == 0 || errno != EAGAIN)
			conn_close(h, c);
		return;
	}
	/* requests PIPELINE_MAX left for this turn first: the client may have closed its
	 * side after sending them all */
	if (c->in_len && (answer(h, c, now) || c->state != READ))
		return;
	n = recv(c->fd, c->in + c->in_len, IN_MAX - c->in_len, 0);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		conn_close(h, c);
		return;
	}
	if (n < 0)
		return;
	c->progress_ns = now;
	if (c->idle_since) {		/* a request begins: it has REQUEST_NS to arrive */
		c->idle_since = 0;
		c->deadline_ns = now + REQUEST_NS;
	}
	c->in_len += (size_t)n;
	answer(h, c, now);
}

/* Sends what it can of the response; once it has all gone, the next request, or the
 * end of the connection. */
static void on_writable(struct sq_http *h, struct conn *c, uint64_t now)
{
	uint32_t token = TOKEN_CONN + (uint32_t)(c - h->conns);

	if (!c->head_len) {
		conn_close(h, c);
		return;
	}
	while (c->out_off < c->head_len + c->out_len) {
		struct iovec iov[2];
		struct msghdr msg = { .msg_iov = iov };
		ssize_t n;

		if (c->out_off < c->head_len)
			iov[msg.msg_iovlen++] = (struct iovec){ c->head + c->out_off, c->head_len - c->out_off };
		if (c->out_len)
			iov[msg.msg_iovlen++] = (struct iovec){
				c->out + (c->out_off > c->head_len ? c->out_off - c->head_len : 0),
				c->out_len - (c->out_off > c->head_len ? c->out_off - c->head_len : 0) };
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN) {
			watch(h, EPOLL_CTL_MOD, c->fd, EPOLLOUT, token);
			return;
		}
		if (n <= 0 && errno != EINTR) {
			conn_close(h, c);
			return;
		}
		if (n > 0) {
			c->out_off += (size_t)n;
			c->progress_ns = now;
		}
	}
	free(c->out);
	c->out = NULL;
	if (!c->keep_alive) {
		shutdown(c->fd, SHUT_WR);
		c->state = DRAIN;
		c->deadline_ns = now + DRAIN_NS;
		watch(h, EPOLL_CTL_MOD, c->fd, EPOLLIN, token);
		return;
	}
	conn_read(h, c, now);		/* a pipelined request waiting in c->in: answer() goes on */
}

static void expire(struct sq_http *h, uint64_t now)
{
	uint64_t ticks;

	if (read(h->tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return;
	for (int i = 0; i < MAX_CONNS; i++)
		if (h->conns[i].state != FREE && h->conns[i].deadline_ns <= now)
			conn_close(h, &h->conns[i]);
}

int sq_http_service(void *ctx)
{
	struct sq_http *h = ctx;
	struct epoll_event evs[MAX_CONNS + 2];
	int n = epoll_wait(h->epfd, evs, MAX_CONNS + 2, 0);
	uint64_t now = sq_mono_ns();

	for (int i = 0; i < n; i++) {
		uint32_t t = evs[i].data.u32;
		struct conn *c;
		if (t == TOKEN_LISTEN) {
			accept_all(h, now);
			continue;
		}
		if (t == TOKEN_TIMER) {
			expire(h, now);
			continue;
		}
		c = &h->conns[t - TOKEN_CONN];
		if (c->state == FREE)
			continue;	/* closed by an earlier event of this round */
		if (evs[i].events & (EPOLLERR | EPOLLHUP) && !(evs[i].events & EPOLLIN))
			conn_close(h, c);
		else if (c->state == WRITE)
			on_writable(h, c, now);
		else
			on_readable(h, c, now);
	}
	return 0;
}

void sq_http_close(struct sq_http *h)
{
	if (!h)
		return;
	for (int i = 0; i < MAX_CONNS; i++)
		if (h->conns[i].state != FREE)
			conn_close(h, &h->conns[i]);
	if (h->lfd >= 0)
		close(h->lfd);
	if (h->tfd >= 0)
		close(h->tfd);
	if (h->epfd >= 0)
		close(h->epfd);
	free(h);
}

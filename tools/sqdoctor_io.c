// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_io.c - the I/O and request rules: a syscall-heavy method, I/O wait by method,
 * slow routes. Their evidence: sqio's rows (calls and waits by method, operation and kind
 * of descriptor) and sqreq's routes (percentiles and where the time went). */
#include "sqdoctor_rule.h"

#include <stdio.h>
#include <string.h>

static const struct sq_jv *io_rows(const struct sq_evidence *e)
{
	return sq_jv_get(sqd_last(e, SQD_IO, "io"), "rows");
}

static const struct sq_jv *routes(const struct sq_evidence *e)
{
	return e->src[SQD_REQ].ok ? sq_jv_get(sqd_last(e, SQD_REQ, "requests"), "routes") : NULL;
}

/* The requests served in the recording (0: none). */
static double requests(const struct sq_evidence *e)
{
	double n = 0;

	for (const struct sq_jv *r = sq_jv_first(routes(e)); r; r = r->next)
		n += sqd_num(r, "count");
	return n;
}

/* Many small calls where a buffer would make few: one method's calls on a file (or a
 * pipe) per request where there are requests (a request that reads its one small file
 * makes two calls, the data and the end), else per second; scaled down as each call
 * moves more bytes. The calls on TCP sockets follow the requests (a read and a write
 * each): the I/O wait and slow route rules judge those. */
void sqd_rule_syscalls(const struct sq_evidence *e, struct sq_finding *f)
{
	const struct sq_jv *top = NULL;
	double reqs = requests(e), rate = 0, per = 0;
	int score = -1;
	char target[256], how[64];

	if (!sqd_need(e, SQD_IO, f))
		return;
	for (const struct sq_jv *r = sq_jv_first(io_rows(e)); r; r = r->next) {
		const char *kind = sq_jv_str(r, "kind");
		double calls = sqd_num(r, "calls"), bytes = calls > 0 ? sqd_num(r, "bytes") / calls : 0;
		double s = reqs > 0 ? calls / reqs : e->seconds > 0 ? calls / e->seconds : 0;
		int sc = (reqs > 0 ? sqd_ramp(s, 4, 20) : sqd_ramp(s, 2000, 20000)) *
			 (100 - sqd_ramp(bytes, 512, 8192)) / 100;
		if (kind && !strcmp(kind, "tcp"))
			continue;
		if (sc > score || (sc == score && s > rate)) {
			top = r;
			score = sc;
			rate = s;
			per = bytes;
		}
	}
	sqd_command(f, "sqio -p %d", e->pid);
	if (!top) {
		sqd_found(f, 0, NULL, "no I/O call on a file or a pipe");
		return;
	}
	snprintf(target, sizeof(target), "%s", sqd_name(top, "method"));
	snprintf(how, sizeof(how), "%s", reqs > 0 ? "a request" : "a second");
	sqd_evidence(f, "{\"%s\":%.1f,\"bytes_per_call\":%.1f}", reqs > 0 ? "calls_per_request" : "calls_per_s",
		     rate, per);
	sqd_found(f, score, target, "%s makes %.*f %s calls %s on a %s, %.0f bytes each", target, reqs > 0 ? 1 : 0,
		  rate, sqd_name(top, "op"), how, sqd_name(top, "kind"), per);
}

/* Waiting for I/O. Inside requests it is the requests' time (sqreq's breakdown). A
 * server's processes wait between requests for the next one: that is idle, not slow,
 * so where there are requests only their own waits count. Without requests, the method
 * that waits the largest share of the recording, accepts left out (a listener waits
 * for clients by design). */
void sqd_rule_io_wait(const struct sq_evidence *e, struct sq_finding *f)
{
	const struct sq_jv *top = NULL, *route = NULL;
	double window = (double)(e->end_ns - e->begin_ns), share = 0, route_share = 0;
	char target[256], method[300];

	if (!sqd_need(e, SQD_IO, f))
		return;
	for (const struct sq_jv *r = sq_jv_first(io_rows(e)); r; r = r->next) {
		const char *op = sq_jv_str(r, "op");
		if (op && !strcmp(op, "accept"))
			continue;
		if (!top || sqd_num(r, "wait_ns") > sqd_num(top, "wait_ns"))
			top = r;
	}
	for (const struct sq_jv *r = sq_jv_first(routes(e)); r; r = r->next) {
		double mean = sqd_num(r, "mean_ms"), io = sqd_num2(r, "breakdown", "io_ms");
		double s = mean > 0 ? io / mean : 0;
		if (sqd_num(r, "count") >= 5 && (!route || s > route_share)) {
			route = r;
			route_share = s;
		}
	}
	sqd_command(f, "sqio -p %d", e->pid);
	method[0] = 0;
	if (top && sqd_num(top, "wait_ns") > 0)
		snprintf(method, sizeof(method), "%s", sqd_name(top, "method"));
	if (sq_jv_first(routes(e))) {
		sqd_evidence(f, "{\"route_io_share\":%.3f}", route_share);
		if (!route) {
			sqd_found(f, 0, NULL, "no route served five requests");
			return;
		}
		snprintf(target, sizeof(target), "%s", sqd_name(route, "route"));
		sqd_found(f, sqd_ramp(route_share, 0.3, 0.8), target,
			  "%s spends %.0f%% of its time waiting for I/O (%.2f ms a request)%s%s", target,
			  100 * route_share, sqd_num2(route, "breakdown", "io_ms"), method[0] ? "; the most waiting is in " : "",
			  method);
		return;
	}
	if (!top) {
		sqd_found(f, 0, NULL, "no process waited for I/O");
		return;
	}
	share = window > 0 ? sqd_num(top, "wait_ns") / window : 0;
	sqd_evidence(f, "{\"wait_share\":%.3f,\"waits\":%.0f}", share, sqd_num(top, "waits"));
	sqd_found(f, sqd_ramp(share, 0.3, 0.8), method,
		  "%s waits %.0f%% of the time for %s on a %s (%.0f waits, %.1f ms each)", method[0] ? method : "?",
		  100 * share, sqd_name(top, "op"), sqd_name(top, "kind"), sqd_num(top, "waits"),
		  sqd_num(top, "waits") > 0 ? sqd_num(top, "wait_ns") / sqd_num(top, "waits") / 1e6 : 0);
}

/* The biggest non-CPU part of a route's mean time, for the finding. */
static const char *where(const struct sq_jv *route, double *ms)
{
	static const char *const parts[] = { "runq", "sem", "delay", "io", "gc" };
	static const char *const shown[] = { "the run queue", "a Semaphore", "a Delay", "I/O", "GC" };
	const struct sq_jv *b = sq_jv_get(route, "breakdown");
	const char *best = "its CPU";
	char key[16];

	*ms = sqd_num(b, "cpu_ms");
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		snprintf(key, sizeof(key), "%s_ms", parts[i]);
		if (sqd_num(b, key) > *ms) {
			*ms = sqd_num(b, key);
			best = shown[i];
		}
	}
	return best;
}

/* A route whose tail is far from its own median: the same work, now and then much
 * slower, which a mean hides. Both the ratio and the tail's own length must be large:
 * a tail of a few milliseconds is what the host's own scheduling gives a busy server
 * (the slowest requests of examples/http under make load on 2 cores were all "CPU",
 * the VM's thread waiting for a core), so the tail counts from 10 ms, fully at 30 ms. */
void sqd_rule_slow_route(const struct sq_evidence *e, struct sq_finding *f)
{
	const struct sq_jv *top = NULL;
	int score = -1;
	double ms;
	char target[256];

	if (!sqd_need(e, SQD_REQ, f))
		return;
	for (const struct sq_jv *r = sq_jv_first(routes(e)); r; r = r->next) {
		double p50 = sqd_num(r, "p50_ms"), p99 = sqd_num(r, "p99_ms");
		int sc = sqd_num(r, "count") >= 20 && p50 > 0 ?
			 sqd_ramp(p99 / p50, 3, 10) * sqd_ramp(p99, 10, 30) / 100 : 0;
		if (sc > score) {
			score = sc;
			top = r;
		}
	}
	sqd_command(f, "sqreq -p %d --slowest 5", e->pid);
	if (!top || sqd_num(top, "count") < 20) {
		sqd_found(f, 0, NULL, "no route served twenty requests");
		return;
	}
	snprintf(target, sizeof(target), "%s", sqd_name(top, "route"));
	sqd_evidence(f, "{\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"count\":%.0f}", sqd_num(top, "p50_ms"),
		     sqd_num(top, "p99_ms"), sqd_num(top, "count"));
	sqd_found(f, score, target, "%s: p99 %.1f ms is %.0f times its p50 (%.2f ms) over %.0f requests; "
		  "its mean goes mostly to %s", target, sqd_num(top, "p99_ms"),
		  sqd_num(top, "p99_ms") / sqd_num(top, "p50_ms"), sqd_num(top, "p50_ms"), sqd_num(top, "count"),
		  where(top, &ms));
}

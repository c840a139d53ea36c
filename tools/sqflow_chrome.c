// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_chrome.c - Chrome trace-event JSON from sqflow's slices (sqflow_chrome.h): each
 * call is written whole when it ends, as a complete event with its start and duration. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>

#include "sqflow_chrome.h"
#include "sqflow_merge.h"
#include "sqoutput.h"

/* The most traced requests kept for --merge's links (16 MiB of them): past it, requests
 * are still written, only not linked. */
#define MAX_LINKED_REQUESTS (1u << 18)

struct chrome {
	FILE *out;
	__u64 base_ns;
	bool first;
	const char *merge;		/* the browser trace to merge, or NULL */
	int *merge_failed;
	struct sqflow_merge_request *reqs;	/* the requests with a trace context, for merge */
	size_t nreq, capreq;
};

static void write_track_names(void *ctx, const struct sqflow_track *t, bool new_pid)
{
	struct chrome *c = ctx;
	char name[SQFLOW_TRACK_NAME_LEN];

	if (new_pid)
		fprintf(c->out, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":\"sqvm\"}}",
			c->first ? "" : ",\n", t->pid);
	c->first = false;
	sqflow_track_name(t, name, sizeof(name));
	fprintf(c->out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":",
		t->pid, t->out_tid);
	sq_json_str(c->out, name);
	fprintf(c->out, "}}");
}

/* Microseconds from the trace's start, from integers (so that a slice that ends within
 * another is printed so). */
static void write_us(FILE *out, __u64 ns)
{
	fprintf(out, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
}

static void write_slice(struct chrome *c, const struct sqflow_track *t, const struct sqflow_call *o,
			__u64 end_ns, const char *note)
{
	fprintf(c->out, ",\n{\"name\":");
	sq_json_str(c->out, o->name ? o->name : "?");
	fprintf(c->out, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", o->block ? "block" : "method");
	write_us(c->out, o->ts_ns - c->base_ns);
	fprintf(c->out, ",\"dur\":");
	write_us(c->out, end_ns - o->ts_ns);
	fprintf(c->out, ",\"pid\":%u,\"tid\":%u", t->pid, t->out_tid);
	if (note)
		fprintf(c->out, ",\"args\":{\"%s\":true}", note);
	fprintf(c->out, "}");
}

static void end_slice(void *ctx, const struct sqflow_track *t, const struct sqflow_call *o, __u64 end_ns,
		      bool unfinished)
{
	write_slice(ctx, t, o, end_ns, unfinished ? "unfinished" : NULL);
}

static bool before_slice(void *ctx, const struct sqflow_track *t, const struct sqflow_call *o, __u64 end_ns)
{
	write_slice(ctx, t, o, end_ns, "began_before_trace");
	return true;
}

static void keep_request(struct chrome *c, const struct sqflow_track *t, const struct sqflow_request *r);

/* A request: its route, id and W3C trace context (lower-case hex, as in traceparent;
 * none without one) as args, which --merge reads back to link it to the browser's fetch. */
static void write_request(void *ctx, const struct sqflow_track *t, const struct sqflow_request *r, const char *route)
{
	struct chrome *c = ctx;

	fprintf(c->out, ",\n{\"name\":");
	sq_json_str(c->out, route);
	fprintf(c->out, ",\"cat\":\"request\",\"ph\":\"X\",\"ts\":");
	write_us(c->out, r->begin_ns - c->base_ns);
	fprintf(c->out, ",\"dur\":");
	write_us(c->out, r->end_ns - r->begin_ns);
	fprintf(c->out, ",\"pid\":%u,\"tid\":%u,\"args\":{\"route\":", t->pid, t->out_tid);
	sq_json_str(c->out, route);
	fprintf(c->out, ",\"request_id\":%llu,\"status\":%d", (unsigned long long)r->id, r->status);
	if (r->span)
		fprintf(c->out, ",\"trace_id\":\"%016llx%016llx\",\"span_id\":\"%016llx\",\"parent_span_id\":\"%016llx\"",
			(unsigned long long)r->trace_hi, (unsigned long long)r->trace_lo,
			(unsigned long long)r->span, (unsigned long long)r->parent);
	fprintf(c->out, "}}");
	if (c->merge && r->span)
		keep_request(c, t, r);
}

static void keep_request(struct chrome *c, const struct sqflow_track *t, const struct sqflow_request *r)
{
	if (c->nreq == c->capreq) {
		size_t cap = c->capreq ? c->capreq * 2 : 256;
		struct sqflow_merge_request *more;

		if (cap > MAX_LINKED_REQUESTS || !(more = reallocarray(c->reqs, cap, sizeof(*more))))
			return;
		c->reqs = more;
		c->capreq = cap;
	}
	c->reqs[c->nreq++] = (struct sqflow_merge_request){
		.trace_hi = r->trace_hi, .trace_lo = r->trace_lo, .parent = r->parent, .span = r->span,
		.begin_ns = r->begin_ns, .end_ns = r->end_ns, .pid = t->pid, .tid = t->out_tid,
	};
}

/* The browser's trace after the server's slices, and what came of it on stderr (stdout
 * is the trace). */
static void merge(struct chrome *c)
{
	struct sqflow_merge_stats st;
	char err[512];

	if (sqflow_merge_browser(c->out, c->merge, c->reqs, c->nreq, &st, err, sizeof(err))) {
		fprintf(stderr, "sqflow: --merge: %s; the server's trace is written alone\n", err);
		if (c->merge_failed)
			*c->merge_failed = 1;
		return;
	}
	fprintf(stderr, "sqflow: merged %zu events of %s: %zu fetches, %zu linked to their requests, "
		"%zu begun within their fetch (%zu ended after it)", st.events, sq_printable(c->merge), st.fetches,
		st.linked, st.inside, st.ended_after);
	if (st.unpaired)
		fprintf(stderr, ", %zu fetch measures without their begin or end", st.unpaired);
	fputc('\n', stderr);
	if (st.linked > st.inside)
		fprintf(stderr, "sqflow: %zu requests began outside their fetch: were the browser's and the server's "
			"clocks the same (CLOCK_MONOTONIC on one machine)?\n", st.linked - st.inside);
}

static void finish(void *ctx, __u64 events, __u64 lost, __u64 left_out)
{
	struct chrome *c = ctx;

	if (c->merge)
		merge(c);
	/* ts 0 is CLOCK_MONOTONIC's ts_zero_ns: 0 with --merge, as Chromium's TimeTicks */
	fprintf(c->out, "\n],\"otherData\":{\"tool\":\"sqflow\",\"events\":\"%llu\",\"lost_events\":\"%llu\","
		"\"left_out_events\":\"%llu\",\"clock\":\"CLOCK_MONOTONIC\",\"ts_zero_ns\":\"%llu\"}}\n",
		(unsigned long long)events, (unsigned long long)lost, (unsigned long long)left_out,
		(unsigned long long)c->base_ns);
	free(c->reqs);
	free(c);
}

struct sqflow_sink sqflow_chrome_sink(FILE *out, __u64 base_ns, const char *merge, int *merge_failed)
{
	struct chrome *c = calloc(1, sizeof(*c));
	struct sqflow_sink sink = {
		.ctx = c, .track = write_track_names, .end = end_slice, .before = before_slice, .request = write_request,
		.finish = finish,
	};

	if (!c)
		return sink;
	c->out = out;
	c->base_ns = base_ns;
	c->first = true;
	c->merge = merge;
	c->merge_failed = merge_failed;
	fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	return sink;
}

// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_trace_json.c - a capture as a Trace Event Format file (sqslow_trace.h): slices
 * as complete events ("X"), instants thread-scoped ("i"), flows as a start ("s") and an
 * end bound to the enclosing slice ("f", "bp":"e"), tracks as the VM's "threads" named
 * by metadata events; times in µs from the trace's 0, with ns kept as decimals. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sqoutput.h"
#include "sqslow_trace.h"

struct json {
	FILE *out;
	const struct sqslow_names *names;
	__u64 base;
	bool any;		/* an event written: the next is after a comma */
};

static void write_us(FILE *out, __u64 ns)
{
	fprintf(out, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
}

static void next(struct json *j)
{
	fprintf(j->out, "%s\n", j->any ? "," : "");
	j->any = true;
}

static void begin(void *ctx, __u64 base_ns)
{
	struct json *j = ctx;

	j->base = base_ns;
	fprintf(j->out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
}

static void process(void *ctx, __u32 pid)
{
	struct json *j = ctx;

	next(j);
	fprintf(j->out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":\"sqvm %u\"}}", pid, pid);
}

static void track(void *ctx, __u32 pid, __u64 tid, const char *name)
{
	struct json *j = ctx;

	next(j);
	fprintf(j->out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%llu,\"args\":{\"name\":", pid,
		(unsigned long long)tid);
	sq_json_str(j->out, name);
	fprintf(j->out, "}}");
}

/* The head of an event: {"name":NAME,"cat":CAT,"ph":PH,"ts":..,"pid":..,"tid":.. */
static void head(struct json *j, const char *name, const char *cat, const char *ph, __u64 ts, __u32 pid, __u64 tid)
{
	next(j);
	fprintf(j->out, "{\"name\":");
	sq_json_str(j->out, name);
	fprintf(j->out, ",\"cat\":\"%s\",\"ph\":\"%s\",\"ts\":", cat, ph);
	write_us(j->out, ts - j->base);
	fprintf(j->out, ",\"pid\":%u,\"tid\":%llu", pid, (unsigned long long)tid);
}

static void args(struct json *j, const struct sqslow_arg *a, int n)
{
	if (!n)
		return;
	fprintf(j->out, ",\"args\":{");
	for (int i = 0; i < n; i++) {
		fprintf(j->out, "%s\"%s\":", i ? "," : "", a[i].key);
		switch (a[i].type) {
		case SQSLOW_ARG_STR:
			sq_json_str(j->out, a[i].s);
			break;
		case SQSLOW_ARG_INT:
			fprintf(j->out, "%lld", a[i].i);
			break;
		case SQSLOW_ARG_UINT:
			fprintf(j->out, "%llu", a[i].u);
			break;
		case SQSLOW_ARG_MS:
			fprintf(j->out, "%.3f", a[i].ms);
			break;
		case SQSLOW_ARG_TRUE:
			fprintf(j->out, "true");
			break;
		case SQSLOW_ARG_STACK:	/* outermost first */
			fputc('[', j->out);
			for (__u32 k = a[i].n; k-- > 0;) {
				sq_json_str(j->out, j->names->method(j->names->ctx, a[i].pid, a[i].stack[k]));
				if (k)
					fputc(',', j->out);
			}
			fputc(']', j->out);
			break;
		}
	}
	fputc('}', j->out);
}

static void slice(void *ctx, __u32 pid, __u64 tid, const char *name, const char *cat, __u64 begin_ns, __u64 end_ns,
		  const struct sqslow_arg *a, int n)
{
	struct json *j = ctx;

	head(j, name, cat, "X", begin_ns, pid, tid);
	fprintf(j->out, ",\"dur\":");
	write_us(j->out, end_ns - begin_ns);
	args(j, a, n);
	fputc('}', j->out);
}

static void instant(void *ctx, __u32 pid, __u64 tid, const char *name, const char *cat, __u64 ts_ns,
		    const struct sqslow_arg *a, int n)
{
	struct json *j = ctx;

	head(j, name, cat, "i", ts_ns, pid, tid);
	fprintf(j->out, ",\"s\":\"t\"");
	args(j, a, n);
	fputc('}', j->out);
}

static void flow(void *ctx, __u32 pid, __u64 from_tid, __u64 to_tid, __u64 ts_ns, __u64 id)
{
	struct json *j = ctx;

	head(j, "signal", "wakeup", "s", ts_ns, pid, from_tid);
	fprintf(j->out, ",\"id\":%llu}", (unsigned long long)id);
	head(j, "signal", "wakeup", "f", ts_ns, pid, to_tid);
	fprintf(j->out, ",\"bp\":\"e\",\"id\":%llu}", (unsigned long long)id);
}

static bool end(void *ctx, const struct sqslow_trace_end *e)
{
	struct json *j = ctx;
	FILE *out = j->out;

	free(j);
	if (!e)
		return false;
	fprintf(out, "\n],\"otherData\":{\"tool\":\"sqslow\",\"trigger\":\"%s\",\"pid\":\"%u\"", e->c->trigger, e->c->pid);
	if (e->c->req)
		fprintf(out, ",\"request_id\":\"%llu\"", (unsigned long long)e->c->req->id);
	if (e->c->summary) {
		fprintf(out, ",\"summary\":");
		sq_json_str(out, e->c->summary);
	}
	/* how far back the window goes, and whether it was ever cut (before the tool has been
	 * attached W, it holds all there is) */
	fprintf(out, ",\"window_ms\":\"%.3f\",\"window_begin_ms_before_end\":\"%.3f\",\"attached_ms_before_end\":\"%.3f\","
		"\"window_dropped\":\"%llu\",\"window_cut_for_bytes\":\"%llu\",\"clamped_slices\":\"%llu\",\"events\":\"%ld\"}}\n",
		e->c->window_ns / 1e6, (e->end_ns - e->base_ns) / 1e6, (e->end_ns - e->c->since_ns) / 1e6,
		(unsigned long long)e->win->dropped, (unsigned long long)e->win->cut_for_bytes,
		(unsigned long long)e->clamped, e->events);
	return true;
}

struct sqslow_trace_out sqslow_trace_json(FILE *out, const struct sqslow_names *names)
{
	struct json *j = calloc(1, sizeof(*j));

	if (j)
		*j = (struct json){ .out = out, .names = names };
	return (struct sqslow_trace_out){ .ctx = j, .begin = begin, .process = process, .track = track, .slice = slice,
					  .instant = instant, .flow = flow, .end = end };
}

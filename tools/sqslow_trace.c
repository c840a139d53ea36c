// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_trace.c - a capture as a Trace Event Format file (sqslow_trace.h): the window
 * replayed (sqslow_replay.c), each thing it finds written as it is found. Tracks (a
 * "thread" each, of the VM's "process"): 1 the collections; for green process ID,
 * 4 ID its states, 4 ID + 1 its requests, 4 ID + 2 its I/O calls. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sqoutput.h"
#include "sqslow_trace.h"

const char *const sqslow_state_names[SQ_GREEN_NSTATES] = { "unknown", "running", "ready", "semaphore", "delay",
							    "io", "gc" };

static const char *const io_ops[] = { "read", "write", "accept", "connect", "open", "close" };
static const char *const io_kinds[] = { "file", "tcp", "other" };

#define TRACK_GC 1
#define TRACK_STATES 0
#define TRACK_REQUESTS 1
#define TRACK_IO 2

struct writer {
	FILE *out;
	const struct sqslow_capture *c;
	const struct sqslow_names *names;
	__u64 base;		/* ts 0 */
	long events;
	__u64 flows;
	/* the processes seen, named at the end */
	struct seen {
		__u32 pid;
		__u64 id;
		unsigned tracks;	/* bit per TRACK_* */
		__u64 states_end;	/* where its last state slice ended */
	} *seen;
	size_t nseen, capseen;
	__u64 clamped;		/* state slices that began before the last one ended */
	bool gc_track, oom;
};

static void write_us(FILE *out, __u64 ns)
{
	fprintf(out, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
}

static __u64 rel(const struct writer *w, __u64 ts)
{
	return ts > w->base ? ts - w->base : 0;
}

static __u64 tid_of(__u64 id, int track)
{
	return id * 4 + track;
}

/* Remembers that process id has a track (named at the end); its entry (NULL: out of
 * memory). */
static struct seen *seen(struct writer *w, __u32 pid, __u64 id, int track)
{
	for (size_t i = w->nseen; i-- > 0;)
		if (w->seen[i].pid == pid && w->seen[i].id == id) {
			w->seen[i].tracks |= 1u << track;
			return &w->seen[i];
		}
	if (w->nseen == w->capseen) {
		size_t cap = w->capseen ? w->capseen * 2 : 64;
		struct seen *s = realloc(w->seen, cap * sizeof(*s));
		if (!s) {
			w->oom = true;
			return NULL;
		}
		w->seen = s;
		w->capseen = cap;
	}
	w->seen[w->nseen] = (struct seen){ .pid = pid, .id = id, .tracks = 1u << track };
	return &w->seen[w->nseen++];
}

/* The head of an event: {"name":NAME,"cat":CAT,"ph":PH,"ts":..,"pid":..,"tid":.. */
static void head(struct writer *w, const char *name, const char *cat, const char *ph, __u64 ts, __u32 pid,
		 __u64 tid)
{
	fprintf(w->out, "%s\n{\"name\":", w->events ? "," : "");
	sq_json_str(w->out, name);
	fprintf(w->out, ",\"cat\":\"%s\",\"ph\":\"%s\",\"ts\":", cat, ph);
	write_us(w->out, rel(w, ts));
	fprintf(w->out, ",\"pid\":%u,\"tid\":%llu", pid, (unsigned long long)tid);
	w->events++;
}

/* A slice's duration from its begin as written: a begin before the trace's time 0 (a
 * state the replay dates from a request's begin, older than the window) is written as
 * 0, and the slice as what lies after it. */
static void dur(struct writer *w, __u64 begin, __u64 end)
{
	if (begin < w->base)
		begin = w->base;
	fprintf(w->out, ",\"dur\":");
	write_us(w->out, end > begin ? end - begin : 0);
}

static void arg_str(struct writer *w, const char *key, const char *val, bool first)
{
	fprintf(w->out, "%s\"%s\":", first ? "" : ",", key);
	sq_json_str(w->out, val);
}

static void arg_process(struct writer *w, const char *key, __u32 pid, __u64 id)
{
	char buf[160];

	snprintf(buf, sizeof(buf), "%s (%llu)", w->names->process(w->names->ctx, pid, id), (unsigned long long)id);
	arg_str(w, key, buf, false);
}

static void on_slice(void *ctx, __u32 pid, __u64 process, __u32 state, __u64 begin, __u64 end,
		     const struct sqslow_wait *wt)
{
	struct writer *w = ctx;
	bool wait = state == SQ_GREEN_SEMAPHORE || state == SQ_GREEN_DELAY || state == SQ_GREEN_IO;
	struct seen *p = seen(w, pid, process, TRACK_STATES);

	/* A process's states follow one another: one that the records place before the end
	 * of the last (the replay's clock of a process can begin before the window, at a
	 * request's begin) starts where that one ended, so that the track stays balanced. */
	if (p && begin < p->states_end) {
		w->clamped++;
		begin = p->states_end;
	}
	if (p && end > p->states_end)
		p->states_end = end;
	if (end <= begin && p)
		return;
	head(w, sqslow_state_names[state], "state", "X", begin, pid, tid_of(process, TRACK_STATES));
	dur(w, begin, end);
	if (wait) {
		fprintf(w->out, ",\"args\":{");
		arg_str(w, "method", wt->method ? w->names->method(w->names->ctx, pid, wt->method) : "?", true);
		if (state == SQ_GREEN_SEMAPHORE) {
			fprintf(w->out, ",\"semaphore\":%llu", (unsigned long long)wt->semaphore);
			if (wt->holder)
				arg_process(w, "holder", pid, wt->holder);
			if (wt->waker)
				arg_process(w, "woken_by", pid, wt->waker);
		} else if (state == SQ_GREEN_IO) {
			fprintf(w->out, ",\"fd\":%lld", (long long)wt->fd);
			arg_str(w, "op", wt->op < 4 ? io_ops[wt->op] : "?", false);
		}
		fprintf(w->out, "}");
	}
	fprintf(w->out, "}");
}

/* A flow arrow: from the waker's track at ts to the waiter's, bound to the slice that
 * begins there (its ready slice). */
static void on_flow(void *ctx, __u32 pid, __u64 waker, __u64 waiter, __u64 ts)
{
	struct writer *w = ctx;

	w->flows++;
	seen(w, pid, waker, TRACK_STATES);
	seen(w, pid, waiter, TRACK_STATES);
	head(w, "signal", "wakeup", "s", ts, pid, tid_of(waker, TRACK_STATES));
	fprintf(w->out, ",\"id\":%llu}", (unsigned long long)w->flows);
	head(w, "signal", "wakeup", "f", ts, pid, tid_of(waiter, TRACK_STATES));
	fprintf(w->out, ",\"bp\":\"e\",\"id\":%llu}", (unsigned long long)w->flows);
}

static void write_request(struct writer *w, const struct sqslow_request *q, bool captured)
{
	const char *route = w->names->name(w->names->ctx, q->pid, q->route);

	seen(w, q->pid, q->process, TRACK_REQUESTS);
	head(w, route, "request", "X", q->begin_ns, q->pid, tid_of(q->process, TRACK_REQUESTS));
	dur(w, q->begin_ns, q->end_ns);
	fprintf(w->out, ",\"args\":{");
	arg_str(w, "route", route, true);
	fprintf(w->out, ",\"request_id\":%llu,\"status\":%d", (unsigned long long)q->id, q->status);
	if (q->span)	/* lower-case hex, as in traceparent and sqflow's request slices */
		fprintf(w->out, ",\"trace_id\":\"%016llx%016llx\",\"span_id\":\"%016llx\",\"parent_span_id\":\"%016llx\"",
			(unsigned long long)q->trace_hi, (unsigned long long)q->trace_lo, (unsigned long long)q->span,
			(unsigned long long)q->parent);
	for (int s = 1; s < SQ_GREEN_NSTATES; s++)
		fprintf(w->out, ",\"%s_ms\":%.3f", sqslow_state_names[s], q->state_ns[s] / 1e6);
	if (captured)
		fprintf(w->out, ",\"captured\":true");
	fprintf(w->out, "}}");
}

static void on_request(void *ctx, const struct sqslow_request *q)
{
	struct writer *w = ctx;
	const struct sqslow_request *t = w->c->req;

	/* the captured one is written from what the live replay knew (its begin may be
	 * older than the window's bytes allowed) */
	if (t && t->pid == q->pid && t->id == q->id)
		return;
	write_request(w, q, false);
}

static void on_io(void *ctx, __u32 pid, const SqEventRecord *r)
{
	struct writer *w = ctx;
	__u32 op = SQ_EV_IO_OP(r->arg), kind = SQ_EV_IO_KIND(r->arg);
	const char *name = op < 6 ? io_ops[op] : "?";

	seen(w, pid, r->io.process, TRACK_IO);
	head(w, name, "io", "X", r->ts, pid, tid_of(r->io.process, TRACK_IO));
	dur(w, r->ts, r->ts + r->io.ns);
	fprintf(w->out, ",\"args\":{");
	arg_str(w, "method", r->io.methods[0] ? w->names->method(w->names->ctx, pid, r->io.methods[0]) : "?", true);
	fprintf(w->out, ",\"fd\":%lld,\"kind\":\"%s\",\"result\":%lld}}", (long long)(int)r->io.fd,
		kind < 3 ? io_kinds[kind] : "?", (long long)r->io.result);
}

static void on_gc(void *ctx, __u32 pid, __u64 process, __u64 method, bool full, __u64 begin, __u64 end)
{
	struct writer *w = ctx;

	w->gc_track = true;
	head(w, full ? "full GC" : "young GC", "gc", "X", begin, pid, TRACK_GC);
	dur(w, begin, end);
	fprintf(w->out, ",\"args\":{");
	arg_str(w, "method", method ? w->names->method(w->names->ctx, pid, method) : "?", true);
	if (process)
		arg_process(w, "process", pid, process);
	fprintf(w->out, "}}");
}

/* A timer sample: an instant on the process's track, its stack outermost first. */
static void on_sample(void *ctx, const struct sqslow_sample *s)
{
	struct writer *w = ctx;
	__u32 n = s->n < SQSLOW_DEPTH ? s->n : SQSLOW_DEPTH;

	if (!n)
		return;
	seen(w, s->h.pid, s->process, TRACK_STATES);
	head(w, w->names->method(w->names->ctx, s->h.pid, s->methods[0]), "sample", "i", s->ts, s->h.pid,
	     tid_of(s->process, TRACK_STATES));
	fprintf(w->out, ",\"s\":\"t\",\"args\":{\"stack\":[");
	for (__u32 i = n; i-- > 0;) {
		sq_json_str(w->out, w->names->method(w->names->ctx, s->h.pid, s->methods[i]));
		if (i)
			fputc(',', w->out);
	}
	fprintf(w->out, "]}}");
}

static void on_alloc(void *ctx, const struct sqslow_alloc *a)
{
	struct writer *w = ctx;

	if (!a->process)
		return;
	seen(w, a->h.pid, a->process, TRACK_STATES);
	head(w, "alloc", "alloc", "i", a->ts, a->h.pid, tid_of(a->process, TRACK_STATES));
	fprintf(w->out, ",\"s\":\"t\",\"args\":{");
	arg_str(w, "class", w->names->name(w->names->ctx, a->h.pid, a->cls), true);
	arg_str(w, "method", a->method ? w->names->method(w->names->ctx, a->h.pid, a->method) : "?", false);
	fprintf(w->out, ",\"bytes\":%llu,\"weight\":%llu}}", (unsigned long long)a->bytes,
		(unsigned long long)a->weight);
}

static void name_tracks(struct writer *w)
{
	static const char *const suffix[] = { "", " requests", " io" };
	char name[200];
	__u32 last_pid = 0;

	for (size_t i = 0; i < w->nseen; i++) {
		const struct seen *s = &w->seen[i];
		if (s->pid != last_pid) {
			fprintf(w->out, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":\"sqvm %u\"}}",
				s->pid, s->pid);
			if (w->gc_track)
				fprintf(w->out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%d,"
					"\"args\":{\"name\":\"collections\"}}", s->pid, TRACK_GC);
			last_pid = s->pid;
		}
		for (int t = 0; t < 3; t++) {
			if (!(s->tracks & (1u << t)))
				continue;
			snprintf(name, sizeof(name), "%s (%llu)%s", w->names->process(w->names->ctx, s->pid, s->id),
				 (unsigned long long)s->id, suffix[t]);
			fprintf(w->out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%llu,\"args\":{\"name\":",
				s->pid, (unsigned long long)tid_of(s->id, t));
			sq_json_str(w->out, name);
			fprintf(w->out, "}}");
		}
	}
}

/* The earliest event of the window at or after since (the trace's time 0). */
static __u64 first_ts(const struct sqslow_window *win, __u64 since)
{
	__u64 first = ~0ULL;

	for (size_t i = 0; i < win->n; i++) {
		const struct sqslow_msg *m = sqslow_window_at(win, i);
		const struct sqslow_head *h = m->data;
		__u64 ts = m->ts;

		if (h->kind == SQSLOW_BATCH) {
			const struct sqslow_batch *b = m->data;
			const SqEventRecord *rec = (const SqEventRecord *)(b + 1);
			for (__u32 k = 0; k < b->n; k++)
				if (rec[k].ts >= since) {
					ts = rec[k].ts;
					break;
				}
		}
		if (ts >= since && ts < first)
			first = ts;
	}
	return first == ~0ULL ? since : first;
}

long sqslow_trace_write(FILE *out, const struct sqslow_window *win, const struct sqslow_capture *c,
			const struct sqslow_names *names)
{
	struct writer w = { .out = out, .c = c, .names = names };
	struct sqslow_sink sink = { .ctx = &w, .slice = on_slice, .request = on_request, .flow = on_flow,
				    .io = on_io, .gc = on_gc, .sample = on_sample, .alloc = on_alloc };
	struct sqslow_replay *r = sqslow_replay_new(c->since_ns, &sink);
	__u64 end = c->end_ns;

	if (!r)
		return -1;
	w.base = first_ts(win, c->since_ns);
	fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	for (size_t i = 0; i < win->n; i++) {
		const struct sqslow_msg *m = sqslow_window_at(win, i);
		if (m->ts > end)
			end = m->ts;
		sqslow_replay_feed(r, m->data, m->size);
	}
	sqslow_replay_close(r, end);
	if (c->req)
		write_request(&w, c->req, true);
	if (!w.events)	/* a trace with no event at all still names its VM */
		fprintf(out, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":\"sqvm %u\"}}",
			c->pid, c->pid);
	name_tracks(&w);
	fprintf(out, "\n],\"otherData\":{\"tool\":\"sqslow\",\"trigger\":\"%s\",\"pid\":\"%u\"", c->trigger, c->pid);
	if (c->req)
		fprintf(out, ",\"request_id\":\"%llu\"", (unsigned long long)c->req->id);
	if (c->summary) {
		fprintf(out, ",\"summary\":");
		sq_json_str(out, c->summary);
	}
	/* how far back the window goes, and whether it was ever cut (before the tool has been
	 * attached W, it holds all there is) */
	fprintf(out, ",\"window_ms\":\"%.3f\",\"window_begin_ms_before_end\":\"%.3f\",\"attached_ms_before_end\":\"%.3f\","
		"\"window_dropped\":\"%llu\",\"window_cut_for_bytes\":\"%llu\",\"clamped_slices\":\"%llu\",\"events\":\"%ld\"}}\n",
		c->window_ns / 1e6, (end - w.base) / 1e6, (end - c->since_ns) / 1e6, (unsigned long long)win->dropped,
		(unsigned long long)win->cut_for_bytes, (unsigned long long)w.clamped, w.events);
	sqslow_replay_free(r);
	free(w.seen);
	return w.oom ? -1 : w.events;
}

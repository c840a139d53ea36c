// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_trace.c - a capture (sqslow_trace.h): the window replayed (sqslow_replay.c),
 * each thing it finds handed to the writer as it is found, with its track named first. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sqslow_trace.h"

const char *const sqslow_state_names[SQSLOW_NSTATES] = { "unknown", "running", "ready", "semaphore", "delay",
							 "io", "gc", "offcpu" };

static const char *const io_ops[] = { "read", "write", "accept", "connect", "open", "close" };
static const char *const io_kinds[] = { "file", "tcp", "other" };

#define TRACK_GC 1
#define TRACK_STATES 0
#define TRACK_REQUESTS 1
#define TRACK_IO 2

struct writer {
	const struct sqslow_trace_out *out;
	const struct sqslow_capture *c;
	const struct sqslow_names *names;
	__u64 base;		/* ts 0 */
	long events;
	__u64 flows;
	/* the processes seen */
	struct seen {
		__u32 pid;
		__u64 id;
		unsigned tracks;	/* bit per TRACK_* */
		__u64 states_end;	/* where its last state slice ended */
	} *seen;
	size_t nseen, capseen;
	__u32 *pids;		/* the VMs seen, and whether each has its GC track */
	bool *gc;
	size_t npids, cappids;
	__u64 clamped;		/* state slices that began before the last one ended */
	bool oom;
};

static __u64 tid_of(__u64 id, int track)
{
	return id * 4 + track;
}

/* No time before the trace's 0: a slice that began before it (a state the replay dates
 * from a request's begin, older than the window) is what lies after it. */
static __u64 at(const struct writer *w, __u64 ts)
{
	return ts > w->base ? ts : w->base;
}

/* VM pid's index among those seen, named when new (-1: out of memory). */
static long vm(struct writer *w, __u32 pid)
{
	for (size_t i = 0; i < w->npids; i++)
		if (w->pids[i] == pid)
			return (long)i;
	if (w->npids == w->cappids) {
		size_t cap = w->cappids ? w->cappids * 2 : 4;
		__u32 *p = realloc(w->pids, cap * sizeof(*p));
		bool *g = p ? realloc(w->gc, cap * sizeof(*g)) : NULL;

		if (p)
			w->pids = p;
		if (!g) {
			w->oom = true;
			return -1;
		}
		w->gc = g;
		w->cappids = cap;
	}
	w->pids[w->npids] = pid;
	w->gc[w->npids] = false;
	w->out->process(w->out->ctx, pid);
	return (long)w->npids++;
}

static void name_track(struct writer *w, __u32 pid, __u64 id, int track)
{
	static const char *const suffix[] = { "", " requests", " io" };
	char name[200];

	snprintf(name, sizeof(name), "%s (%llu)%s", w->names->process(w->names->ctx, pid, id), (unsigned long long)id,
		 suffix[track]);
	w->out->track(w->out->ctx, pid, tid_of(id, track), name);
}

/* Process id's entry, its track named when new (NULL: out of memory). */
static struct seen *seen(struct writer *w, __u32 pid, __u64 id, int track)
{
	struct seen *s = NULL;

	for (size_t i = w->nseen; i-- > 0;)
		if (w->seen[i].pid == pid && w->seen[i].id == id) {
			s = &w->seen[i];
			break;
		}
	if (!s) {
		if (vm(w, pid) < 0)
			return NULL;
		if (w->nseen == w->capseen) {
			size_t cap = w->capseen ? w->capseen * 2 : 64;
			struct seen *g = realloc(w->seen, cap * sizeof(*g));
			if (!g) {
				w->oom = true;
				return NULL;
			}
			w->seen = g;
			w->capseen = cap;
		}
		s = &w->seen[w->nseen++];
		*s = (struct seen){ .pid = pid, .id = id };
	}
	if (!(s->tracks & (1u << track))) {
		s->tracks |= 1u << track;
		name_track(w, pid, id, track);
	}
	return s;
}

static void slice(struct writer *w, __u32 pid, __u64 tid, const char *name, const char *cat, __u64 begin,
		  __u64 end, const struct sqslow_arg *args, int nargs)
{
	begin = at(w, begin);
	w->out->slice(w->out->ctx, pid, tid, name, cat, begin, end > begin ? end : begin, args, nargs);
	w->events++;
}

static void instant(struct writer *w, __u32 pid, __u64 tid, const char *name, const char *cat, __u64 ts,
		    const struct sqslow_arg *args, int nargs)
{
	w->out->instant(w->out->ctx, pid, tid, name, cat, at(w, ts), args, nargs);
	w->events++;
}

static struct sqslow_arg str(const char *key, const char *s)
{
	return (struct sqslow_arg){ .key = key, .type = SQSLOW_ARG_STR, .s = s };
}

static struct sqslow_arg num(const char *key, long long i)
{
	return (struct sqslow_arg){ .key = key, .type = SQSLOW_ARG_INT, .i = i };
}

static struct sqslow_arg unum(const char *key, unsigned long long u)
{
	return (struct sqslow_arg){ .key = key, .type = SQSLOW_ARG_UINT, .u = u };
}

static const char *method(struct writer *w, __u32 pid, __u64 m)
{
	return m ? w->names->method(w->names->ctx, pid, m) : "?";
}

/* "NAME (ID)" of a process, into buf. */
static const char *process(struct writer *w, __u32 pid, __u64 id, char *buf, size_t len)
{
	snprintf(buf, len, "%s (%llu)", w->names->process(w->names->ctx, pid, id), (unsigned long long)id);
	return buf;
}

static void on_slice(void *ctx, __u32 pid, __u64 id, __u32 state, __u64 begin, __u64 end,
		     const struct sqslow_wait *wt)
{
	struct writer *w = ctx;
	struct seen *p = seen(w, pid, id, TRACK_STATES);
	struct sqslow_arg a[6];
	char holder[160], waker[160];
	int n = 0;

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
	if (state == SQ_GREEN_SEMAPHORE || state == SQ_GREEN_DELAY || state == SQ_GREEN_IO) {
		a[n++] = str("method", method(w, pid, wt->method));
		if (state == SQ_GREEN_SEMAPHORE) {
			a[n++] = unum("semaphore", wt->semaphore);
			if (wt->holder)
				a[n++] = str("holder", process(w, pid, wt->holder, holder, sizeof(holder)));
			if (wt->waker)
				a[n++] = str("woken_by", process(w, pid, wt->waker, waker, sizeof(waker)));
			if (wt->waker && wt->waker_method)
				a[n++] = str("woken_in", method(w, pid, wt->waker_method));
		} else if (state == SQ_GREEN_IO) {
			a[n++] = num("fd", (long long)wt->fd);
			a[n++] = str("op", wt->op < 4 ? io_ops[wt->op] : "?");
		}
	}
	slice(w, pid, tid_of(id, TRACK_STATES), sqslow_state_names[state], "state", begin, end, a, n);
}

/* A flow arrow: from the waker's track at ts to the waiter's, bound to the slice that
 * begins there (its ready slice). */
static void on_flow(void *ctx, __u32 pid, __u64 waker, __u64 waiter, __u64 ts)
{
	struct writer *w = ctx;

	w->flows++;
	seen(w, pid, waker, TRACK_STATES);
	seen(w, pid, waiter, TRACK_STATES);
	w->out->flow(w->out->ctx, pid, tid_of(waker, TRACK_STATES), tid_of(waiter, TRACK_STATES), at(w, ts), w->flows);
	w->events += 2;
}

static void write_request(struct writer *w, const struct sqslow_request *q, bool captured)
{
	const char *route = w->names->name(w->names->ctx, q->pid, q->route);
	struct sqslow_arg a[4 + 4 + SQSLOW_NSTATES];
	char trace[40], span[20], parent[20];
	int n = 0;

	a[n] = str("route", route), a[n++].key_arg = true;
	a[n] = unum("request_id", q->id), a[n++].key_arg = true;
	a[n++] = num("status", q->status);
	if (q->span) {	/* lower-case hex, as in traceparent and sqflow's request slices */
		snprintf(trace, sizeof(trace), "%016llx%016llx", (unsigned long long)q->trace_hi,
			 (unsigned long long)q->trace_lo);
		snprintf(span, sizeof(span), "%016llx", (unsigned long long)q->span);
		snprintf(parent, sizeof(parent), "%016llx", (unsigned long long)q->parent);
		a[n] = str("trace_id", trace), a[n++].key_arg = true;
		a[n] = str("span_id", span), a[n++].key_arg = true;
		a[n++] = str("parent_span_id", parent);
	}
	for (int s = 1; s < SQSLOW_NSTATES; s++)
		a[n++] = (struct sqslow_arg){ .key = sqslow_state_names[s], .type = SQSLOW_ARG_MS,
					      .ms = q->state_ns[s] / 1e6 };
	if (captured)
		a[n] = (struct sqslow_arg){ .key = "captured", .type = SQSLOW_ARG_TRUE }, a[n++].key_arg = true;
	seen(w, q->pid, q->process, TRACK_REQUESTS);
	slice(w, q->pid, tid_of(q->process, TRACK_REQUESTS), route, "request", q->begin_ns, q->end_ns, a, n);
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
	struct sqslow_arg a[] = { str("method", method(w, pid, r->io.methods[0])), num("fd", (int)r->io.fd),
				  str("kind", kind < 3 ? io_kinds[kind] : "?"), num("result", (long long)r->io.result) };

	seen(w, pid, r->io.process, TRACK_IO);
	slice(w, pid, tid_of(r->io.process, TRACK_IO), op < 6 ? io_ops[op] : "?", "io", r->ts, r->ts + r->io.ns, a, 4);
}

static void on_gc(void *ctx, __u32 pid, __u64 id, __u64 m, bool full, __u64 begin, __u64 end)
{
	struct writer *w = ctx;
	struct sqslow_arg a[2] = { str("method", method(w, pid, m)) };
	char buf[160];
	long v = vm(w, pid);

	if (v < 0)
		return;
	if (!w->gc[v]) {
		w->gc[v] = true;
		w->out->track(w->out->ctx, pid, TRACK_GC, "collections");
	}
	if (id)
		a[1] = str("process", process(w, pid, id, buf, sizeof(buf)));
	slice(w, pid, TRACK_GC, full ? "full GC" : "young GC", "gc", begin, end, a, id ? 2 : 1);
}

/* A timer sample: an instant on the process's track, its stack outermost first. */
static void on_sample(void *ctx, const struct sqslow_sample *s)
{
	struct writer *w = ctx;
	__u32 n = s->n < SQSLOW_DEPTH ? s->n : SQSLOW_DEPTH;
	struct sqslow_arg a = { .key = "stack", .type = SQSLOW_ARG_STACK, .stack = s->methods, .n = n, .pid = s->h.pid };

	if (!n)
		return;
	seen(w, s->h.pid, s->process, TRACK_STATES);
	instant(w, s->h.pid, tid_of(s->process, TRACK_STATES), method(w, s->h.pid, s->methods[0]), "sample", s->ts,
		&a, 1);
}

static void on_alloc(void *ctx, __u32 pid, const SqEventRecord *r)
{
	struct writer *w = ctx;
	const SqEvAllocSample *a = &r->sample;
	struct sqslow_arg args[] = { str("class", w->names->name(w->names->ctx, pid, a->cls)),
				     str("method", method(w, pid, a->method)), unum("bytes", a->bytes),
				     unum("weight", a->weight) };

	if (!a->process)
		return;
	seen(w, pid, a->process, TRACK_STATES);
	instant(w, pid, tid_of(a->process, TRACK_STATES), "alloc", "alloc", r->ts, args, 4);
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

long sqslow_trace_write(const struct sqslow_trace_out *out, const struct sqslow_window *win,
			const struct sqslow_capture *c, const struct sqslow_names *names)
{
	struct writer w = { .out = out, .c = c, .names = names };
	struct sqslow_sink sink = { .ctx = &w, .slice = on_slice, .request = on_request, .flow = on_flow,
				    .io = on_io, .gc = on_gc, .sample = on_sample, .alloc = on_alloc };
	struct sqslow_replay *r = out->ctx ? sqslow_replay_new(c->since_ns, &sink) : NULL;
	struct sqslow_trace_end e = { .c = c, .win = win, .end_ns = c->end_ns };
	bool ok;

	if (!r) {
		if (out->ctx)
			out->end(out->ctx, NULL);
		return -1;
	}
	w.base = e.base_ns = first_ts(win, c->since_ns);
	out->begin(out->ctx, w.base);
	for (size_t i = 0; i < win->n; i++) {
		const struct sqslow_msg *m = sqslow_window_at(win, i);
		if (m->ts > e.end_ns)
			e.end_ns = m->ts;
		sqslow_replay_feed(r, m->data, m->size);
	}
	sqslow_replay_close(r, e.end_ns);
	if (c->req)
		write_request(&w, c->req, true);
	if (!w.npids)	/* a trace with no event at all still names its VM */
		vm(&w, c->pid);
	e.clamped = w.clamped;
	e.events = w.events;
	ok = out->end(out->ctx, &e);
	sqslow_replay_free(r);
	free(w.seen);
	free(w.pids);
	free(w.gc);
	return w.oom || !ok ? -1 : w.events;
}

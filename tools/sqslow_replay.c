// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_replay.c - the green processes' states and the requests, replayed from
 * sqslow's messages (sqslow_replay.h). The transitions are bpf/sqgreen.bpf.h's, the
 * pairing bpf/sqrequest.bpf.h's and the charging sqreq's (bpf/sqreq.bpf.c): every
 * nanosecond of a request goes to the one state its process was in. */
#include <stdlib.h>
#include <string.h>

#include "sqslow_replay.h"

#define BUCKETS 4096
#define MAX_VMS 64
/* Processes followed at most (a VM that lies could name any number). */
#define MAX_PROCS 65536

/* process__ready's reason when a Semaphore's signal readied it (probes/README.md). */
#define READY_SIGNALLED 1
/* move()'s state for a process that is gone */
#define GONE (SQSLOW_NSTATES + 1)
/* A VM's CPU edges not applied yet: they arrive at once, its records in batches, later */
#define PENDING 256
/* A VM's last spells off the CPU kept, for the requests that ran whole (SQ_EV_REQUEST_RUN) */
#define OFF_SPELLS 64

struct proc {
	struct proc *next;		/* in its bucket */
	__u32 pid;
	__u32 state;			/* enum sq_green_state */
	__u64 id, since;
	struct sqslow_wait wait;	/* the wait it is in (or was in last) */
	struct sqslow_request *req;	/* its open request, or NULL */
	SqEvTrace trace;		/* the trace context of its next request (the VM writes it
					 * before the request's begin or run record) */
};

/* A VM's thread left its CPU or took one (a struct sqslow_cpu), not applied yet. */
struct cpu_edge {
	__u64 ts;
	bool on;
};

/* A VM: the process its thread runs, the collection under way, and whether the thread
 * is on a CPU (with the edges that wait for the records to catch up with them). */
struct vm {
	__u32 pid;
	bool known;			/* cur is running (sq_green_running's known) */
	__u64 cur;
	bool in_gc, gc_full;
	__u64 gc_begin, gc_process, gc_method;
	bool off;			/* its thread is off the CPU */
	__u64 off_since;		/* ... since */
	struct cpu_edge pending[PENDING];	/* a ring, oldest at head */
	int head, npending;
	struct { __u64 begin, end; } spells[OFF_SPELLS];	/* the last ones off, a ring */
	int nspells;
};

struct sqslow_replay {
	__u64 since;
	struct sqslow_sink sink;
	struct proc *buckets[BUCKETS];
	struct vm vms[MAX_VMS];
	int nvms;
	size_t nprocs;
	__u64 unseen, malformed, reordered;
};

static unsigned bucket(__u32 pid, __u64 id)
{
	__u64 h = (id ^ ((__u64)pid << 32)) * 0x9E3779B97F4A7C15ULL;

	return (unsigned)(h >> 52) % BUCKETS;
}

static struct proc *find(struct sqslow_replay *r, __u32 pid, __u64 id, bool make)
{
	unsigned b = bucket(pid, id);
	struct proc *p;

	for (p = r->buckets[b]; p; p = p->next)
		if (p->pid == pid && p->id == id)
			return p;
	if (!make || r->nprocs >= MAX_PROCS || !(p = calloc(1, sizeof(*p))))
		return NULL;
	r->nprocs++;
	p->pid = pid;
	p->id = id;
	p->next = r->buckets[b];
	r->buckets[b] = p;
	return p;
}

static void forget(struct sqslow_replay *r, struct proc *gone)
{
	struct proc **pp = &r->buckets[bucket(gone->pid, gone->id)];

	for (; *pp; pp = &(*pp)->next)
		if (*pp == gone) {
			*pp = gone->next;
			free(gone->req);
			free(gone);
			r->nprocs--;
			return;
		}
}

static struct vm *vm_of(struct sqslow_replay *r, __u32 pid)
{
	for (int i = 0; i < r->nvms; i++)
		if (r->vms[i].pid == pid)
			return &r->vms[i];
	if (r->nvms == MAX_VMS)
		return NULL;
	memset(&r->vms[r->nvms], 0, sizeof(r->vms[0]));
	r->vms[r->nvms].pid = pid;
	return &r->vms[r->nvms++];
}

/* ns of (state, method) to a request: to its share, a free one, or the smallest one's
 * place if ns is more (as sqreq's add_method). */
static void add_share(struct sqslow_request *q, __u32 state, __u64 method, __u64 ns)
{
	int min = 0;

	for (int i = 0; i < SQSLOW_SHARES; i++) {
		struct sqslow_share *s = &q->shares[i];
		if (!s->ns || (s->state == state && s->method == method)) {
			s->state = state;
			s->method = method;
			s->ns += ns;
			return;
		}
		if (s->ns < q->shares[min].ns)
			min = i;
	}
	if (ns > q->shares[min].ns)
		q->shares[min] = (struct sqslow_share){ .method = method, .ns = ns, .state = state };
}

/* The time of p's state up to now goes to its open request (only what lies after the
 * request's begin). */
static void charge(struct sqslow_replay *r, struct proc *p, __u64 now)
{
	struct sqslow_request *q = p->req;
	__u64 from = p->since, ns;
	struct vm *v;

	if (!q || p->state == SQ_GREEN_UNKNOWN || p->state >= SQSLOW_NSTATES)
		return;
	if (from < q->begin_ns)
		from = q->begin_ns;
	if (now <= from)
		return;
	ns = now - from;
	q->state_ns[p->state] += ns;
	switch (p->state) {
	case SQ_GREEN_SEMAPHORE:
		if (ns > q->sem_max_ns) {
			q->sem_max_ns = ns;
			q->sem_holder = p->wait.holder;
			q->sem_waker = p->wait.waker;
			q->sem_waker_method = p->wait.waker_method;
		}
		/* fall through */
	case SQ_GREEN_DELAY:
	case SQ_GREEN_IO:
		add_share(q, p->state, p->wait.method, ns);
		break;
	case SQ_GREEN_GC:
		v = vm_of(r, p->pid);
		add_share(q, p->state, v ? v->gc_method : 0, ns);
		if (ns > q->gc_max_ns) {
			q->gc_max_ns = ns;
			q->gc_full = v && v->gc_full;
		}
		break;
	}
}

/* p enters state to at now (GONE: it is gone): the state it leaves is a slice, and its
 * request's. */
static void move(struct sqslow_replay *r, struct proc *p, __u32 to, __u64 now)
{
	/* A record older than the process's last transition (they come from different
	 * places in the VM, each with its own time) takes effect at that transition: its
	 * slices then never overlap. */
	if (now < p->since) {
		r->reordered++;
		now = p->since;
	}
	charge(r, p, now);
	if (p->state != SQ_GREEN_UNKNOWN && p->state < SQSLOW_NSTATES && r->sink.slice && now >= p->since)
		r->sink.slice(r->sink.ctx, p->pid, p->id, p->state, p->since, now, &p->wait);
	if (to == GONE) {
		forget(r, p);
		return;
	}
	p->state = to;
	p->since = now;
}

static void move_id(struct sqslow_replay *r, __u32 pid, __u64 id, __u32 to, __u64 now)
{
	struct proc *p = find(r, pid, id, to != GONE);

	if (p)
		move(r, p, to, now);
}

/* The running process id stops running (for another process it changes nothing). */
static void stop_in(struct vm *v, __u64 id)
{
	if (v->known && v->cur == id)
		v->known = false;
}

/* id runs on v's thread from now: the one that ran there until now, if nothing said it
 * stopped, is suspended (unknown). */
static void activate(struct sqslow_replay *r, struct vm *v, __u64 id, __u64 now)
{
	if (v->known && v->cur != id)
		move_id(r, v->pid, v->cur, SQ_GREEN_UNKNOWN, now);
	v->cur = id;
	v->known = true;
}

/* v's thread left its CPU (on false) or took one at ts: the process running there, if
 * it is in the running state, is off the CPU until the thread is back (a collection
 * stays a collection). */
static void cpu_edge(struct sqslow_replay *r, struct vm *v, bool on, __u64 ts)
{
	struct proc *p = v->known ? find(r, v->pid, v->cur, false) : NULL;

	if (on && v->off && ts > v->off_since) {
		int i = v->nspells++ % OFF_SPELLS;
		v->spells[i].begin = v->off_since;
		v->spells[i].end = ts;
	}
	if (!on && !v->off)
		v->off_since = ts;
	v->off = !on;
	if (p && !on && p->state == SQ_GREEN_RUNNING)
		move(r, p, SQSLOW_OFFCPU, ts);
	else if (p && on && p->state == SQSLOW_OFFCPU)
		move(r, p, SQ_GREEN_RUNNING, ts);
}

/* How long v's thread was off the CPU between begin and end (as far as its last spells
 * and the one under way tell). */
static __u64 off_between(const struct vm *v, __u64 begin, __u64 end)
{
	__u64 ns = 0;
	int n = v->nspells < OFF_SPELLS ? v->nspells : OFF_SPELLS;

	for (int i = 0; i < n; i++) {
		__u64 b = v->spells[i].begin > begin ? v->spells[i].begin : begin;
		__u64 e = v->spells[i].end < end ? v->spells[i].end : end;
		if (e > b)
			ns += e - b;
	}
	if (v->off && v->off_since < end)
		ns += end - (v->off_since > begin ? v->off_since : begin);
	return ns;
}

/* v's CPU edges up to ts, in order: before a record of ts is replayed. */
static void cpu_edges_until(struct sqslow_replay *r, struct vm *v, __u64 ts)
{
	while (v->npending && v->pending[v->head].ts <= ts) {
		struct cpu_edge e = v->pending[v->head];

		v->head = (v->head + 1) % PENDING;
		v->npending--;
		cpu_edge(r, v, e.on, e.ts);
	}
}

/* A CPU edge as it comes: it waits for the records of its time (a batch comes later
 * than the edges of its seconds); a full ring applies its oldest at once. */
static void cpu_edge_later(struct sqslow_replay *r, struct vm *v, const struct sqslow_cpu *c)
{
	if (v->npending == PENDING)
		cpu_edges_until(r, v, v->pending[v->head].ts);
	v->pending[(v->head + v->npending) % PENDING] = (struct cpu_edge){ .ts = c->ts, .on = c->on != 0 };
	v->npending++;
}

/* The trace context p was given for request id, if any, into q (and forgotten). */
static void take_trace(struct proc *p, __u64 id, struct sqslow_request *q)
{
	if (!p || !p->trace.span || p->trace.id != id)
		return;
	q->trace_hi = p->trace.trace_hi;
	q->trace_lo = p->trace.trace_lo;
	q->parent = p->trace.parent;
	q->span = p->trace.span;
	p->trace = (SqEvTrace){ 0 };
}

/* request__begin: a process has at most one request open. */
static void on_begin(struct sqslow_replay *r, struct vm *v, const SqEventRecord *e)
{
	struct proc *p = find(r, v->pid, e->req.process, true);
	struct sqslow_request *q;

	if (!p)
		return;
	if (p->req) {
		r->unseen++;
		return;
	}
	activate(r, v, e->req.process, e->ts);
	if (p->state != SQ_GREEN_RUNNING)
		move(r, p, SQ_GREEN_RUNNING, e->ts);
	if (!(q = calloc(1, sizeof(*q))))
		return;
	q->pid = v->pid;
	q->id = e->req.id;
	q->route = e->req.route;
	q->process = e->req.process;
	q->begin_ns = e->ts;
	take_trace(p, q->id, q);
	p->req = q;
}

static void on_end(struct sqslow_replay *r, struct vm *v, const SqEventRecord *e)
{
	struct proc *p = find(r, v->pid, e->req.process, false);
	struct sqslow_request *q = p ? p->req : NULL;

	if (!q || q->id != e->req.id || e->ts < q->begin_ns) {
		r->unseen++;
		return;
	}
	charge(r, p, e->ts);
	q->end_ns = e->ts;
	q->status = (__s32)e->arg;
	if (r->sink.request)
		r->sink.request(r->sink.ctx, q);
	free(q);
	p->req = NULL;
}

/* A request that began and ended in one run of its process: all of it CPU. */
static void on_run(struct sqslow_replay *r, struct vm *v, const SqEventRecord *e)
{
	struct sqslow_request q = { .pid = v->pid, .id = e->req.id, .route = e->req.route,
				    .process = e->req.process, .begin_ns = e->req.began, .end_ns = e->ts,
				    .status = (__s32)e->arg };
	struct proc *p;

	if (e->req.began < r->since || e->req.began > e->ts) {
		r->unseen++;
		return;
	}
	activate(r, v, e->req.process, e->req.began);
	if ((p = find(r, v->pid, e->req.process, true)) && p->state == SQ_GREEN_UNKNOWN) {
		/* it ran from the request's begin at least (not before what was last seen of
		 * it: its slices never overlap) */
		p->state = SQ_GREEN_RUNNING;
		if (e->req.began > p->since)
			p->since = e->req.began;
	}
	take_trace(p, q.id, &q);
	/* it ran from its begin to its end (no scheduler record between), on the CPU or,
	 * while the VM's thread was not, off it */
	q.state_ns[SQSLOW_OFFCPU] = off_between(v, e->req.began, e->ts);
	q.state_ns[SQ_GREEN_RUNNING] = e->ts - e->req.began - q.state_ns[SQSLOW_OFFCPU];
	if (r->sink.request)
		r->sink.request(r->sink.ctx, &q);
}

static void on_record(struct sqslow_replay *r, struct vm *v, const SqEventRecord *e)
{
	struct proc *p;
	__u64 id = e->process.id;

	switch (e->kind) {
	case SQ_EV_PROCESS_ACTIVATE:
		activate(r, v, id, e->ts);
		move_id(r, v->pid, id, SQ_GREEN_RUNNING, e->ts);
		break;
	case SQ_EV_PROCESS_READY:
		stop_in(v, id);
		if (!(p = find(r, v->pid, id, true)))
			break;
		p->wait.reason = e->arg;
		if (e->arg == READY_SIGNALLED && v->known) {
			p->wait.waker = v->cur;
			p->wait.waker_method = e->process.method;	/* 0 from a VM before it */
			if (r->sink.flow)
				r->sink.flow(r->sink.ctx, v->pid, v->cur, id, e->ts);
		}
		move(r, p, SQ_GREEN_READY, e->ts);
		break;
	case SQ_EV_PROCESS_WAIT:
	case SQ_EV_IO_WAIT:
		stop_in(v, id);
		if (!(p = find(r, v->pid, id, true)))
			break;
		move(r, p, e->kind == SQ_EV_IO_WAIT ? SQ_GREEN_IO : e->process.semaphore ? SQ_GREEN_SEMAPHORE : SQ_GREEN_DELAY,
		     e->ts);
		p->wait = (struct sqslow_wait){ .method = e->process.method };
		if (e->kind == SQ_EV_IO_WAIT) {
			p->wait.fd = e->process.fd;
			p->wait.op = e->arg;
		} else if (e->process.semaphore) {
			p->wait.semaphore = e->process.semaphore;
			p->wait.holder = e->arg;
		}
		break;
	case SQ_EV_PROCESS_EXIT:
		stop_in(v, id);
		move_id(r, v->pid, id, GONE, e->ts);
		break;
	case SQ_EV_REQUEST_BEGIN:
		on_begin(r, v, e);
		break;
	case SQ_EV_REQUEST_END:
		on_end(r, v, e);
		break;
	case SQ_EV_REQUEST_RUN:
		on_run(r, v, e);
		break;
	case SQ_EV_REQUEST_TRACE:
		if ((p = find(r, v->pid, e->trace.process, true)))
			p->trace = e->trace;
		break;
	case SQ_EV_IO:
		if (r->sink.io)
			r->sink.io(r->sink.ctx, v->pid, e);
		break;
	case SQ_EV_ALLOC_SAMPLE:
		if (r->sink.alloc)
			r->sink.alloc(r->sink.ctx, v->pid, e);
		break;
	}
}

static void on_gc(struct sqslow_replay *r, const struct sqslow_gc *g)
{
	struct vm *v = vm_of(r, g->h.pid);

	if (!v || g->ts < r->since)
		return;
	if (g->begin) {
		v->in_gc = true;
		v->gc_full = g->full;
		v->gc_begin = g->ts;
		v->gc_process = g->process;
		v->gc_method = g->method;
		if (g->process)
			move_id(r, v->pid, g->process, SQ_GREEN_GC, g->ts);
		return;
	}
	if (!v->in_gc)
		return;		/* began before the replay did */
	v->in_gc = false;
	if (v->gc_process)
		move_id(r, v->pid, v->gc_process, SQ_GREEN_RUNNING, g->ts);
	if (r->sink.gc)
		r->sink.gc(r->sink.ctx, v->pid, v->gc_process, v->gc_method, v->gc_full, v->gc_begin, g->ts);
}

__u64 sqslow_msg_ts(const void *data, size_t size)
{
	const struct sqslow_head *h = data;
	const struct sqslow_batch *b = data;

	if (size < sizeof(*h))
		return 0;
	switch (h->kind) {
	case SQSLOW_BATCH:
		if (size < sizeof(*b) || !b->n || b->n > SQ_BATCH_MAX || size < sizeof(*b) + b->n * sizeof(SqEventRecord))
			return 0;
		return ((const SqEventRecord *)(b + 1))[b->n - 1].ts;
	case SQSLOW_GC:
		return size >= sizeof(struct sqslow_gc) ? ((const struct sqslow_gc *)data)->ts : 0;
	case SQSLOW_SAMPLE:
		return size >= sizeof(struct sqslow_sample) ? ((const struct sqslow_sample *)data)->ts : 0;
	case SQSLOW_CPU:
		return size >= sizeof(struct sqslow_cpu) ? ((const struct sqslow_cpu *)data)->ts : 0;
	}
	return 0;
}

void sqslow_replay_feed(struct sqslow_replay *r, const void *data, size_t size)
{
	const struct sqslow_head *h = data;

	if (!sqslow_msg_ts(data, size)) {
		r->malformed++;
		return;
	}
	switch (h->kind) {
	case SQSLOW_BATCH: {
		const struct sqslow_batch *b = data;
		const SqEventRecord *rec = (const SqEventRecord *)(b + 1);
		struct vm *v = vm_of(r, h->pid);

		for (__u32 i = 0; v && i < b->n; i++)
			if (rec[i].ts >= r->since) {
				cpu_edges_until(r, v, rec[i].ts);
				on_record(r, v, &rec[i]);
			}
		break;
	}
	case SQSLOW_GC: {
		struct vm *v = vm_of(r, h->pid);

		if (v)
			cpu_edges_until(r, v, ((const struct sqslow_gc *)data)->ts);
		on_gc(r, data);
		break;
	}
	case SQSLOW_CPU: {
		struct vm *v = vm_of(r, h->pid);

		if (v && ((const struct sqslow_cpu *)data)->ts >= r->since)
			cpu_edge_later(r, v, data);
		break;
	}
	case SQSLOW_SAMPLE:
		if (r->sink.sample && ((const struct sqslow_sample *)data)->ts >= r->since)
			r->sink.sample(r->sink.ctx, data);
		break;
	}
}

struct sqslow_replay *sqslow_replay_new(__u64 since_ns, const struct sqslow_sink *sink)
{
	struct sqslow_replay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->since = since_ns;
	if (sink)
		r->sink = *sink;
	return r;
}

__u64 sqslow_replay_oldest_open(const struct sqslow_replay *r)
{
	__u64 oldest = ~0ULL;

	for (int b = 0; b < BUCKETS; b++)
		for (const struct proc *p = r->buckets[b]; p; p = p->next)
			if (p->req && p->req->begin_ns < oldest)
				oldest = p->req->begin_ns;
	return oldest;
}

void sqslow_replay_close(struct sqslow_replay *r, __u64 ts)
{
	for (int i = 0; i < r->nvms; i++)
		cpu_edges_until(r, &r->vms[i], ts);
	for (int b = 0; b < BUCKETS; b++)
		for (struct proc *p = r->buckets[b]; p; p = p->next)
			if (p->state != SQ_GREEN_UNKNOWN && p->state < SQSLOW_NSTATES && ts > p->since) {
				if (r->sink.slice)
					r->sink.slice(r->sink.ctx, p->pid, p->id, p->state, p->since, ts, &p->wait);
				p->since = ts;
			}
}

__u64 sqslow_replay_unseen(const struct sqslow_replay *r)
{
	return r->unseen;
}

__u64 sqslow_replay_malformed(const struct sqslow_replay *r)
{
	return r->malformed;
}

__u64 sqslow_replay_reordered(const struct sqslow_replay *r)
{
	return r->reordered;
}

void sqslow_replay_free(struct sqslow_replay *r)
{
	if (!r)
		return;
	for (int b = 0; b < BUCKETS; b++)
		while (r->buckets[b]) {
			struct proc *p = r->buckets[b];
			r->buckets[b] = p->next;
			free(p->req);
			free(p);
		}
	free(r);
}

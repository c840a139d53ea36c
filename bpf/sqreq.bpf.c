// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqreq.bpf.c - requests of sqvm processes (request__begin to request__end), per route:
 * counts, the latency as a histogram, and where each request's time went: its process
 * running (CPU), ready to run (RUNQ), blocked on I/O, a Semaphore or a Delay, or paused
 * by a collection while it ran (GC). The process's states are bpf/sqgreen.bpf.h's;
 * every interval between a request's begin and end is charged to the one state its
 * process was in, so the parts add up to the latency. Allocations are the VM's totals
 * (read through the debug offsets) while the request's process ran. All of it is
 * aggregated here; --slowest also sends one record per request, with the methods that
 * took most of it (CPU samples, and waits by the method that waited). */
#include "sqvm.bpf.h"
#include "sqgreen.bpf.h"
#include "sqrequest.bpf.h"
#include "sqslots.bpf.h"
#include "sqbatch.bpf.h"
#include "sqreq.h"

const volatile bool records = false;	/* --slowest */
const volatile __u64 sample_ns = 0;	/* a CPU sample's weight: 1 s / the rate */
const volatile __u32 only_pid = 0;	/* -p: CPU samples of this process only */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQREQ_MAX_ROUTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sqreq_key);
	__type(value, struct sqreq_route);
} routes SEC(".maps");

/* The request a process has open (bpf/sqrequest.bpf.h pairs begins and ends). */
struct open_req {
	struct sq_request req;
	__u64 state_ns[SQ_GREEN_NSTATES];
	__u64 allocations, bytes;	/* while it ran, up to the last mark */
	__u64 mark_objects, mark_bytes;	/* the VM's totals when it last began to run */
	__u32 marked;
	__u32 pad;
	__u64 wait_method;		/* the method it waits in now */
	struct sqreq_method top[SQREQ_TOP_METHODS];
};

/* Looked up on every record: a slot table (bpf/sqslots.bpf.h), open_find(pid, id). */
struct open_slot {
	struct sq_slot h;
	struct open_req v;
};

SQ_SLOT_MAPS(open_slots, open_spill, open_spilled, struct open_slot, SQ_GREEN_SLOTS, SQREQ_MAX_OPEN)

static __always_inline struct open_req *open_find(__u32 pid, __u64 id)
{
	return sq_slots_find(&open_slots, &open_spill, &open_spilled, SQ_GREEN_SLOTS, pid, id);
}

static __always_inline struct open_req *open_insert(__u32 pid, __u64 id, const struct open_req *init)
{
	return sq_slots_insert(&open_slots, &open_spill, &open_spilled, SQ_GREEN_SLOTS, sizeof(*init), pid, id, init);
}

static __always_inline void open_delete(__u32 pid, __u64 id)
{
	sq_slots_delete(&open_slots, &open_spill, &open_spilled, SQ_GREEN_SLOTS, pid, id);
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sqreq_route);
} zero_route SEC(".maps");

__u64 lost = 0;		/* requests that found no room in a map, or records in the ring buffer */
__u64 nested = 0;	/* requests begun while their process had one open: not followed */
__u64 unseen = 0;	/* requests ended that began before tracing did */

/* Adds ns to method m's share in top (a request's): to its slot, a free one, or the smallest one's if
 * ns is more (so the shares kept are the largest, roughly). */
static __always_inline void add_method(struct sqreq_method *top, __u64 m, __u64 ns)
{
	__u32 min = 0;

	if (!m)
		return;
	for (__u32 i = 0; i < SQREQ_TOP_METHODS; i++) {
		if (top[i].method == m || !top[i].method) {
			top[i].method = m;
			top[i].ns += ns;
			return;
		}
		if (top[i].ns < top[min].ns)
			min = i;
	}
	if (min < SQREQ_TOP_METHODS && ns > top[min].ns) {
		top[min].method = m;
		top[min].ns = ns;
	}
}

/* The innermost method of the running process of VM pid (0: unknown), its name kept. */
static __always_inline __u64 running_method(__u32 pid)
{
	struct sq_vm_offsets *vm = bpf_map_lookup_elem(&vms, &pid);
	__u64 m[1] = {};

	if (!vm || !sq_walk_methods(vm, m, 1, 1))
		return 0;
	sq_remember_method(pid, m[0], vm->method_print_name);
	return m[0];
}

/* The VM's allocation totals at an event: a record's (SqEvAllocs), or read now (ok
 * false: unknown). */
struct allocs {
	__u64 objects, bytes;
	bool ok;
};

static __always_inline struct allocs allocs_of(const SqEvAllocs *t)
{
	struct allocs a = { .objects = t->objects, .bytes = t->bytes, .ok = true };

	return a;
}

static __always_inline struct allocs allocs_now(__u32 pid)
{
	struct sq_vm_offsets *vm = bpf_map_lookup_elem(&vms, &pid);
	struct allocs a = {};

	a.ok = vm && sq_read_allocs(vm, &a.objects, &a.bytes);
	return a;
}

/* r's process begins (mark) or stops (settle) running: its allocations in between. */
static __always_inline void alloc_edge(struct open_req *r, bool mark, const struct allocs *a)
{
	__u64 objects = a->objects, bytes = a->bytes;

	if (!a->ok)
		return;
	if (!mark && r->marked) {
		r->allocations += objects - r->mark_objects;
		r->bytes += bytes - r->mark_bytes;
	}
	r->marked = mark;
	r->mark_objects = objects;
	r->mark_bytes = bytes;
}

/* ns spent in state from goes to r (and to the method it waited in, for a wait). */
static __always_inline void charge(struct open_req *r, __u32 from, __u64 ns)
{
	if (from < SQ_GREEN_NSTATES)
		r->state_ns[from] += ns;
	if (sq_green_waiting(from)) {
		add_method(r->top, r->wait_method, ns);
		r->wait_method = 0;
	}
}

/* Process id of VM pid enters state to: the time in the state it leaves goes to its
 * open request. Only a process with a request open has a state here (on_begin gives it
 * one, on_end takes it away): req__batch has the records of those alone, and the
 * others' time is no request's. Verified once (bpf/sqvm.bpf.h): inlined in each of its
 * six callers, its paths were walked again in each of theirs. */
SQ_VERIFIED_ONCE int move(__u32 pid, __u64 id, __u32 to, __u64 now, const struct allocs *a)
{
	__u64 ns;
	__u32 from;
	struct open_req *r = open_find(pid, id);

	if (!r || !a)
		return 0;
	from = sq_green_move(pid, id, to, now, &ns);
	charge(r, from, ns);
	if (sq_green_runs(from) && !sq_green_runs(to))
		alloc_edge(r, false, a);
	else if (!sq_green_runs(from) && sq_green_runs(to))
		alloc_edge(r, true, a);
	return 0;
}

/* The slot of the log-linear histogram (sqreq.h). */
static __always_inline __u32 fine_slot(__u64 v)
{
	__u64 e, slot;	/* 64-bit: see sq_hist_slot */

	if (v < 16)
		return v;
	e = sq_log2(v);
	slot = (e - 3) * 16 + ((v >> (e - 4)) & 15);
	return slot < SQREQ_FINE_SLOTS ? slot : SQREQ_FINE_SLOTS - 1;
}

/* The records are the probes' events, handled in order, each with its own time and the
 * VM's allocation totals when it happened (the batch arrives later). */
struct batch_state {
	__u32 pid, tid;
	struct sq_green_running cur;	/* the thread's running process (bpf/sqgreen.bpf.h) */
};

/* A fresh open request, built off the stack (it is larger than BPF's stack allows): all
 * zeros but its sq_request, which on_begin sets each time (nothing else writes it, so it
 * is not cleared again: a request costs one copy of it, into its slot). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct open_req);
} fresh_req SEC(".maps");

/* --slowest: the CPU samples of a request whose begin the VM holds back while its
 * process runs (probes/README.md), which has no open request here yet: by its id, until
 * its SQ_EV_REQUEST_RUN or its late begin takes them (an LRU map: those of a request
 * whose record this tool never sees go). */
struct held_key {
	__u32 pid;
	__u32 pad;
	__u64 id;
};

struct held_top {
	struct sqreq_method top[SQREQ_TOP_METHODS];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct held_key);
	__type(value, struct held_top);
} held_tops SEC(".maps");

/* The samples of request id of VM pid while its begin was held, into top (NULL: the
 * request is not followed, they go). top is not yet where the sampler writes. */
static __always_inline void take_held(__u32 pid, __u64 id, struct sqreq_method *top)
{
	struct held_key k = { .pid = pid, .id = id };
	struct held_top *h;

	if (!records || !(h = bpf_map_lookup_elem(&held_tops, &k)))
		return;
	if (top)
		__builtin_memcpy(top, h->top, sizeof(h->top));
	bpf_map_delete_elem(&held_tops, &k);
}

/* request__begin: sqrequest.bpf.h's pairing rules (sq_request_may_open), on the slot
 * table. */
static __always_inline void on_begin(struct batch_state *b, const SqEventRecord *rec)
{
	__u64 id = rec->req.id, route = rec->req.route, process = rec->req.process, now = rec->ts, prev, ns;
	__u32 pid = b->pid, zero = 0;
	struct allocs a = allocs_of(&rec->req.allocs);
	struct open_req *fresh = bpf_map_lookup_elem(&fresh_req, &zero), *r = open_find(pid, process);

	if (!fresh)
		return;
	/* its samples while the VM held its begin, into its slot with the rest (before the
	 * sampler can find the slot) */
	take_held(pid, id, r ? 0 : fresh->top);
	if (!sq_request_may_open(r, &nested))
		return;
	/* The process that begins a request runs: so the tool learns it if it attached
	 * while the process was running. Its time before now is no request's. */
	sq_green_activate_in(&b->cur, process, &prev);
	if (prev)
		move(pid, prev, SQ_GREEN_UNKNOWN, now, &a);
	fresh->req.id = id;
	fresh->req.route = route;
	fresh->req.begin_ns = now;
	r = open_insert(pid, process, fresh);
	__builtin_memset(fresh->top, 0, sizeof(fresh->top));
	if (!r) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	sq_green_move(pid, process, SQ_GREEN_RUNNING, now, &ns);
	alloc_edge(r, true, &a);
}

/* --slowest: the trace context of the requests that have one, from its record (which
 * comes right before the request's begin or run) until the request ends. LRU: one whose
 * end the tool never sees is pushed out. */
struct trace_key {
	__u32 pid;
	__u32 pad;
	__u64 id;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SQREQ_MAX_OPEN);
	__type(key, struct trace_key);
	__type(value, struct sqreq_trace);
} traces SEC(".maps");

static __always_inline void on_trace(struct batch_state *b, const SqEventRecord *rec)
{
	struct trace_key k = { .pid = b->pid, .id = rec->trace.id };
	struct sqreq_trace t = { .trace_hi = rec->trace.trace_hi, .trace_lo = rec->trace.trace_lo,
				 .parent = rec->trace.parent, .span = rec->trace.span, .flags = rec->arg };

	if (records)
		bpf_map_update_elem(&traces, &k, &t, BPF_ANY);
}

static __always_inline void record(__u32 pid, __u64 process, struct open_req *r, int status, __u64 lat)
{
	struct trace_key k = { .pid = pid, .id = r->req.id };
	struct sqreq_trace *t = bpf_map_lookup_elem(&traces, &k);
	struct sqreq_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	e->pid = pid;
	e->status = status;
	e->id = r->req.id;
	e->route = r->req.route;
	e->process = process;
	e->begin_ns = r->req.begin_ns;
	e->latency_ns = lat;
	for (int i = 0; i < SQ_GREEN_NSTATES; i++)
		e->state_ns[i] = r->state_ns[i];
	e->allocations = r->allocations;
	e->bytes = r->bytes;
	for (int i = 0; i < SQREQ_TOP_METHODS; i++)
		e->top[i] = r->top[i];
	if (t) {
		e->trace = *t;
		bpf_map_delete_elem(&traces, &k);
	} else {
		__builtin_memset(&e->trace, 0, sizeof(e->trace));
	}
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void aggregate(__u32 pid, struct open_req *r, int status, __u64 lat)
{
	struct sqreq_key k = { .pid = pid, .route = r->req.route };
	struct sqreq_route *s;
	bool created = false;
	__u32 zero = 0;
	void *z = bpf_map_lookup_elem(&zero_route, &zero);

	if (!z)
		return;
	s = sq_lookup_or_init(&routes, &k, z, &created);
	if (!s) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	if (created)
		sq_remember_name(pid, r->req.route, (const void *)r->req.route);
	/* Plain adds: a route's row is one VM's (its pid is in the key), and each VM has
	 * one thread that runs Smalltalk, so one CPU at a time writes it. */
	s->count++;
	if (status >= 500 || status < 0)
		s->errors++;
	s->total_ns += lat;
	if (lat > s->max_ns)
		s->max_ns = lat;
	for (int i = 0; i < SQ_GREEN_NSTATES; i++)
		s->state_ns[i] += r->state_ns[i];
	s->allocations += r->allocations;
	s->bytes += r->bytes;
	__u32 h = sq_hist_slot(lat / 1000), f = fine_slot(lat);

	/* They are in range; the barriers keep the checks, which the verifier needs, from
	 * being optimized away. */
	asm volatile("" : "+r"(h));
	asm volatile("" : "+r"(f));
	if (h < SQ_MAX_SLOTS)
		s->slots[h]++;
	if (f < SQREQ_FINE_SLOTS)
		s->fine[f]++;
}

/* request__end: the owner's open request, charged up to now; NULL if the tool has none
 * for it (it began before the tool attached, or was not followed). */
static __always_inline struct open_req *ended(struct batch_state *b, const SqEventRecord *rec)
{
	__u64 id = rec->req.id, process = rec->req.process, now = rec->ts;
	__u32 pid = b->pid;
	struct allocs a = allocs_of(&rec->req.allocs);
	struct open_req *r = open_find(pid, process);
	struct sq_green *g;
	__u32 st;

	if (!sq_request_end_of(r ? &r->req : 0, id, &unseen))
		return 0;
	/* Its time up to now, in the state it is in (it may be another process that ends
	 * it, while the owner waits: then where it waits too), and its allocations if it
	 * runs: what move() to the same state would charge, from the state found once. */
	g = green_find(pid, process);
	if (g && (st = g->state) != SQ_GREEN_UNKNOWN) {
		asm volatile("" : "+r"(st));	/* the verifier checks the bound on the register used */
		charge(r, st, now - g->since_ns);
	}
	if (r->marked)
		alloc_edge(r, false, &a);
	return r;
}

/* A request that ran from its begin to its end (SQ_EV_REQUEST_RUN), as an open request
 * in a scratch: all of it CPU, its allocations in the record; --slowest's methods are
 * the samples cpu_sample took while the VM held its begin. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct open_req);
} run_req SEC(".maps");

static __always_inline struct open_req *ran(struct batch_state *b, const SqEventRecord *rec)
{
	__u64 id = rec->req.id, process = rec->req.process, begin = rec->req.began, prev;
	__u32 pid = b->pid, zero = 0;
	struct allocs unknown = {};
	struct open_req *r = bpf_map_lookup_elem(&run_req, &zero);
	struct open_req *inside;
	bool before;

	if (!r)
		return 0;
	before = begin < sq_batch_since_ns;	/* a tool before this one saw it begin */
	inside = open_find(pid, process);	/* in one that is followed: as on_begin */
	__builtin_memset(r->top, 0, sizeof(r->top));
	take_held(pid, id, before || inside ? 0 : r->top);
	if (before) {
		__sync_fetch_and_add(&unseen, 1);
		return 0;
	}
	if (!sq_request_may_open(inside, &nested))
		return 0;
	/* It ran: so the tool learns it if it attached while the process was running. */
	sq_green_activate_in(&b->cur, process, &prev);
	if (prev)
		move(pid, prev, SQ_GREEN_UNKNOWN, begin, &unknown);
	r->req.id = id;
	r->req.route = rec->req.route;
	r->req.begin_ns = begin;
	for (int i = 0; i < SQ_GREEN_NSTATES; i++)
		r->state_ns[i] = 0;
	r->state_ns[SQ_GREEN_RUNNING] = rec->ts - begin;
	r->allocations = rec->req.allocs.objects;
	r->bytes = rec->req.allocs.bytes;
	return r;
}

/* request__end or a whole request (SQ_EV_REQUEST_RUN): one call site of aggregate()
 * and record(). Verified once (bpf/sqvm.bpf.h), on its own rather than on every path
 * of on_record's switch that reaches it. */
SQ_VERIFIED_ONCE int on_end(struct batch_state *b, const SqEventRecord *rec)
{
	if (!b || !rec)
		return 0;
	bool run = rec->kind == SQ_EV_REQUEST_RUN;
	struct open_req *r = run ? ran(b, rec) : ended(b, rec);
	__u64 process = rec->req.process, lat;
	int status = (int)rec->arg;

	if (!r)
		return 0;
	lat = rec->ts - r->req.begin_ns;
	aggregate(b->pid, r, status, lat);
	if (records)
		record(b->pid, process, r, status, lat);
	if (!run) {
		open_delete(b->pid, process);
		green_delete(b->pid, process);
	}
	return 0;
}

static __always_inline void on_activate(struct batch_state *b, const SqEventRecord *rec)
{
	__u64 id = rec->process.id, prev;
	struct allocs a = allocs_of(&rec->process.allocs);

	sq_green_activate_in(&b->cur, id, &prev);
	if (prev)
		move(b->pid, prev, SQ_GREEN_UNKNOWN, rec->ts, &a);
	move(b->pid, id, SQ_GREEN_RUNNING, rec->ts, &a);
}

/* The method a wait's record names, its name kept; 0: unknown. */
static __always_inline __u64 wait_method(__u32 pid, const SqEventRecord *rec)
{
	struct sq_vm_offsets *vm = bpf_map_lookup_elem(&vms, &pid);

	if (!vm || !rec->process.method)
		return 0;
	sq_remember_method(pid, rec->process.method, vm->method_print_name);
	return rec->process.method;
}

/* id stops running (if it was) and enters state to; a wait remembers where it waits. */
static __always_inline void stop_into(struct batch_state *b, const SqEventRecord *rec, __u32 to, bool wait)
{
	struct allocs a = allocs_of(&rec->process.allocs);
	__u64 id = rec->process.id;
	struct open_req *r;

	sq_green_stop_in(&b->cur, id);
	move(b->pid, id, to, rec->ts, &a);
	if (wait && records && (r = open_find(b->pid, id)))
		r->wait_method = wait_method(b->pid, rec);
}

static __always_inline void on_exit(struct batch_state *b, const SqEventRecord *rec)
{
	stop_into(b, rec, SQ_GREEN_NSTATES, false);
	open_delete(b->pid, rec->process.id);	/* request__end (status -1) came first */
}

static long on_record(__u32 i, void *ctx)
{
	const SqEventRecord *r = sq_batch_record(i);
	struct batch_state *b = ctx;
	__u64 id;
	__u32 to;

	if (!r)
		return 1;
	if (sq_green_transition(r, &id, &to)) {
		if (to == SQ_GREEN_RUNNING)
			on_activate(b, r);
		else if (to == SQ_GREEN_NSTATES)
			on_exit(b, r);
		else
			stop_into(b, r, to, sq_green_waiting(to));
		return 0;
	}
	switch (r->kind) {
	case SQ_EV_REQUEST_BEGIN:
		on_begin(b, r);
		break;
	case SQ_EV_REQUEST_TRACE:
		on_trace(b, r);
		break;
	case SQ_EV_REQUEST_END:
	case SQ_EV_REQUEST_RUN:
		on_end(b, r);
		break;
	}
	return 0;
}

/* squeak:req__batch: request__begin, request__end and the scheduler's records of the
 * processes with a request open (sched__batch's, when a tool has that enabled too). */
SEC("usdt")
int BPF_USDT(req_batch, __u64 records, __u32 count)
{
	__u64 pt = bpf_get_current_pid_tgid();
	struct batch_state b = { .pid = pt >> 32, .tid = (__u32)pt };
	__u32 n = sq_batch_load(records, count);

	if (!n)
		return 0;
	sq_green_running_load(b.tid, &b.cur);
	bpf_loop(n, on_record, &b, 0);
	sq_green_running_store(b.tid, &b.cur);
	return 0;
}

static __always_inline int gc_edge(bool begin)
{
	__u64 pt = bpf_get_current_pid_tgid(), id;

	struct allocs a = allocs_now(pt >> 32);	/* unused: a pause is in the run */

	if (sq_green_current((__u32)pt, &id))
		move(pt >> 32, id, begin ? SQ_GREEN_GC : SQ_GREEN_RUNNING, bpf_ktime_get_ns(), &a);
	return 0;
}

SEC("usdt")
int BPF_USDT(gc_begin) { return gc_edge(true); }

SEC("usdt")
int BPF_USDT(gc_end) { return gc_edge(false); }

SEC("usdt")
int BPF_USDT(vm_start, char *version, __u64 offsets)
{
	sq_learn_vm(offsets);
	return 0;
}

/* The samples of the request process id (at proc) of VM pid runs while the VM holds its
 * begin back (NULL: none held). */
static __always_inline struct sqreq_method *held_top(struct sq_vm_offsets *vm, __u32 pid, __u64 proc)
{
	struct held_key k = { .pid = pid };	/* pad zeroed: the key is hashed whole */
	struct held_top zero = {}, *h;

	if (!vm->process_request_pending ||	/* a VM older than held requests */
	    bpf_probe_read_user(&k.id, sizeof(k.id), (void *)(proc + vm->process_request_pending)) || !k.id)
		return 0;
	h = sq_lookup_or_init(&held_tops, &k, &zero, NULL);
	return h ? h->top : 0;
}

/* --slowest: a CPU sample of a VM thread running a process with an open request goes
 * to the request's share of its innermost method (a held one's: held_top). */
SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pt = bpf_get_current_pid_tgid(), id, proc;
	__u32 pid = pt >> 32;
	struct sq_vm_offsets *vm;
	struct sqreq_method *top;
	struct open_req *r;

	if ((only_pid && pid != only_pid) || !(vm = bpf_map_lookup_elem(&vms, &pid)) || !sq_current_process(vm, &id, &proc))
		return 0;
	/* a held request first: the open one may have ended already (its batch comes late) */
	top = held_top(vm, pid, proc);
	if (!top && (r = open_find(pid, id)))
		top = r->top;
	if (top)
		add_method(top, running_method(pid), sample_ns);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

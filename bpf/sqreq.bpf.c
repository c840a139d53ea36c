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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQREQ_MAX_OPEN);
	__type(key, struct sq_request_key);
	__type(value, struct open_req);
} open_reqs SEC(".maps");

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

static __always_inline struct open_req *open_of(__u32 pid, __u64 id)
{
	struct sq_request_key k = sq_request_key(pid, id);

	return bpf_map_lookup_elem(&open_reqs, &k);
}

static __always_inline bool in_run(__u32 state)
{
	return state == SQ_GREEN_RUNNING || state == SQ_GREEN_GC;
}

/* Adds ns to method m's share of r: to its slot, a free one, or the smallest one's if
 * ns is more (so the shares kept are the largest, roughly). */
static __always_inline void add_method(struct open_req *r, __u64 m, __u64 ns)
{
	__u32 min = 0;

	if (!m)
		return;
	for (__u32 i = 0; i < SQREQ_TOP_METHODS; i++) {
		if (r->top[i].method == m || !r->top[i].method) {
			r->top[i].method = m;
			r->top[i].ns += ns;
			return;
		}
		if (r->top[i].ns < r->top[min].ns)
			min = i;
	}
	if (min < SQREQ_TOP_METHODS && ns > r->top[min].ns) {
		r->top[min].method = m;
		r->top[min].ns = ns;
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

/* r's process begins (mark) or stops (settle) running: its allocations in between. */
static __always_inline void alloc_edge(__u32 pid, struct open_req *r, bool mark)
{
	struct sq_vm_offsets *vm = bpf_map_lookup_elem(&vms, &pid);
	__u64 objects, bytes;

	if (!vm || !sq_read_allocs(vm, &objects, &bytes))
		return;
	if (!mark && r->marked) {
		r->allocations += objects - r->mark_objects;
		r->bytes += bytes - r->mark_bytes;
	}
	r->marked = mark;
	r->mark_objects = objects;
	r->mark_bytes = bytes;
}

/* Process id of VM pid enters state to: the time in the state it leaves goes to its
 * open request, if it has one. */
static __always_inline void move(__u32 pid, __u64 id, __u32 to, __u64 now)
{
	__u64 ns;
	__u32 from = sq_green_move(pid, id, to, now, &ns);
	struct open_req *r = open_of(pid, id);

	if (!r)
		return;
	if (from < SQ_GREEN_NSTATES)
		r->state_ns[from] += ns;
	if (from == SQ_GREEN_SEMAPHORE || from == SQ_GREEN_DELAY || from == SQ_GREEN_IO) {
		add_method(r, r->wait_method, ns);
		r->wait_method = 0;
	}
	if (in_run(from) && !in_run(to))
		alloc_edge(pid, r, false);
	else if (!in_run(from) && in_run(to))
		alloc_edge(pid, r, true);
}

/* The slot of the log-linear histogram (sqreq.h). */
static __always_inline __u32 fine_slot(__u64 v)
{
	__u32 e, slot;

	if (v < 16)
		return v;
	e = sq_log2(v);
	slot = (e - 3) * 16 + ((v >> (e - 4)) & 15);
	return slot < SQREQ_FINE_SLOTS ? slot : SQREQ_FINE_SLOTS - 1;
}

SEC("usdt")
int BPF_USDT(request_begin, __u64 id, char *route, __u64 process)
{
	__u64 pt = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), prev;
	__u32 pid = pt >> 32, tid = (__u32)pt;
	struct sq_request_key k = sq_request_key(pid, process);
	struct open_req fresh = { .req = { .id = id, .route = (__u64)route, .begin_ns = now } };

	if (!sq_request_may_begin(&open_reqs, &k, &nested))
		return 0;
	/* The process that begins a request runs: so the tool learns it if it attached
	 * while the process was running. Its time before now is no request's. */
	sq_green_activate(tid, process, &prev);
	if (prev)
		move(pid, prev, SQ_GREEN_UNKNOWN, now);
	move(pid, process, SQ_GREEN_RUNNING, now);
	if (bpf_map_update_elem(&open_reqs, &k, &fresh, BPF_ANY)) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	struct open_req *r = open_of(pid, process);
	if (r)
		alloc_edge(pid, r, true);
	return 0;
}

static __always_inline void record(__u32 pid, __u64 process, struct open_req *r, int status, __u64 lat)
{
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
	__sync_fetch_and_add(&s->count, 1);
	if (status >= 500 || status < 0)
		__sync_fetch_and_add(&s->errors, 1);
	__sync_fetch_and_add(&s->total_ns, lat);
	if (lat > s->max_ns)
		s->max_ns = lat;	/* one VM thread per VM: no race */
	for (int i = 0; i < SQ_GREEN_NSTATES; i++)
		__sync_fetch_and_add(&s->state_ns[i], r->state_ns[i]);
	__sync_fetch_and_add(&s->allocations, r->allocations);
	__sync_fetch_and_add(&s->bytes, r->bytes);
	__u32 h = sq_hist_slot(lat / 1000), f = fine_slot(lat);

	/* They are in range; the barriers keep the checks, which the verifier needs, from
	 * being optimized away. */
	asm volatile("" : "+r"(h));
	asm volatile("" : "+r"(f));
	if (h < SQ_MAX_SLOTS)
		__sync_fetch_and_add(&s->slots[h], 1);
	if (f < SQREQ_FINE_SLOTS)
		__sync_fetch_and_add(&s->fine[f], 1);
}

SEC("usdt")
int BPF_USDT(request_end, __u64 id, char *route, __u64 process, int status)
{
	__u64 now = bpf_ktime_get_ns(), lat;
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_green_key k = { .pid = pid, .id = process };
	struct sq_request_key rk = sq_request_key(pid, process);
	struct sq_green *g;
	struct open_req *r = sq_request_ending(&open_reqs, &rk, id, &unseen);

	if (!r)
		return 0;
	/* Its time up to now, in the state it is in (it may be another process that ends
	 * it, while the owner waits), and its allocations if it runs. */
	g = bpf_map_lookup_elem(&green_states, &k);
	move(pid, process, g ? g->state : SQ_GREEN_UNKNOWN, now);
	if (r->marked)
		alloc_edge(pid, r, false);
	lat = now - r->req.begin_ns;
	aggregate(pid, r, status, lat);
	if (records)
		record(pid, process, r, status, lat);
	bpf_map_delete_elem(&open_reqs, &rk);
	return 0;
}

SEC("usdt")
int BPF_USDT(process_activate, __u64 id, char *name, int priority)
{
	__u64 pt = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), prev;
	__u32 pid = pt >> 32;

	sq_green_activate((__u32)pt, id, &prev);
	if (prev)
		move(pid, prev, SQ_GREEN_UNKNOWN, now);
	move(pid, id, SQ_GREEN_RUNNING, now);
	return 0;
}

/* id stops running (if it was) and enters state to; a wait remembers where it waits. */
static __always_inline int stop_into(__u64 id, __u32 to, bool wait)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 pid = pt >> 32;
	struct open_req *r;

	sq_green_stop((__u32)pt, id);
	move(pid, id, to, bpf_ktime_get_ns());
	if (wait && records && (r = open_of(pid, id)))
		r->wait_method = running_method(pid);
	return 0;
}

SEC("usdt")
int BPF_USDT(process_ready, __u64 id, char *name, int reason)
{
	return stop_into(id, SQ_GREEN_READY, false);
}

SEC("usdt")
int BPF_USDT(process_wait, __u64 id, char *name, __u64 semaphore, __u64 timeout)
{
	return stop_into(id, sq_green_wait_state(semaphore), true);
}

SEC("usdt")
int BPF_USDT(io_wait, __u64 id, char *name, int fd, int op, __u64 timeout)
{
	return stop_into(id, SQ_GREEN_IO, true);
}

SEC("usdt")
int BPF_USDT(process_exit, __u64 id, char *name)
{
	struct sq_request_key k = sq_request_key(bpf_get_current_pid_tgid() >> 32, id);

	stop_into(id, SQ_GREEN_NSTATES, false);
	bpf_map_delete_elem(&open_reqs, &k);	/* request__end (status -1) came first */
	return 0;
}

static __always_inline int gc_edge(bool begin)
{
	__u64 pt = bpf_get_current_pid_tgid(), id;

	if (sq_green_current((__u32)pt, &id))
		move(pt >> 32, id, begin ? SQ_GREEN_GC : SQ_GREEN_RUNNING, bpf_ktime_get_ns());
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

/* --slowest: a CPU sample of a VM thread running a process with an open request goes
 * to the request's share of its innermost method. */
SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pt = bpf_get_current_pid_tgid(), id;
	__u32 pid = pt >> 32;
	struct open_req *r;

	if ((only_pid && pid != only_pid) || !sq_green_current((__u32)pt, &id) || !(r = open_of(pid, id)))
		return 0;
	add_method(r, running_method(pid), sample_ns);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqflow.bpf.c - method (and block) entries and returns of sqvm processes, as events in a
 * ring buffer, with each call's duration worked out here. The depth is the VM's own (the
 * probes' depth argument: frames on the Smalltalk stack), so it is right from the first
 * event even when tracing starts deep in a running program. Filters by class and
 * selector prefix and by depth run here too, so what user space does not want is never
 * copied to it. */
#include "sqvm.bpf.h"
#include "sqgreen.bpf.h"
#include "sqrequest.bpf.h"
#include "sqbatch.bpf.h"
#include "sqflow.h"

/* Options, set by user space before load. */
const volatile char class_prefix[SQ_NAME_LEN] = {};	/* -C: receiver or defining class */
const volatile __u32 class_prefix_len = 0;
const volatile char sel_prefix[SQ_NAME_LEN] = {};	/* -M: selector */
const volatile __u32 sel_prefix_len = 0;
const volatile __u32 max_depth = 0;			/* -D: 0 means no limit */

/* An activation that has entered and not returned yet: keyed by thread and frame address,
 * so returns pair with their own entries however calls nest or unwind. LRU: activations
 * whose return is never seen (the process died) age out, and so do the outermost ones of a
 * recursion deeper than the map (their returns then show no duration). The size is a
 * start-up cost too: creating 16k preallocated entries takes ~5 ms, 64k ~20 ms. */
struct frame_key {
	__u32 tid;
	__u32 pad;
	__u64 frame;
};

struct frame_info {
	__u64 ts_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct frame_key);
	__type(value, struct frame_info);
} frames SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);	/* resized by user space (--buffer) */
} rb SEC(".maps");

/* An event is built here before the filters decide; 200 bytes is too much for the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sqflow_event);
} scratch SEC(".maps");

/* The green processes' names, for the tracks user space names. LRU: a VM that makes
 * processes without end pushes out the oldest names, not the new ones. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sqflow_proc_key);
	__type(value, char[SQ_NAME_LEN]);
} proc_names SEC(".maps");

__u64 lost = 0;		/* events the ring buffer had no room for */

/* A name the event's copy cut short (len: what the copy read) is kept longer in the
 * names map (sqvm.bpf.h): user space completes it from there when the VM has exited
 * before it reads the event, as it may right after its last call. */
static __always_inline void remember_long(long len, const char *str)
{
	if (len == SQ_NAME_LEN)
		sq_remember_name(bpf_get_current_pid_tgid() >> 32, (__u64)str, str);
}

/* Fill e's names and apply -C and -M; true if the event is wanted. */
static __always_inline bool read_and_filter(struct sqflow_event *e, const char *recv,
					     const char *sel, const char *def)
{
	long recv_len = bpf_probe_read_user_str(e->recv_class, sizeof(e->recv_class), recv);
	long sel_len = bpf_probe_read_user_str(e->selector, sizeof(e->selector), sel);
	long def_len = bpf_probe_read_user_str(e->def_class, sizeof(e->def_class), def);

	if (sel_prefix_len && !sq_has_prefix(e->selector, sel_prefix, sel_prefix_len))
		return false;
	if (class_prefix_len && !sq_has_prefix(e->recv_class, class_prefix, class_prefix_len) &&
	    !sq_has_prefix(e->def_class, class_prefix, class_prefix_len))
		return false;
	remember_long(recv_len, recv);
	remember_long(sel_len, sel);
	remember_long(def_len, def);
	return true;
}

/* The green process whose frames run on thread tid (0: not known yet). Green processes
 * interleave on the VM thread, so user space pairs entries and returns per process. */
static __always_inline __u64 running_process(__u32 tid)
{
	__u64 id = 0;

	return sq_green_current(tid, &id) ? id : 0;
}

static __always_inline int emit(struct sqflow_event *e)
{
	if (bpf_ringbuf_output(&rb, e, sizeof(*e), 0))
		__sync_fetch_and_add(&lost, 1);
	return 0;
}

static __always_inline int on_entry(const char *recv, const char *sel, const char *def,
				    __u64 frame, __u32 vm_depth, __u8 block)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0, depth = vm_depth ? vm_depth - 1 : 0;
	struct frame_key key = { .tid = tid, .frame = frame };
	struct frame_info info = {};
	struct sqflow_event *e;

	info.ts_ns = bpf_ktime_get_ns();
	if (max_depth && depth >= max_depth)
		return 0;
	e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return 0;
	if (!read_and_filter(e, recv, sel, def))
		return 0;
	/* Only wanted calls are remembered: their returns are the only ones to time. */
	bpf_map_update_elem(&frames, &key, &info, BPF_ANY);
	e->ts_ns = info.ts_ns;
	e->duration_ns = 0;
	e->frame = frame;
	e->recv_addr = (__u64)recv;
	e->sel_addr = (__u64)sel;
	e->def_addr = (__u64)def;
	e->pid = id >> 32;
	e->tid = tid;
	e->process = running_process(tid);
	e->depth = depth;
	e->type = SQFLOW_ENTRY;
	e->block = block;
	e->paired = 0;
	return emit(e);
}

static __always_inline int on_return(const char *recv, const char *sel, const char *def,
				     __u64 frame, __u32 vm_depth, __u8 block)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), duration = 0;
	__u32 tid = (__u32)id, zero = 0, depth = vm_depth ? vm_depth - 1 : 0;
	struct frame_key key = { .tid = tid, .frame = frame };
	struct frame_info *info;
	struct sqflow_event *e;
	__u8 paired = 0;

	if (max_depth && depth >= max_depth)
		return 0;
	info = bpf_map_lookup_elem(&frames, &key);
	if (info) {
		duration = now - info->ts_ns;
		paired = 1;
		bpf_map_delete_elem(&frames, &key);
	}
	e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return 0;
	if (!read_and_filter(e, recv, sel, def))
		return 0;
	e->ts_ns = now;
	e->duration_ns = duration;
	e->frame = frame;
	e->recv_addr = (__u64)recv;
	e->sel_addr = (__u64)sel;
	e->def_addr = (__u64)def;
	e->pid = id >> 32;
	e->tid = tid;
	e->process = running_process(tid);
	e->depth = depth;
	e->type = SQFLOW_RETURN;
	e->block = block;
	e->paired = paired;
	return emit(e);
}

SEC("usdt")
int BPF_USDT(method_entry, char *recv, char *sel, char *def, __u64 frame, __u32 depth)
{
	return on_entry(recv, sel, def, frame, depth, 0);
}

SEC("usdt")
int BPF_USDT(method_return, char *recv, char *sel, char *def, __u64 frame, __u32 depth)
{
	return on_return(recv, sel, def, frame, depth, 0);
}

SEC("usdt")
int BPF_USDT(block_entry, char *recv, char *sel, char *def, __u64 frame, __u32 depth)
{
	return on_entry(recv, sel, def, frame, depth, 1);
}

SEC("usdt")
int BPF_USDT(block_return, char *recv, char *sel, char *def, __u64 frame, __u32 depth)
{
	return on_return(recv, sel, def, frame, depth, 1);
}

/* Process id's name, kept the first time a probe names it (a lookup after that). */
static __always_inline void remember_process(__u64 id, const char *name)
{
	struct sqflow_proc_key key = { .pid = bpf_get_current_pid_tgid() >> 32, .id = id };
	char copy[SQ_NAME_LEN] = {};

	if (bpf_map_lookup_elem(&proc_names, &key))
		return;
	bpf_probe_read_user_str(copy, sizeof(copy), name);
	bpf_map_update_elem(&proc_names, &key, copy, BPF_NOEXIST);
}

/* Which process runs: set at each activation, and learnt from the first probe that
 * names the running one, if tracing began after its activation. */
SEC("usdt")
int BPF_USDT(process_activate, __u64 id, char *name, int priority)
{
	__u64 prev;

	sq_green_activate((__u32)bpf_get_current_pid_tgid(), id, &prev);
	remember_process(id, name);
	return 0;
}

SEC("usdt")
int BPF_USDT(process_wait, __u64 id, char *name, __u64 semaphore, __u64 timeout)
{
	sq_green_learn((__u32)bpf_get_current_pid_tgid(), id);
	remember_process(id, name);
	return 0;
}

SEC("usdt")
int BPF_USDT(io_wait, __u64 id, char *name, int fd, int op, __u64 timeout)
{
	sq_green_learn((__u32)bpf_get_current_pid_tgid(), id);
	remember_process(id, name);
	return 0;
}

SEC("usdt")
int BPF_USDT(process_ready, __u64 id, char *name, int reason)
{
	if (reason == 3)	/* the running process yields or is preempted */
		sq_green_learn((__u32)bpf_get_current_pid_tgid(), id);
	remember_process(id, name);
	return 0;
}

/* ===================================================================== */
/* Requests: req__batch's records, as sqreq reads them                   */
/* ===================================================================== */

/* The request each process has open (bpf/sqrequest.bpf.h's rules), and the trace
 * context of the requests that have one, by id, from its record (right before the
 * request's begin or run) until the request ends (LRU: one never ended goes). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sq_request_key);
	__type(value, struct sq_request);
} open_reqs SEC(".maps");

struct trace_key {
	__u32 pid;
	__u32 pad;
	__u64 id;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct trace_key);
	__type(value, SqEvTrace);
} traces SEC(".maps");

__u64 req_nested = 0;	/* begun while their process had one open: not followed */
__u64 req_unseen = 0;	/* ended, begun before tracing did */

struct req_batch_state {
	__u32 pid, tid;
};

/* The whole request r of process, ended at end_ns with status, to user space. */
static __always_inline void emit_request(struct req_batch_state *b, const struct sq_request *r, __u64 process,
					 __u64 end_ns, int status)
{
	struct trace_key k = { .pid = b->pid, .id = r->id };
	SqEvTrace *t = bpf_map_lookup_elem(&traces, &k);
	struct sqflow_request *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	e->begin_ns = r->begin_ns;
	e->end_ns = end_ns;
	e->id = r->id;
	e->route_addr = r->route;
	e->process = process;
	e->pid = b->pid;
	e->tid = b->tid;
	e->status = status;
	e->trace_hi = e->trace_lo = e->parent = e->span = 0;
	e->pad = 0;
	if (t) {
		e->trace_hi = t->trace_hi;
		e->trace_lo = t->trace_lo;
		e->parent = t->parent;
		e->span = t->span;
		bpf_map_delete_elem(&traces, &k);
	}
	if (bpf_probe_read_user_str(e->route, sizeof(e->route), (const void *)r->route) == SQ_NAME_LEN)
		sq_remember_name(b->pid, r->route, (const void *)r->route);
	bpf_ringbuf_submit(e, 0);
}

static long on_req_record(__u32 i, void *ctx)
{
	const SqEventRecord *rec = sq_batch_record(i);
	struct req_batch_state *b = ctx;
	struct sq_request_key k;
	struct sq_request r = {}, *open;

	if (!rec)
		return 1;
	switch (rec->kind) {
	case SQ_EV_REQUEST_TRACE: {
		struct trace_key tk = { .pid = b->pid, .id = rec->trace.id };
		SqEvTrace t = rec->trace;

		bpf_map_update_elem(&traces, &tk, &t, BPF_ANY);
		break;
	}
	case SQ_EV_REQUEST_BEGIN:
		k = sq_request_key(b->pid, rec->req.process);
		if (!sq_request_may_begin(&open_reqs, &k, &req_nested))
			break;
		r.id = rec->req.id;
		r.route = rec->req.route;
		r.begin_ns = rec->ts;
		if (bpf_map_update_elem(&open_reqs, &k, &r, BPF_NOEXIST))
			__sync_fetch_and_add(&lost, 1);
		break;
	case SQ_EV_REQUEST_END:
		k = sq_request_key(b->pid, rec->req.process);
		open = sq_request_ending(&open_reqs, &k, rec->req.id, &req_unseen);
		if (!open)
			break;
		r = *open;
		bpf_map_delete_elem(&open_reqs, &k);
		emit_request(b, &r, rec->req.process, rec->ts, (int)rec->arg);
		break;
	case SQ_EV_REQUEST_RUN:
		/* a request that ran whole: as sqreq's ran(), a begin and an end at once */
		k = sq_request_key(b->pid, rec->req.process);
		if (rec->req.began < sq_batch_since_ns) {
			__sync_fetch_and_add(&req_unseen, 1);
			break;
		}
		if (!sq_request_may_begin(&open_reqs, &k, &req_nested))
			break;
		r.id = rec->req.id;
		r.route = rec->req.route;
		r.begin_ns = rec->req.began;
		emit_request(b, &r, rec->req.process, rec->ts, (int)rec->arg);
		break;
	case SQ_EV_PROCESS_EXIT:
		/* request__end (status -1) came first: this forgets one never seen to end */
		k = sq_request_key(b->pid, rec->process.id);
		bpf_map_delete_elem(&open_reqs, &k);
		break;
	}
	return 0;
}

/* squeak:req__batch: the requests' records (and the scheduler's of their processes,
 * which the calls' probes already tell). */
SEC("usdt")
int BPF_USDT(req_batch, __u64 records, __u32 count)
{
	__u64 pt = bpf_get_current_pid_tgid();
	struct req_batch_state b = { .pid = pt >> 32, .tid = (__u32)pt };
	__u32 n = sq_batch_load(records, count);

	if (n)
		bpf_loop(n, on_req_record, &b, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqcalls.bpf.c - per method: calls, inclusive and exclusive (self) time, and optionally
 * a latency histogram and the system calls it made, from the call probes; aggregated
 * here, read by user space at the end or every interval.
 *
 * One timing engine (bpf/sqshadow.bpf.h): each green process's open activations on a
 * shadow stack by depth, with the time the process spent switched out; it says how
 * non-local returns, recursion (a method's total counts its outermost activation only)
 * and green processes are timed, and what becomes of activations deeper than its stack.
 * Two ways feed it the same events:
 *  - call__batch's records (the default: one uprobe hit per batch of up to 256 entries,
 *    returns and process switches, each with its time and its caller's frame);
 *  - with -S, the four per-event call probes and process__activate, so that the
 *    system-call tracepoints find the activation open at the instant of each system
 *    call (the innermost: the top of its process's stack). */
#include "sqvm.bpf.h"
#include "sqcalls.h"
#include "sqbatch.bpf.h"
#include "sqshadow.bpf.h"

/* Options, set by user space before load. */
const volatile bool histograms = false;			/* -L */
const volatile bool millis = false;			/* -m */
const volatile bool syscalls = false;			/* -S */
const volatile __u32 only_pid = 0;			/* -p: for the syscall tracepoints */
const volatile bool edges_on = false;			/* --mse: count caller -> callee */
const volatile bool no_blocks = false;			/* --no-blocks (batches: skip block records) */
const volatile char class_prefix[SQ_NAME_LEN] = {};	/* -C */
const volatile __u32 class_prefix_len = 0;
const volatile char sel_prefix[SQ_NAME_LEN] = {};	/* -M */
const volatile __u32 sel_prefix_len = 0;

/* The green process running on each VM thread (process__activate). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} running SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQCALLS_MAX_METHODS);
	__type(key, struct sqcalls_key);
	__type(value, struct sqcalls_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQCALLS_MAX_METHODS);
	__type(key, struct sqcalls_key);
	__type(value, struct sqcalls_sys);
} sys SEC(".maps");

/* -S: a system call's start, per thread */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} sys_start SEC(".maps");

/* -C/-M: whether a name (by process and address) passes the filter, decided once. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sq_name_key);
	__type(value, __u8);
} passes SEC(".maps");

/* --mse: returns per (caller's method, callee's method). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQCALLS_MAX_EDGES);
	__type(key, struct sqcalls_edge_key);
	__type(value, __u64);
} edges SEC(".maps");

__u64 lost = 0;		/* returns not counted: the stats map was full */
__u64 lost_edges = 0;	/* --mse: calls between methods not counted: the edges map was full */
__u64 deep = 0;		/* returns counted, not timed: deeper than the shadow stack (bpf/sqshadow.bpf.h) */

static __always_inline bool prefix_ok(__u32 pid, __u64 addr, const volatile char *prefix, __u32 len, __u32 kind)
{
	struct sq_name_key k = { .pid = pid, .pad = kind, .addr = addr };
	struct sq_name_copy *buf;
	__u32 zero = 0;
	__u8 *m, ok = 0;

	m = bpf_map_lookup_elem(&passes, &k);
	if (m)
		return *m;
	buf = bpf_map_lookup_elem(&name_scratch, &zero);
	if (!buf)
		return false;
	if (bpf_probe_read_user_str(buf->name, SQ_NAME_LEN, (void *)addr) > 0)
		ok = sq_has_prefix(buf->name, prefix, len);
	bpf_map_update_elem(&passes, &k, &ok, BPF_ANY);
	return ok;
}

/* Does -C/-M let a call of this method on a receiver of class recv through? */
static __always_inline bool wanted(__u32 pid, __u64 def_class, __u64 selector, __u64 recv)
{
	if (sel_prefix_len && !prefix_ok(pid, selector, sel_prefix, sel_prefix_len, 1))
		return false;
	if (class_prefix_len && !prefix_ok(pid, def_class, class_prefix, class_prefix_len, 2) &&
	    !prefix_ok(pid, recv, class_prefix, class_prefix_len, 2))
		return false;
	return true;
}

static __always_inline void count(const struct sqcalls_key *key, __u64 incl, __u64 self, bool inner, bool timed)
{
	static const struct sqcalls_stats zero;
	struct sqcalls_stats *s;
	bool created = false;

	s = sq_lookup_or_init(&stats, key, &zero, &created);
	if (!s) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	if (created) {
		sq_remember_name(key->pid, key->def_class, (const char *)key->def_class);
		sq_remember_name(key->pid, key->selector, (const char *)key->selector);
	}
	__sync_fetch_and_add(&s->count, 1);
	if (!timed) {
		__sync_fetch_and_add(&s->entered_before, 1);
		return;
	}
	__sync_fetch_and_add(&s->self_ns, self);
	if (!inner)
		__sync_fetch_and_add(&s->total_ns, incl);
	if (histograms) {
		__u64 v = millis ? incl / 1000000 : incl / 1000;
		__sync_fetch_and_add(&s->slots[sq_hist_slot(v)], 1);
	}
}

/* --mse: one call from the method of frame's caller to the method of frame (which
 * returns now), both read from the VM's frames: right for calls from methods entered
 * before tracing began too. */
static __always_inline void count_edge_methods(__u32 pid, struct sq_vm_offsets *vm, __u64 caller_m, __u64 callee_m)
{
	struct sqcalls_edge_key k = { .pid = pid, .caller = caller_m, .callee = callee_m };
	__u64 one = 1, *n;

	if (!vm || !caller_m || !callee_m)
		return;		/* the outermost frame: no caller */
	n = bpf_map_lookup_elem(&edges, &k);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return;
	}
	if (bpf_map_update_elem(&edges, &k, &one, BPF_NOEXIST)) {
		if ((n = bpf_map_lookup_elem(&edges, &k)))
			__sync_fetch_and_add(n, 1);	/* another CPU made it first */
		else
			__sync_fetch_and_add(&lost_edges, 1);
		return;
	}
	sq_remember_method(pid, k.caller, vm->method_print_name);
	sq_remember_method(pid, k.callee, vm->method_print_name);
}

/* A return of activation c of VM pid at ts, on stack st (NULL: its process has none):
 * timed if its entry is open there, else counted only (entered before tracing began,
 * or deep). The Methods of the frame and its caller (0: not known) are for --mse. */
static __always_inline void returned(__u32 pid, struct sq_shadow *st, const struct sq_call *c, __u64 ts,
				     __u64 method, __u64 caller_method)
{
	struct sqcalls_key key = { .pid = pid };
	struct sq_closed d = {};
	bool timed = shadow_close(st, c, ts, &d);

	if (!timed) {
		d.recv = c->recv;
		d.def_class = c->def_class;
		d.selector = c->selector;
		d.block = c->block;
	}
	if (!wanted(pid, d.def_class, d.selector, d.recv))
		return;
	if (!timed && c->depth >= SQ_SHADOW_DEPTH)
		__sync_fetch_and_add(&deep, 1);
	key.block = d.block;
	key.def_class = d.def_class;
	key.selector = d.selector;
	count(&key, d.incl_ns, d.self_ns, d.inner, timed);
	if (edges_on)
		count_edge_methods(pid, bpf_map_lookup_elem(&vms, &pid), caller_method, method);
}

/* ===================================================================== */
/* The per-event probes (-S)                                             */
/* ===================================================================== */

/* The green process running on VM thread tid (0: none seen yet). */
static __always_inline __u64 running_on(__u32 tid)
{
	__u64 *proc = bpf_map_lookup_elem(&running, &tid);

	return proc ? *proc : 0;
}

/* The green process running now on VM thread tid of VM pid: as process__activate said or,
 * before the first switch the tool sees, as the VM's current process says (a per-event
 * probe fires in it; a batch's first records may be another's). */
static __always_inline __u64 running_now(__u32 tid, __u32 pid)
{
	__u64 *known = bpf_map_lookup_elem(&running, &tid), proc, id;
	struct sq_vm_offsets *vm;

	if (known)
		return *known;
	vm = bpf_map_lookup_elem(&vms, &pid);
	if (!vm || !sq_current_process(vm, &id, &proc))
		return 0;
	bpf_map_update_elem(&running, &tid, &id, BPF_NOEXIST);
	return id;
}

static __always_inline int on_entry(const char *recv, const char *sel, const char *def, __u64 frame, __u32 depth,
				    __u32 block)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sq_shadow *st = shadow_of((__u32)id, running_now((__u32)id, id >> 32), true);
	struct sq_call c = {
		.recv = (__u64)recv, .def_class = (__u64)def, .selector = (__u64)sel,
		.frame = frame, .depth = depth, .block = block,
	};

	if (st)
		shadow_open(st, &c, bpf_ktime_get_ns());
	return 0;
}

static __always_inline int on_return(const char *recv, const char *sel, const char *def, __u64 frame, __u32 depth,
				     __u32 block)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), caller_m = 0, callee_m = 0;
	__u32 tid = (__u32)id, pid = id >> 32;
	struct sq_vm_offsets *vm = bpf_map_lookup_elem(&vms, &pid);
	struct sq_call c = {
		.recv = (__u64)recv, .def_class = (__u64)def, .selector = (__u64)sel,
		.frame = frame, .depth = depth, .block = block,
	};

	/* the caller's frame and both Methods, from the VM's frames (the batches' records
	 * carry them) */
	if (vm && !bpf_probe_read_user(&c.caller, sizeof(c.caller), (void *)(frame + vm->frame_caller)) && c.caller &&
	    edges_on && !bpf_probe_read_user(&callee_m, sizeof(callee_m), (void *)(frame + vm->frame_method)))
		bpf_probe_read_user(&caller_m, sizeof(caller_m), (void *)(c.caller + vm->frame_method));
	returned(pid, shadow_of(tid, running_now(tid, pid), false), &c, now, callee_m, caller_m);
	return 0;
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

SEC("usdt")
int BPF_USDT(process_activate, __u64 proc, char *name, int priority)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;

	shadow_switch(tid, running_now(tid, id >> 32), proc, bpf_ktime_get_ns());
	bpf_map_update_elem(&running, &tid, &proc, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(vm_start, char *version, __u64 offsets)
{
	sq_learn_vm(offsets);
	return 0;
}

/* -S: system calls, charged to the innermost traced activation of the running process.
 * Not uprobe(2): the trampoline of an optimized uprobe (the VM's probe sites are 5-byte
 * nops) calls it on every hit of our own probes. */
#if defined(__TARGET_ARCH_x86)
#define SQ_NR_UPROBE 336
#else
#define SQ_NR_UPROBE -1
#endif
SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now;
	__u32 tid = (__u32)id, pid = id >> 32;

	if (!syscalls || ctx->id == SQ_NR_UPROBE || (only_pid && pid != only_pid) || !bpf_map_lookup_elem(&vms, &pid))
		return 0;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&sys_start, &tid, &now, BPF_ANY);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit(void *ctx)
{
	static const struct sqcalls_sys zero;
	__u64 id = bpf_get_current_pid_tgid(), *start, proc = 0, fp = 0;
	__u32 tid = (__u32)id, pid = id >> 32;
	struct sqcalls_key key = { .pid = pid };
	const struct sq_open *o;
	struct sq_vm_offsets *vm;
	struct sqcalls_sys *s;
	__u64 dur;

	if (!syscalls || !(start = bpf_map_lookup_elem(&sys_start, &tid)))
		return 0;
	dur = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&sys_start, &tid);
	vm = bpf_map_lookup_elem(&vms, &pid);
	if (!vm || !(fp = sq_current_frame(vm, &proc)))
		return 0;
	o = shadow_innermost(shadow_of(tid, running_now(tid, pid), false), fp);
	if (!o || !wanted(pid, o->def_class, o->selector, o->recv))
		return 0;
	key.block = o->block;
	key.def_class = o->def_class;
	key.selector = o->selector;
	s = sq_lookup_or_init(&sys, &key, &zero, NULL);
	if (!s)
		return 0;
	__sync_fetch_and_add(&s->count, 1);
	__sync_fetch_and_add(&s->total_ns, dur);
	return 0;
}

/* ===================================================================== */
/* call__batch                                                           */
/* ===================================================================== */

/* What a batch's records share: the thread, and the process running on it. (Its stack
 * is looked up per record: a pointer kept here would multiply the states the verifier
 * walks the record callback in, which it verifies until they converge.) */
struct batch_state {
	__u32 tid, pid;
	__u64 proc;
};

static __always_inline void batch_call(const SqEventRecord *r, __u32 block, struct sq_call *c)
{
	c->recv = r->call.recv_cls;
	c->def_class = r->call.def_cls;
	c->selector = r->call.selector;
	c->frame = r->call.frame;
	c->caller = r->call.caller;
	c->depth = r->arg;
	c->block = block;
}

static __always_inline void batch_entry(struct batch_state *b, const SqEventRecord *r, __u32 block)
{
	struct sq_shadow *st = shadow_of(b->tid, b->proc, true);
	struct sq_call c;

	if (!st)
		return;
	batch_call(r, block, &c);
	shadow_open(st, &c, r->ts);
}

static __always_inline void batch_return(struct batch_state *b, const SqEventRecord *r, __u32 block)
{
	struct sq_call c;

	batch_call(r, block, &c);
	returned(b->pid, shadow_of(b->tid, b->proc, false), &c, r->ts, r->call.method, r->call.caller_method);
}

/* A process switch at r->ts. */
static __always_inline void batch_activate(struct batch_state *b, const SqEventRecord *r)
{
	shadow_switch(b->tid, b->proc, r->process.id, r->ts);
	b->proc = r->process.id;
	bpf_map_update_elem(&running, &b->tid, &b->proc, BPF_ANY);
}

static long on_record(__u32 i, void *ctx)
{
	const SqEventRecord *r = sq_batch_record(i);
	struct batch_state *b = ctx;

	if (!r)
		return 1;
	switch (r->kind) {
	case SQ_EV_METHOD_ENTRY:
		batch_entry(b, r, 0);
		break;
	case SQ_EV_METHOD_RETURN:
		batch_return(b, r, 0);
		break;
	case SQ_EV_BLOCK_ENTRY:
		if (!no_blocks)
			batch_entry(b, r, 1);
		break;
	case SQ_EV_BLOCK_RETURN:
		if (!no_blocks)
			batch_return(b, r, 1);
		break;
	case SQ_EV_PROCESS_ACTIVATE:
		batch_activate(b, r);
		break;
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(call_batch, __u64 records, __u32 count)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct batch_state b = { .tid = (__u32)id, .pid = id >> 32 };

	b.proc = running_on(b.tid);
	bpf_loop(sq_batch_load(records, count), on_record, &b, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

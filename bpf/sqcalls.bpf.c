// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqcalls.bpf.c - per method: calls, inclusive and exclusive (self) time, and optionally
 * a latency histogram and the system calls it made, from the call probes; aggregated
 * here, read by user space at the end or every interval.
 *
 * Each activation's entry is kept by (thread, frame). On its return: inclusive time is
 * return minus entry, less the time its green process was switched out meanwhile (from
 * process__activate); self time is that minus the inclusive time of the callees, which
 * each return adds to its caller's record (the caller's frame is read from the VM's own
 * frame, so non-local returns, which end several frames at once, and green processes,
 * which interleave frames on one thread, time right). A recursive method's total counts
 * its outermost activation only: the inner ones are inside it already.
 *
 * Two ways in: call__batch's records (the default: one uprobe hit per batch), or with -S
 * the four per-event call probes, whose open activations the system-call tracepoints
 * look up at the instant of each system call. A batch keeps each green process's open
 * activations in a shadow stack indexed by depth (bottom of the file); the per-event
 * programs keep them in the calls map, as do activations deeper than the shadow stack. */
#include "sqvm.bpf.h"
#include "sqcalls.h"
#include "sqbatch.bpf.h"

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

struct frame_key {
	__u32 tid;
	__u32 pad;
	__u64 frame;
};

struct call {
	__u64 ts_ns;
	__u64 child_ns;		/* the callees' inclusive time so far */
	__u64 off_ns;		/* its process's switched-out time at entry */
	__u64 recv;		/* the receiver's class name (for -C) */
	__u64 proc;		/* its green process */
	struct sqcalls_key key;
	__u32 inner;		/* 1: a recursive activation inside another of the same method */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct frame_key);
	__type(value, struct call);
} calls SEC(".maps");

/* Open activations per (thread, process, method): recursion depth. */
struct active_key {
	__u32 tid;
	__u32 pad;
	__u64 proc;
	struct sqcalls_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct active_key);
	__type(value, __u32);
} active SEC(".maps");

/* The green process running on a thread (process__activate), and per process the time
 * it has spent switched out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} running SEC(".maps");

struct proc_key {
	__u32 tid;
	__u32 pad;
	__u64 proc;
};

struct proc_time {
	__u64 off_total_ns;
	__u64 off_since_ns;	/* when it was switched out; 0 while it runs */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct proc_key);
	__type(value, struct proc_time);
} procs SEC(".maps");

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

static __always_inline __u64 off_ns(__u32 tid, __u64 proc)
{
	struct proc_key k = { .tid = tid, .proc = proc };
	struct proc_time *t = bpf_map_lookup_elem(&procs, &k);

	return t ? t->off_total_ns : 0;
}

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

static __always_inline bool wanted(const struct call *c)
{
	if (sel_prefix_len && !prefix_ok(c->key.pid, c->key.selector, sel_prefix, sel_prefix_len, 1))
		return false;
	if (class_prefix_len && !prefix_ok(c->key.pid, c->key.def_class, class_prefix, class_prefix_len, 2) &&
	    !prefix_ok(c->key.pid, c->recv, class_prefix, class_prefix_len, 2))
		return false;
	return true;
}

static __always_inline int on_entry(const char *recv, const char *sel, const char *def, __u64 frame, __u32 block)
{
	__u64 id = bpf_get_current_pid_tgid(), *proc;
	__u32 tid = (__u32)id, one = 1, *n;
	struct frame_key fk = { .tid = tid, .frame = frame };
	struct call c = {};
	struct active_key ak = {};

	c.key.pid = id >> 32;
	c.key.block = block;
	c.key.def_class = (__u64)def;
	c.key.selector = (__u64)sel;
	c.recv = (__u64)recv;
	proc = bpf_map_lookup_elem(&running, &tid);
	c.proc = proc ? *proc : 0;
	c.off_ns = off_ns(tid, c.proc);
	ak.tid = tid;
	ak.proc = c.proc;
	ak.key = c.key;
	n = bpf_map_lookup_elem(&active, &ak);
	if (n) {
		c.inner = *n > 0;
		*n += 1;	/* per thread: no race */
	} else {
		bpf_map_update_elem(&active, &ak, &one, BPF_ANY);
	}
	c.ts_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&calls, &fk, &c, BPF_ANY);
	return 0;
}

static __always_inline void count(const struct sqcalls_key *key, const char *sel, const char *def,
				  __u64 incl, __u64 self, bool inner, bool timed)
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
		sq_remember_name(key->pid, key->def_class, def);
		sq_remember_name(key->pid, key->selector, sel);
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

static __always_inline void count_edge(__u32 pid, __u64 frame)
{
	struct sq_vm_offsets *vm = bpf_map_lookup_elem(&vms, &pid);
	__u64 caller = 0, caller_m = 0, callee_m = 0;

	if (!vm || bpf_probe_read_user(&callee_m, sizeof(callee_m), (void *)(frame + vm->frame_method)) ||
	    bpf_probe_read_user(&caller, sizeof(caller), (void *)(frame + vm->frame_caller)) || !caller ||
	    bpf_probe_read_user(&caller_m, sizeof(caller_m), (void *)(caller + vm->frame_method)))
		return;
	count_edge_methods(pid, vm, caller_m, callee_m);
}

static __always_inline int on_return(const char *recv, const char *sel, const char *def, __u64 frame, __u32 block)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), incl, self, caller = 0;
	__u32 tid = (__u32)id, pid = id >> 32, *n;
	struct frame_key fk = { .tid = tid, .frame = frame };
	struct sq_vm_offsets *vm;
	struct active_key ak = {};
	struct call *c, *parent;

	c = bpf_map_lookup_elem(&calls, &fk);
	if (!c) {
		/* entered before tracing began: counted, not timed */
		struct call pre = {};
		pre.key.pid = pid;
		pre.key.block = block;
		pre.key.def_class = (__u64)def;
		pre.key.selector = (__u64)sel;
		pre.recv = (__u64)recv;
		if (wanted(&pre)) {
			count(&pre.key, sel, def, 0, 0, false, false);
			if (edges_on)
				count_edge(pid, frame);
		}
		return 0;
	}
	incl = now - c->ts_ns;
	{
		__u64 off = off_ns(tid, c->proc) - c->off_ns;
		incl = incl > off ? incl - off : 0;
	}
	self = incl > c->child_ns ? incl - c->child_ns : 0;
	/* the caller's record gets this call's inclusive time */
	vm = bpf_map_lookup_elem(&vms, &pid);
	if (vm && !bpf_probe_read_user(&caller, sizeof(caller), (void *)(frame + vm->frame_caller)) && caller) {
		struct frame_key pk = { .tid = tid, .frame = caller };
		parent = bpf_map_lookup_elem(&calls, &pk);
		if (parent)
			__sync_fetch_and_add(&parent->child_ns, incl);
	}
	ak.tid = tid;
	ak.proc = c->proc;
	ak.key = c->key;
	n = bpf_map_lookup_elem(&active, &ak);
	if (n) {
		if (*n <= 1)
			bpf_map_delete_elem(&active, &ak);
		else
			*n -= 1;	/* per thread: no race */
	}
	if (wanted(c)) {
		count(&c->key, sel, def, incl, self, c->inner, true);
		if (edges_on)
			count_edge(pid, frame);
	}
	bpf_map_delete_elem(&calls, &fk);
	return 0;
}

SEC("usdt")
int BPF_USDT(method_entry, char *recv, char *sel, char *def, __u64 frame, __u32 depth)
{
	return on_entry(recv, sel, def, frame, 0);
}

SEC("usdt")
int BPF_USDT(method_return, char *recv, char *sel, char *def, __u64 frame, __u32 depth)
{
	return on_return(recv, sel, def, frame, 0);
}

SEC("usdt")
int BPF_USDT(block_entry, char *recv, char *sel, char *def, __u64 frame, __u32 depth)
{
	return on_entry(recv, sel, def, frame, 1);
}

SEC("usdt")
int BPF_USDT(block_return, char *recv, char *sel, char *def, __u64 frame, __u32 depth)
{
	return on_return(recv, sel, def, frame, 1);
}

/* A green process switch: the outgoing one's clock stops, the incoming one's resumes. */
SEC("usdt")
int BPF_USDT(process_activate, __u64 proc, char *name, int priority)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns(), *cur = bpf_map_lookup_elem(&running, &tid);
	struct proc_key k = { .tid = tid };
	struct proc_time *t, fresh = {};

	if (cur) {
		k.proc = *cur;
		t = bpf_map_lookup_elem(&procs, &k);
		if (t) {
			t->off_since_ns = now;
		} else {
			fresh.off_since_ns = now;
			bpf_map_update_elem(&procs, &k, &fresh, BPF_ANY);
		}
	}
	k.proc = proc;
	t = bpf_map_lookup_elem(&procs, &k);
	if (t && t->off_since_ns) {
		t->off_total_ns += now - t->off_since_ns;
		t->off_since_ns = 0;
	}
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
	struct sq_vm_offsets *vm;
	struct frame_key fk = { .tid = tid };
	struct sqcalls_sys *s;
	struct call *c;
	__u64 dur;

	if (!syscalls || !(start = bpf_map_lookup_elem(&sys_start, &tid)))
		return 0;
	dur = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&sys_start, &tid);
	vm = bpf_map_lookup_elem(&vms, &pid);
	if (!vm || !(fp = sq_current_frame(vm, &proc)))
		return 0;
	fk.frame = fp;
	c = bpf_map_lookup_elem(&calls, &fk);
	if (!c || !wanted(c))
		return 0;
	s = sq_lookup_or_init(&sys, &c->key, &zero, NULL);
	if (!s)
		return 0;
	__sync_fetch_and_add(&s->count, 1);
	__sync_fetch_and_add(&s->total_ns, dur);
	return 0;
}

/* ===================================================================== */
/* call__batch                                                           */
/* ===================================================================== */

/* One open activation on a shadow stack. */
struct shadow {
	__u64 frame;		/* 0: none open at this depth */
	__u64 ts_ns;
	__u64 child_ns;
	__u64 off_ns;		/* its process's switched-out time at entry */
	__u64 recv;
	struct sqcalls_key key;
	__u32 inner;
	__u32 pad;
};

#define SQCALLS_SHADOW_DEPTH 256	/* deeper activations go to the calls map */

/* A green process's open activations by depth, and its switched-out time. */
struct shadow_stack {
	__u64 off_total_ns;
	__u64 off_since_ns;	/* when it was switched out; 0 while it runs */
	struct shadow s[SQCALLS_SHADOW_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct proc_key);
	__type(value, struct shadow_stack);
} stacks SEC(".maps");

/* For creating a stack: a map value's size is too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shadow_stack);
} stack_zero SEC(".maps");

/* What a batch's records share: the thread, and the process running on it. */
struct batch_state {
	__u32 tid, pid;
	__u64 proc;
};

static __always_inline struct shadow_stack *stack_of(__u32 tid, __u64 proc, bool create)
{
	struct proc_key k = { .tid = tid, .proc = proc };
	struct shadow_stack *st = bpf_map_lookup_elem(&stacks, &k), *z;
	__u32 zero = 0;

	if (st || !create)
		return st;
	z = bpf_map_lookup_elem(&stack_zero, &zero);	/* stays all zero: only read */
	if (!z)
		return 0;
	bpf_map_update_elem(&stacks, &k, z, BPF_NOEXIST);
	return bpf_map_lookup_elem(&stacks, &k);
}

/* Recursion depth of a method in a process: the active map, kept at 0 rather than
 * deleted (an LRU map: a delete and a new insert per call cost more than the entry). */
static __always_inline __u32 active_enter(__u32 tid, __u64 proc, const struct sqcalls_key *key)
{
	struct active_key ak = { .tid = tid, .proc = proc, .key = *key };
	__u32 one = 1, *n = bpf_map_lookup_elem(&active, &ak), was;

	if (!n) {
		bpf_map_update_elem(&active, &ak, &one, BPF_ANY);
		return 0;
	}
	was = *n;
	*n = was + 1;		/* per thread: no race */
	return was;
}

static __always_inline void active_leave(__u32 tid, __u64 proc, const struct sqcalls_key *key)
{
	struct active_key ak = { .tid = tid, .proc = proc, .key = *key };
	__u32 *n = bpf_map_lookup_elem(&active, &ak);

	if (n && *n)
		*n -= 1;
}

static __always_inline void batch_entry(struct batch_state *b, const SqEventRecord *r, __u32 block)
{
	struct shadow_stack *st = stack_of(b->tid, b->proc, true);
	__u32 depth = r->arg;
	struct shadow *sh;

	if (!st)
		return;
	if (depth >= SQCALLS_SHADOW_DEPTH) {
		/* deep: the per-event way, in the calls map */
		struct frame_key fk = { .tid = b->tid, .frame = r->call.frame };
		struct call c = {};

		c.key.pid = b->pid;
		c.key.block = block;
		c.key.def_class = r->call.def_cls;
		c.key.selector = r->call.selector;
		c.recv = r->call.recv_cls;
		c.proc = b->proc;
		c.off_ns = st->off_total_ns;
		c.inner = active_enter(b->tid, b->proc, &c.key) > 0;
		c.ts_ns = r->ts;
		bpf_map_update_elem(&calls, &fk, &c, BPF_ANY);
		return;
	}
	sh = &st->s[depth];
	sh->frame = r->call.frame;
	sh->ts_ns = r->ts;
	sh->child_ns = 0;
	sh->off_ns = st->off_total_ns;
	sh->recv = r->call.recv_cls;
	sh->key.pid = b->pid;
	sh->key.block = block;
	sh->key.def_class = r->call.def_cls;
	sh->key.selector = r->call.selector;
	sh->inner = active_enter(b->tid, b->proc, &sh->key) > 0;
}

/* The open activation at depth with this frame into *c (and closes it), or false. */
static __always_inline bool batch_take(struct batch_state *b, struct shadow_stack *st, __u32 depth, __u64 frame,
				       struct call *c)
{
	if (depth < SQCALLS_SHADOW_DEPTH) {
		struct shadow *sh = &st->s[depth];

		if (sh->frame != frame)
			return false;
		c->ts_ns = sh->ts_ns;
		c->child_ns = sh->child_ns;
		c->off_ns = sh->off_ns;
		c->recv = sh->recv;
		c->key = sh->key;
		c->inner = sh->inner;
		sh->frame = 0;
		return true;
	}
	{
		struct frame_key fk = { .tid = b->tid, .frame = frame };
		struct call *m = bpf_map_lookup_elem(&calls, &fk);

		if (!m)
			return false;
		*c = *m;
		bpf_map_delete_elem(&calls, &fk);
		return true;
	}
}

/* The caller's open activation (at depth - 1, with the caller's frame) gets incl. */
static __always_inline void batch_charge_caller(struct batch_state *b, struct shadow_stack *st, __u32 depth,
						__u64 caller, __u64 incl)
{
	if (!caller || depth == 0)
		return;
	depth -= 1;
	if (depth < SQCALLS_SHADOW_DEPTH) {
		struct shadow *sh = &st->s[depth];

		if (sh->frame == caller)
			sh->child_ns += incl;
		return;
	}
	{
		struct frame_key pk = { .tid = b->tid, .frame = caller };
		struct call *parent = bpf_map_lookup_elem(&calls, &pk);

		if (parent)
			parent->child_ns += incl;	/* one thread writes it */
	}
}

static __always_inline void batch_return(struct batch_state *b, const SqEventRecord *r, __u32 block)
{
	struct shadow_stack *st = stack_of(b->tid, b->proc, false);
	__u64 incl, self, off;
	struct call c = {};

	if (!st || !batch_take(b, st, r->arg, r->call.frame, &c)) {
		/* entered before tracing began: counted, not timed */
		c.key.pid = b->pid;
		c.key.block = block;
		c.key.def_class = r->call.def_cls;
		c.key.selector = r->call.selector;
		c.recv = r->call.recv_cls;
		if (wanted(&c)) {
			count(&c.key, (const char *)r->call.selector, (const char *)r->call.def_cls, 0, 0, false, false);
			if (edges_on)
				count_edge_methods(b->pid, bpf_map_lookup_elem(&vms, &b->pid), r->call.caller_method, r->call.method);
		}
		return;
	}
	incl = r->ts - c.ts_ns;
	off = st->off_total_ns - c.off_ns;
	incl = incl > off ? incl - off : 0;
	self = incl > c.child_ns ? incl - c.child_ns : 0;
	batch_charge_caller(b, st, r->arg, r->call.caller, incl);
	active_leave(b->tid, b->proc, &c.key);
	if (wanted(&c)) {
		count(&c.key, (const char *)r->call.selector, (const char *)r->call.def_cls, incl, self, c.inner, true);
		if (edges_on)
			count_edge_methods(b->pid, bpf_map_lookup_elem(&vms, &b->pid), r->call.caller_method, r->call.method);
	}
}

/* A process switch at r->ts: the outgoing process's clock stops, the incoming one's resumes. */
static __always_inline void batch_activate(struct batch_state *b, const SqEventRecord *r)
{
	struct shadow_stack *st = stack_of(b->tid, b->proc, true);

	if (st)
		st->off_since_ns = r->ts;
	b->proc = r->process.id;
	st = stack_of(b->tid, b->proc, false);
	if (st && st->off_since_ns) {
		st->off_total_ns += r->ts - st->off_since_ns;
		st->off_since_ns = 0;
	}
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
	__u64 id = bpf_get_current_pid_tgid(), *proc;
	struct batch_state b = { .tid = (__u32)id, .pid = id >> 32 };

	proc = bpf_map_lookup_elem(&running, &b.tid);
	b.proc = proc ? *proc : 0;
	bpf_loop(sq_batch_load(records, count), on_record, &b, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

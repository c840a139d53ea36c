// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqprof.bpf.c - samples the Smalltalk stacks of sqvm processes: on a CPU-clock perf event
 * (CPU profile) or on squeak:object__alloc__sample (allocation profile), walks the active
 * green process's frames through the addresses of its sqvm_debug_offsets and counts each
 * distinct stack, as Method * addresses, in a map that user space reads at the end. */
#include "sqvm.bpf.h"
#include "sqprof.h"

/* Options, set by user space before load. */
const volatile __u32 max_depth = SQPROF_DEFAULT_DEPTH;	/* at most SQPROF_MAX_DEPTH */
const volatile bool kernel_stacks = false;		/* -K */
const volatile bool user_stacks = false;		/* -U */

/* The traced processes are those in the vms map (sqvm.bpf.h), filled by user space. */

/* Sample counts by stack (struct sqprof_key). The key size is set by user space to hold
 * max_depth frames, so the map has no BTF types; entries are allocated as stacks appear
 * (keys can be kilobytes: no preallocation). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQPROF_MAX_STACKS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct sqprof_key));
	__uint(value_size, sizeof(struct sqprof_val));
} stacks SEC(".maps");

/* -K/-U: kernel and C stacks (max_entries set to 1 by user space when unused). */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, SQPROF_MAX_NATIVE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} native SEC(".maps");

/* The key being built: too big for the BPF stack. One per CPU; a program never nests
 * with itself on one CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sqprof_key);
} scratch SEC(".maps");

/* Counters user space reads (and reports) at the end. */
__u64 lost = 0;		/* samples not counted: the stacks map was full */
__u64 lost_weight = 0;	/* their weight */
__u64 truncated = 0;	/* samples deeper than max_depth (kept, with a marker) */
__u64 unknown = 0;	/* --alloc: samples of a process not yet in vms */
__u64 inconsistent = 0;	/* samples dropped: a frame outside its stack, or not below its callee */

struct walk {
	__u64 fp;		/* the next frame to read, 0 at the end */
	__u64 prev;		/* the frame read before it (its callee), 0 at first */
	__u64 base, limit;	/* the process's stack (limit 0: unreadable, unchecked) */
	__u32 caller_off;
	__u32 method_off;
	bool bad;		/* a frame failed the checks: the stack is not counted */
};

/* bpf_loop body: frame i (innermost is 0) into the scratch key. Past the bottom frame it
 * writes zeros, so that the key's unused frames compare equal. */
static long walk_frame(__u64 i, void *data)
{
	struct walk *w = data;
	struct sqprof_key *key;
	__u32 zero = 0;
	__u64 m = 0;

	key = bpf_map_lookup_elem(&scratch, &zero);
	if (!key || i >= SQPROF_MAX_DEPTH)
		return 1;
	if (w->fp && w->limit &&
	    (w->fp < w->base || w->fp >= w->limit + 512 || (w->fp & 7) || (w->prev && w->fp >= w->prev))) {
		w->bad = true;
		return 1;
	}
	if (w->fp) {
		w->prev = w->fp;
		if (bpf_probe_read_user(&m, sizeof(m), (void *)(w->fp + w->method_off)) || !m) {
			m = 0;
			w->fp = 0;
		} else if (bpf_probe_read_user(&w->fp, sizeof(w->fp),
					       (void *)(w->fp + w->caller_off))) {
			w->fp = 0;
		}
	}
	key->frames[i] = m;
	if (m)
		key->depth = i + 1;
	return 0;
}

struct naming {
	__u32 pid;
	__u32 print_name_off;
};

/* bpf_loop body: copies the name of frame i's method into the names map (sqvm.bpf.h),
 * for a process that exits before the report. */
static long name_frame(__u64 i, void *data)
{
	struct naming *n = data;
	struct sqprof_key *key;
	__u32 zero = 0;

	key = bpf_map_lookup_elem(&scratch, &zero);
	if (!key || i >= SQPROF_MAX_DEPTH)
		return 1;
	sq_remember_method(n->pid, key->frames[i], n->print_name_off);
	return 0;
}

/* One sample of the current thread, if it belongs to a traced VM: walk its Smalltalk
 * stack and count the stack. weight is 1 for CPU samples, bytes for allocations. */
static __always_inline int sample(void *ctx, __u64 weight, bool alloc)
{
	static const struct sqprof_val init;
	__u32 pid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	struct sqprof_key *key;
	struct sq_vm_offsets *vm;
	struct sqprof_val *val;
	struct walk w = {};
	__u64 proc, m = 0;
	bool created = false;

	vm = bpf_map_lookup_elem(&vms, &pid);
	if (!vm) {
		if (alloc)	/* a VM user space has not found yet (CPU samples: any process) */
			__sync_fetch_and_add(&unknown, 1);
		return 0;
	}
	key = bpf_map_lookup_elem(&scratch, &zero);
	if (!key)
		return 0;
	key->pid = pid;
	key->depth = 0;
	key->flags = 0;
	key->kstack = -1;
	key->ustack = -1;

	/* interp_current -> fp; none before the main process exists (start-up) */
	w.caller_off = vm->frame_caller;
	w.method_off = vm->frame_method;
	w.fp = sq_current_frame(vm, &proc);
	__builtin_memset(key->process, 0, sizeof(key->process));	/* equal names, equal keys */
	sq_process_name(vm, proc, key->process, sizeof(key->process), &key->process_id);
	if (w.fp &&
	    (bpf_probe_read_user(&w.base, sizeof(w.base), (void *)(proc + vm->process_stack_base)) ||
	     bpf_probe_read_user(&w.limit, sizeof(w.limit), (void *)(proc + vm->process_stack_limit))))
		w.base = w.limit = 0;
	bpf_loop(max_depth, walk_frame, &w, 0);
	if (w.bad) {
		__sync_fetch_and_add(&inconsistent, 1);
		return 0;
	}
	/* Frames left over: keep the sample, marked, rather than pass it off as a whole stack. */
	if (w.fp && !bpf_probe_read_user(&m, sizeof(m), (void *)(w.fp + vm->frame_method)) && m) {
		key->flags |= SQPROF_TRUNCATED;
		__sync_fetch_and_add(&truncated, 1);
	}
	if (kernel_stacks && !alloc)
		key->kstack = bpf_get_stackid(ctx, &native, 0);
	if (user_stacks)
		key->ustack = bpf_get_stackid(ctx, &native, BPF_F_USER_STACK);

	val = sq_lookup_or_init(&stacks, key, &init, &created);
	if (!val) {
		__sync_fetch_and_add(&lost, 1);
		__sync_fetch_and_add(&lost_weight, weight);
		return 0;
	}
	__sync_fetch_and_add(&val->samples, 1);
	__sync_fetch_and_add(&val->weight, weight);
	if (created) {
		/* A new stack: copy the names of its methods the kernel side has not seen yet. */
		struct naming n = { .pid = pid, .print_name_off = vm->method_print_name };
		bpf_loop(key->depth, name_frame, &n, 0);
	}
	return 0;
}

SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, 1, false);
}

SEC("usdt")
int BPF_USDT(alloc_sample, char *cls, __u64 bytes, char *alloc_class, char *alloc_sel,
	     __u64 weight)
{
	return sample(ctx, weight, true);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

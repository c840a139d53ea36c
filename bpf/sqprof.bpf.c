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
/* --pprof, --every: key each sample by the trace context of its process's open request
 * (read_trace), for pprof's trace_id and span_id labels. Off, nothing of it is read, and
 * stacks of many requests stay one key each: a service whose every request is a trace
 * of its own makes as many keys of one stack as it has requests in the profile. */
const volatile bool trace_labels = false;

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
	struct task_struct *task;	/* --wall: the task whose memory it is (sq_read) */
	__u64 wbase, wlen;	/* --wall: the stack below the innermost frame, copied (windows) */
};

/* --wall reads another task's memory, and each read (bpf_copy_from_user_task: the
 * task's mmap lock, a page pin, a copy) costs the traced VM too, which contends for its
 * lock and page counts: a process's frames are copied in one read of the stack below
 * its innermost frame, SQPROF_WINDOW bytes at most (deeper frames one by one). */
#define SQPROF_WINDOW 4096

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[SQPROF_WINDOW / 8]);
} windows SEC(".maps");

/* The word at addr of the walk's task: from the window when it holds it. */
static __always_inline long walk_read(const struct walk *w, __u64 addr, __u64 *dst, struct task_struct *task)
{
	__u32 zero = 0;
	__u64 *win;

	if (w->wlen && addr >= w->wbase && addr + 8 <= w->wbase + w->wlen && !((addr - w->wbase) & 7) &&
	    (win = bpf_map_lookup_elem(&windows, &zero))) {
		*dst = win[((addr - w->wbase) / 8) & (SQPROF_WINDOW / 8 - 1)];
		return 0;
	}
	return sq_read(dst, sizeof(*dst), (void *)addr, task);
}

/* Frame i (innermost is 0) into the scratch key. Past the bottom frame it writes zeros,
 * so that the key's unused frames compare equal. task: as sq_read's, a constant NULL in
 * the CPU and allocation samplers (their programs may not hold the sleepable read). The
 * current task's stack bounds may be unreadable (limit 0: unchecked); another task's
 * stack is walked only when they were read. */
static __always_inline long walk_step(struct walk *w, __u64 i, struct task_struct *task)
{
	struct sqprof_key *key;
	__u32 zero = 0;
	__u64 m = 0;

	key = bpf_map_lookup_elem(&scratch, &zero);
	if (!key || i >= SQPROF_MAX_DEPTH)
		return 1;
	if (w->fp && (task || w->limit) &&
	    (w->fp < w->base || w->fp >= w->limit + 512 || (w->fp & 7) || (w->prev && w->fp >= w->prev))) {
		w->bad = true;
		return 1;
	}
	if (w->fp) {
		w->prev = w->fp;
		if (walk_read(w, w->fp + w->method_off, &m, task) || !m) {
			m = 0;
			w->fp = 0;
		} else if (walk_read(w, w->fp + w->caller_off, &w->fp, task)) {
			w->fp = 0;
		}
	}
	key->frames[i] = m;
	if (m)
		key->depth = i + 1;
	return 0;
}

/* bpf_loop body: frame i of the current task's running process. */
static long walk_frame(__u64 i, void *data)
{
	return walk_step(data, i, NULL);
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

/* The trace context of green process proc, whose span word the caller read already
 * (span; 0: none), into the key (trace words 0 if the span is). False if the span has
 * changed since: the process began or ended a request meanwhile, and what was read in
 * between (its stack too) may be of either; the caller drops the sample (inconsistent).
 * Free of branches but that one: written with an if per read, the --wall sampler took
 * 116,718 verified instructions, over tests/verifier.sh's budget; as it is, 82,928
 * (52,334 without trace labels; the CPU sampler 2,816 against 2,698). The --wall
 * figures swing by tens of thousands with the code clang lays out around them (the
 * sampler before trace labels took 147,548): tests/verifier.sh keeps them in check.
 *
 * Why read it from the VM's memory: the Process holds its open request's context
 * (probes/debug_offsets.h, process_trace_*), so a sample costs five reads of 8 bytes
 * more, only while pprof output is asked, and nothing else is attached. (--wall reads
 * the span apart from its one copy of a Process's fields, which the trace, at the
 * Process's end, lies beyond: widened to 512 bytes to hold it, the copy took the
 * sampler to 135,452 verified instructions, and read the span after the frame pointer.) The alternative, the request and trace
 * records of req__batch, would make the VM write records of every request and of its
 * process's switches, and would come too late: the VM holds a request's begin (and its
 * trace record) back while the request's process runs, so a CPU sample taken then
 * could not know its trace. The VM writes the span last and zeroes it first
 * (vm/request.c): the span read again after the other words, the same, says they are
 * one context, and that the request was open all along (spans are never reused): this
 * matters to --wall, which reads a process from another CPU while the VM runs it. */
static __always_inline bool read_trace(const struct sq_vm_offsets *vm, __u64 proc, __u64 span,
				       struct sqprof_key *key, struct task_struct *task)
{
	__u64 again = 0, some, changed;

	if (!trace_labels)
		return true;
	/* a failed read zeroes its destination; a VM without the offsets has span 0 */
	sq_read(&key->trace_hi, 8, (void *)(proc + vm->process_trace_hi), task);
	sq_read(&key->trace_lo, 8, (void *)(proc + vm->process_trace_lo), task);
	sq_read(&key->parent_span, 8, (void *)(proc + vm->process_trace_parent), task);
	sq_read(&again, 8, (void *)(proc + vm->process_trace_span), task);
	some = -((span | -span) >> 63);	/* all ones if span is not 0 */
	key->trace_hi &= some;		/* the words of an ended request stay in the VM */
	key->trace_lo &= some;
	key->parent_span &= some;
	key->span = span;
	changed = (again & -(__u64)vm->has_trace) ^ span;
	return !changed;
}

/* The span word of green process proc (0: none, or not asked for): read_trace's first. */
static __always_inline __u64 trace_span(const struct sq_vm_offsets *vm, __u64 proc, struct task_struct *task)
{
	__u64 span = 0;

	if (trace_labels)
		sq_read(&span, 8, (void *)(proc + vm->process_trace_span), task);
	return span & -(__u64)vm->has_trace;
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
	key->state = 0;

	/* interp_current -> fp; none before the main process exists (start-up) */
	w.caller_off = vm->frame_caller;
	w.method_off = vm->frame_method;
	w.fp = sq_current_frame(vm, &proc);
	__builtin_memset(key->process, 0, sizeof(key->process));	/* equal names, equal keys */
	sq_process_name(vm, proc, key->process, sizeof(key->process), &key->process_id);
	if (!read_trace(vm, proc, trace_span(vm, proc, NULL), key, NULL)) {
		__sync_fetch_and_add(&inconsistent, 1);
		return 0;
	}
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

/* ===================================================================== */
/* --wall: every live process, whatever its state                        */
/* ===================================================================== */

/* User space runs the task iterator below at F Hz (a read of an iterator's fd runs the
 * program once per task on the machine, in the tool's own context): for each traced VM's
 * main thread it walks the VM's list of live processes (debug offsets' process_all) and
 * counts each one's stack under its name and state, through bpf_copy_from_user_task,
 * which reads another task's memory and may sleep on a page fault. A waiting process's
 * frames stay as they were when it began to wait, so its stack reads whole; the running
 * one's may move under the walk, and the frame checks drop such a sample (inconsistent). */

const volatile __u32 wall_max_processes = SQPROF_WALL_MAX_PROCS;

__u64 wall_ticks = 0;		/* iterator runs that found a traced VM */
__u64 wall_cut = 0;		/* ticks whose list was longer than wall_max_processes */

struct wall {
	struct task_struct *task;	/* the VM's main thread */
	const struct sq_vm_offsets *vm;
	__u64 proc;			/* the next process of the list, 0 at the end */
	__u32 pid;
	bool gc;			/* the VM is collecting: its running process waits for it */
};

/* bpf_loop body: frame i of a process of another task (--wall). */
static long wall_frame(__u64 i, void *data)
{
	struct walk *w = data;

	return walk_step(w, i, w->task);
}

struct wall_naming {
	struct task_struct *task;
	__u32 pid;
	__u32 print_name_off;
	__u64 str;		/* the method's printName */
	struct sq_name_copy *buf;
};

/* bpf_loop body: 16 bytes of a name from another task. A task's memory has no string
 * read, and a copy that runs past the end of a mapping fails whole: 16-byte pieces stop
 * at the NUL, short of the next page. */
static long wall_name_piece(__u64 i, void *data)
{
	struct wall_naming *n = data;
	__u32 off = (i & 7) * 16;

	if (bpf_copy_from_user_task(n->buf->name + off, 16, (void *)(n->str + off), n->task, 0)) {
		n->buf->name[off] = 0;
		return 1;
	}
	for (int k = 0; k < 16; k++)
		if (!n->buf->name[off + k])
			return 1;
	return 0;
}

/* bpf_loop body: frame i's method name into the names map, as name_frame. */
static long wall_name_frame(__u64 i, void *data)
{
	struct wall_naming *n = data;
	struct sq_name_key k = { .pid = n->pid };
	struct sqprof_key *key;
	__u32 zero = 0;

	key = bpf_map_lookup_elem(&scratch, &zero);
	n->buf = bpf_map_lookup_elem(&name_scratch, &zero);
	if (!key || !n->buf || i >= SQPROF_MAX_DEPTH)
		return 1;
	k.addr = key->frames[i];
	n->str = 0;
	if (!k.addr || bpf_map_lookup_elem(&names, &k) ||
	    bpf_copy_from_user_task(&n->str, sizeof(n->str), (void *)(k.addr + n->print_name_off), n->task, 0) || !n->str)
		return 0;
	bpf_loop(SQ_NAME_COPY / 16, wall_name_piece, n, 0);
	n->buf->name[SQ_NAME_COPY - 1] = 0;
	if (n->buf->name[0])
		bpf_map_update_elem(&names, &k, n->buf, BPF_NOEXIST);
	return 0;
}

/* The state a sample shows for a process in VM state st (enum sq_green_state). */
static __always_inline __u32 wall_state(const struct wall *w, __u32 st, __u64 waiting_on)
{
	const struct sq_vm_offsets *vm = w->vm;

	if (st == vm->state_running)
		return w->gc ? SQ_GREEN_GC : SQ_GREEN_RUNNING;
	if (st == vm->state_ready)
		return SQ_GREEN_READY;
	if (st == vm->state_io)
		return SQ_GREEN_IO;
	if (st == vm->state_suspended)
		return SQPROF_SUSPENDED;
	if (st == vm->state_waiting) {
		__u32 cls = sq_class_of_in(vm, waiting_on, w->task);
		return cls && cls != vm->class_nil ? SQ_GREEN_SEMAPHORE : SQ_GREEN_DELAY;
	}
	return SQ_GREEN_UNKNOWN;	/* terminated: about to leave the list */
}

/* A Process's fields that --wall reads, copied in one read: its first SQPROF_PROC_READ
 * bytes hold them all (checked: proc_fields). */
#define SQPROF_PROC_READ 256

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[SQPROF_PROC_READ + 8]);
} proc_copy SEC(".maps");

struct proc_fields {
	__u64 all_next, waiting_on, fp, base, limit, id, obj;
	__s32 state;
	__u8 is_main;
};

/* The field of size bytes at off in the copy p. */
static __always_inline __u64 proc_field(const __u8 *p, __u32 off, __u32 size)
{
	__u64 v = 0;

	off &= SQPROF_PROC_READ - 1;
	if (size == 8)
		__builtin_memcpy(&v, p + off, 8);
	else if (size == 4)
		__builtin_memcpy(&v, p + off, 4);
	else
		v = p[off];
	return v;
}

/* Process proc's fields into *f, in one read of its task's memory (false: unreadable). */
static __always_inline bool proc_fields(const struct sq_vm_offsets *vm, __u64 proc, struct task_struct *task,
					struct proc_fields *f)
{
	__u32 zero = 0;
	__u64 top = 0;
	__u32 offs[] = { vm->process_all_next, vm->process_waiting_on, vm->process_fp, vm->process_stack_base,
			 vm->process_stack_limit, vm->process_id, vm->process_obj, vm->process_state };
	__u8 *p = bpf_map_lookup_elem(&proc_copy, &zero);

	for (int i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] + 8 > top)
			top = offs[i] + 8;
	if (vm->process_is_main + 1 > top)
		top = vm->process_is_main + 1;
	barrier_var(top);	/* the verifier checks the bound on the register the call gets */
	if (!p || top > SQPROF_PROC_READ)
		return false;
	if (bpf_copy_from_user_task(p, top, (void *)proc, task, 0))
		return false;
	f->all_next = proc_field(p, vm->process_all_next, 8);
	f->waiting_on = proc_field(p, vm->process_waiting_on, 8);
	f->fp = proc_field(p, vm->process_fp, 8);
	f->base = proc_field(p, vm->process_stack_base, 8);
	f->limit = proc_field(p, vm->process_stack_limit, 8);
	f->id = proc_field(p, vm->process_id, 8);
	f->obj = proc_field(p, vm->process_obj, 8);
	f->state = (__s32)proc_field(p, vm->process_state, 4);
	f->is_main = (__u8)proc_field(p, vm->process_is_main, 1);
	return true;
}

/* Copies the stack below the walk's first frame into the window (walk_read): from the
 * end of its frame header's words the walk reads down to at most SQPROF_WINDOW bytes
 * below, not below the stack's base. */
static __always_inline void wall_window(struct walk *w, const struct sq_vm_offsets *vm, struct task_struct *task)
{
	__u32 zero = 0, hi = vm->frame_caller > vm->frame_method ? vm->frame_caller : vm->frame_method;
	__u64 end = w->fp + hi + 8, start, len;
	__u64 *win = bpf_map_lookup_elem(&windows, &zero);

	w->wlen = 0;
	if (!win || !w->fp || w->fp < w->base || w->fp >= w->limit + 512 || (w->fp & 7) || (w->base & 7))
		return;
	start = end - w->base > SQPROF_WINDOW ? end - SQPROF_WINDOW : w->base;
	len = end - start;
	barrier_var(len);
	if (len > SQPROF_WINDOW || !len || bpf_copy_from_user_task(win, len, (void *)start, task, 0))
		return;
	w->wbase = start;
	w->wlen = len;
}

/* Did a process that was not running when its fields were read run during the walk
 * (its wait ended, and the frames read may be its callees' since)? Its state and frame
 * pointer, read again after the walk, say. The running process's frames move all the
 * time: the frame checks judge its walk. */
static __always_inline bool woke_during_walk(const struct sq_vm_offsets *vm, __u64 proc,
					     const struct proc_fields *f, struct task_struct *task)
{
	__s32 state = -1;
	__u64 fp = 0, changed;

	/* without branches: each one doubles what the verifier walks after it */
	changed = sq_read(&state, sizeof(state), (void *)(proc + vm->process_state), task);
	changed |= sq_read(&fp, sizeof(fp), (void *)(proc + vm->process_fp), task);
	changed |= (__u64)(__u32)(state ^ f->state) | (fp ^ f->fp);
	return changed && f->state != vm->state_running;
}

/* bpf_loop body: the i-th live process's sample, then on to the next one. */
static long wall_process(__u64 i, void *data)
{
	static const struct sqprof_val init;
	struct wall *w = data;
	const struct sq_vm_offsets *vm = w->vm;
	struct walk ww = { .task = w->task, .caller_off = vm->frame_caller, .method_off = vm->frame_method };
	struct proc_fields f = { .state = -1 };
	__u64 proc = w->proc, m = 0, span;
	struct sqprof_key *key;
	struct sqprof_val *val;
	bool created = false;
	__u32 zero = 0;

	if (!proc)
		return 1;
	key = bpf_map_lookup_elem(&scratch, &zero);
	if (!key)
		return 1;
	if (!proc_fields(vm, proc, w->task, &f)) {
		w->proc = 0;	/* (as when the list's next link was unreadable) */
		f.fp = 0;
	} else {
		w->proc = f.all_next;
	}
	ww.fp = f.fp;
	ww.base = f.base;
	ww.limit = f.limit;
	key->pid = w->pid;
	key->depth = 0;
	key->flags = 0;
	key->kstack = -1;
	key->ustack = -1;
	key->state = wall_state(w, f.state, f.waiting_on);
	if (key->state == SQ_GREEN_UNKNOWN && f.state != vm->state_terminated) {
		/* not a process's state: the list changed under the walk (a process ended and
		 * its memory was reused); the rest of it is not to be believed */
		__sync_fetch_and_add(&inconsistent, 1);
		w->proc = 0;
		return 1;
	}
	__builtin_memset(key->process, 0, sizeof(key->process));
	key->process_id = vm->process_name ? (__u32)f.id : 0;
	sq_process_name_of(vm, proc, f.obj, f.is_main, key->process, sizeof(key->process), w->task);
	/* The span, then the frame pointer again: every read of the stack comes after the
	 * span's, which read_trace reads again after them (a request begun after the first
	 * read of the frame pointer would otherwise label a stack read from before it). */
	span = trace_span(vm, proc, w->task);
	if (trace_labels)
		sq_read(&ww.fp, sizeof(ww.fp), (void *)(proc + vm->process_fp), w->task);
	wall_window(&ww, vm, w->task);
	bpf_loop(max_depth, wall_frame, &ww, 0);
	if (ww.bad) {
		__sync_fetch_and_add(&inconsistent, 1);
		return 0;
	}
	if (ww.fp && !walk_read(&ww, ww.fp + vm->frame_method, &m, w->task) && m) {
		key->flags |= SQPROF_TRUNCATED;
		__sync_fetch_and_add(&truncated, 1);
	}
	if (!read_trace(vm, proc, span, key, w->task) || woke_during_walk(vm, proc, &f, w->task)) {
		__sync_fetch_and_add(&inconsistent, 1);
		return 0;
	}
	val = sq_lookup_or_init(&stacks, key, &init, &created);
	if (!val) {
		__sync_fetch_and_add(&lost, 1);
		__sync_fetch_and_add(&lost_weight, 1);
		return 0;
	}
	__sync_fetch_and_add(&val->samples, 1);
	__sync_fetch_and_add(&val->weight, 1);
	if (created) {	/* for a VM that exits before the report */
		struct wall_naming n = { .task = w->task, .pid = w->pid, .print_name_off = vm->method_print_name };
		bpf_loop(key->depth, wall_name_frame, &n, 0);
	}
	return 0;
}

SEC("iter.s/task")
int wall_sample(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct wall w = {};
	__u8 gc = 0;
	__u32 pid;

	if (!task || task->pid != task->tgid)	/* once per VM: its main thread runs the VM */
		return 0;
	pid = task->tgid;
	w.vm = bpf_map_lookup_elem(&vms, &pid);
	if (!w.vm || !w.vm->process_all)
		return 0;
	w.task = task;
	w.pid = pid;
	if (bpf_copy_from_user_task(&w.proc, sizeof(w.proc), (void *)w.vm->process_all, task, 0))
		return 0;
	bpf_copy_from_user_task(&gc, sizeof(gc), (void *)w.vm->gc_running, task, 0);
	w.gc = gc;
	__sync_fetch_and_add(&wall_ticks, 1);
	bpf_loop(wall_max_processes, wall_process, &w, 0);
	if (w.proc)
		__sync_fetch_and_add(&wall_cut, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqio.bpf.c - the I/O of sqvm processes by Smalltalk method: the I/O primitives'
 * system calls (read, write, accept, connect, open, close), each charged to the
 * innermost frames of the running green process (the primitive runs in the frame of
 * the method that sent it) and to the kind of descriptor (a regular file, a TCP
 * socket, other), with their bytes and time; the process's waits in the event loop for
 * a descriptor (io__wait to io__ready, after EAGAIN); and the pages a read brought into
 * the page cache (filemap:mm_filemap_add_to_page_cache, which fires in the reading
 * thread for a miss it reads synchronously). Aggregated here.
 *
 * The calls and the waits come from the VM as records in batches (squeak:io__batch,
 * probes/event_batch.h: SQ_EV_IO and SQ_EV_IO_READY, each followed by an
 * SQ_EV_IO_FRAMES with more of its Methods): the VM times each call and wait and finds
 * its descriptor's kind itself, so that a call costs it a record or two, not two
 * tracepoint hits of every process's every system call, and this program keeps
 * nothing between records. Only the page-cache tracepoint walks the stack,
 * in the VM thread's read system call (x86-64 numbers), to the same row. */
#include "sqvm.bpf.h"
#include "sqbatch.bpf.h"
#include "sqio.h"

_Static_assert(SQIO_READ == SQ_IO_READ && SQIO_CLOSE == SQ_IO_CLOSE && SQIO_FILE == SQ_IO_FILE &&
	       SQIO_TCP == SQ_IO_TCP && SQIO_OTHER == SQ_IO_OTHER, "sqio.h numbers ops and kinds as event_batch.h");
_Static_assert(SQIO_FRAMES <= SQ_EV_IO_DEPTH, "the records hold a row's frames");

const volatile __u32 only_pid = 0;	/* -p */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQIO_MAX_ROWS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sqio_key);
	__type(value, struct sqio_stats);
} rows SEC(".maps");

__u64 lost = 0;		/* calls that found no room in a map */

#define S_IFMT 0170000
#define S_IFREG 0100000
#define S_IFSOCK 0140000

/* The kind of descriptor fd of the current task (SQIO_OTHER if it cannot tell), as the
 * VM finds it (vm/io.c io_fd_kind: fstat, a socket's protocol). The task's descriptor
 * table is read through its BTF pointers (plain loads); the file and what it points to
 * through bpf_probe_read_kernel. */
static __always_inline __u8 fd_kind(int fd)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct files_struct *files = t->files;
	struct fdtable *fdt;
	struct file *f = 0;
	umode_t mode;

	if (fd < 0 || !files || !(fdt = files->fdt) || (unsigned int)fd >= fdt->max_fds ||
	    bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[fd]) || !f)
		return SQIO_OTHER;
	mode = BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT;
	if (mode == S_IFREG)
		return SQIO_FILE;
	if (mode == S_IFSOCK) {
		struct socket *s = BPF_CORE_READ(f, private_data);
		__u16 proto = BPF_CORE_READ(s, sk, sk_protocol);
		return proto == 6 /* IPPROTO_TCP */ ? SQIO_TCP : SQIO_OTHER;
	}
	return SQIO_OTHER;
}

/* Is pid a traced VM, and its offsets? */
static __always_inline struct sq_vm_offsets *traced(__u32 pid)
{
	if (only_pid && pid != only_pid)
		return 0;
	return bpf_map_lookup_elem(&vms, &pid);
}

/* The stack below a frame, read in one piece: a frame's callers lie below it in its
 * process's stack (an activation starts just above its arguments, on its caller's
 * operand stack), most within a few hundred bytes. */
#define SQIO_WINDOW 1024

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[SQIO_WINDOW / 8]);
} windows SEC(".maps");

/* The running process's innermost frame and its stack's base (false: none, unreadable),
 * both in one read when the Process holds them within 64 bytes (it does). */
static __always_inline bool current_stack(const struct sq_vm_offsets *vm, __u64 *fp, __u64 *base)
{
	__u64 proc = 0, words[8] = {};
	__u32 lo = vm->process_fp < vm->process_stack_base ? vm->process_fp : vm->process_stack_base;
	__u32 fi = (vm->process_fp - lo) / 8, bi = (vm->process_stack_base - lo) / 8;

	if (bpf_probe_read_user(&proc, sizeof(proc), (void *)vm->current_process) || !proc)
		return false;
	if (fi < 8 && bi < 8 && !((vm->process_fp | vm->process_stack_base) & 7)) {
		if (bpf_probe_read_user(words, sizeof(words), (void *)(proc + lo)))
			return false;
		*fp = words[fi & 7];
		*base = words[bi & 7];
		return *fp;
	}
	return !bpf_probe_read_user(fp, sizeof(*fp), (void *)(proc + vm->process_fp)) && *fp &&
	       !bpf_probe_read_user(base, sizeof(*base), (void *)(proc + vm->process_stack_base));
}

/* The running process's innermost SQIO_FRAMES methods into frames, innermost first, as
 * sq_walk_methods answers them, in fewer reads of the VM's memory (each costs a fixed
 * ~0.1 us): up to SQIO_WINDOW bytes of its stack below the innermost frame in one read,
 * and a frame outside them in one read of its caller and method, which a Frame holds
 * side by side. */
static __always_inline __u32 walk(const struct sq_vm_offsets *vm, __u64 *frames)
{
	__u64 fp = 0, sbase = 0, pair[2], start = 0, end, len = 0, off, *win;
	__u32 n = 0, zero = 0, lo, mi;

	if (vm->frame_method == vm->frame_caller + 8)
		lo = vm->frame_caller, mi = 1;
	else if (vm->frame_caller == vm->frame_method + 8)
		lo = vm->frame_method, mi = 0;
	else
		return sq_walk_methods(vm, frames, SQIO_FRAMES, SQIO_FRAMES);
	if (!current_stack(vm, &fp, &sbase) || !(win = bpf_map_lookup_elem(&windows, &zero)))
		return 0;
	/* the window: from the stack's base or SQIO_WINDOW bytes below the end of the
	 * innermost frame's pair, to that end */
	end = fp + lo + 16;
	if (sbase && fp >= sbase && !((fp | sbase) & 7)) {
		start = end - sbase > SQIO_WINDOW ? end - SQIO_WINDOW : sbase;
		len = end - start;
		barrier_var(len);
		if (len > SQIO_WINDOW || bpf_probe_read_user(win, len, (void *)start))
			len = 0;
	}
	for (__u32 i = 0; i < SQIO_FRAMES; i++) {
		if (!fp)
			break;
		off = fp + lo - start;
		if (len && fp + lo >= start && off + 16 <= len) {
			off = (off / 8) & (SQIO_WINDOW / 8 - 1);
			if (off + 1 >= SQIO_WINDOW / 8)
				break;
			pair[0] = win[off];
			pair[1] = win[off + 1];
		} else if (bpf_probe_read_user(pair, sizeof(pair), (void *)(fp + lo))) {
			break;
		}
		if (!pair[mi])
			break;
		frames[i] = pair[mi];
		n = i + 1;
		fp = pair[mi ^ 1];
	}
	return n;
}

static __always_inline struct sqio_stats *row_of(const struct sqio_key *k, __u32 print_name_off)
{
	static const struct sqio_stats zero = {};
	bool created = false;
	struct sqio_stats *s = sq_lookup_or_init(&rows, k, &zero, &created);

	if (!s) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	if (created)
		for (int i = 0; i < SQIO_FRAMES; i++)
			sq_remember_method(k->pid, k->frames[i], print_name_off);
	return s;
}

/* ---- The batch ---- */

/* A batch's rows, added up here before they go to the rows map: a request's calls go
 * to a few rows by turns (in a server: the read, the write, the read that finds
 * nothing, the wait), and a lookup in the map hashes a 56-byte key; comparing it with
 * a few keys costs less, and the map then sees one lookup per row per batch. */
#define PENDING 8

struct pending {
	__u32 n;
	__u32 pad;
	struct {
		struct sqio_key key;
		struct sqio_stats st;
	} e[PENDING];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pending);
} pendings SEC(".maps");

/* Walking one VM's batch: its pid, where its Methods keep their names. */
struct batch_state {
	__u32 pid;
	__u32 print_name_off;
};

static __always_inline bool same_key(const struct sqio_key *a, const struct sqio_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	for (int i = 0; i < sizeof(*a) / 8; i++)
		if (x[i] != y[i])
			return false;
	return true;
}

/* The pending rows of this CPU into the rows map. Verified once (bpf/sqvm.bpf.h):
 * inlined, its loop of map updates was walked again in every caller. */
SQ_VERIFIED_ONCE int flush_pending(__u32 print_name_off)
{
	__u32 zero = 0;
	struct pending *p = bpf_map_lookup_elem(&pendings, &zero);

	if (!p)
		return 0;
	for (__u32 i = 0; i < PENDING; i++) {
		if (i >= p->n)
			break;
		struct sqio_stats *s = row_of(&p->e[i].key, print_name_off);
		/* plain adds: a row is one VM's, and its one thread runs both this and the
		 * page-cache tracepoint's atomic add */
		if (s)
			sqio_merge(s, &p->e[i].st);
	}
	p->n = 0;
	return 0;
}

/* The index in this CPU's pending rows of k's row (a new one zeroed; a full table goes
 * to the map first); -1 if there is none. Verified once, as flush_pending. */
SQ_VERIFIED_ONCE int pending_index(const struct batch_state *b, const struct sqio_key *k)
{
	__u32 zero = 0, n, i;
	struct pending *p = bpf_map_lookup_elem(&pendings, &zero);

	if (!p || !b || !k)
		return -1;
	n = p->n;
	for (i = 0; i < PENDING; i++) {
		if (i >= n)
			break;
		if (same_key(&p->e[i].key, k))
			return i;
	}
	if (n >= PENDING) {
		flush_pending(b->print_name_off);
		n = 0;
	}
	i = n & (PENDING - 1);
	p->e[i].key = *k;
	__builtin_memset(&p->e[i].st, 0, sizeof(p->e[i].st));
	p->n = i + 1;
	return i;
}

/* The pending row of k, or NULL. */
static __always_inline struct sqio_stats *batch_row(struct batch_state *b, const struct sqio_key *k)
{
	__u32 zero = 0;
	struct pending *p = bpf_map_lookup_elem(&pendings, &zero);
	int i = pending_index(b, k);

	if (!p || i < 0)
		return 0;
	return &p->e[i & (PENDING - 1)].st;
}

/* The frames record right after record i (kind SQ_EV_IO_FRAMES, its first Method the
 * from-th of the stack), or NULL. */
static __always_inline const SqEventRecord *frames_after(__u32 i, __u32 from)
{
	const SqEventRecord *f = sq_batch_record(i + 1);

	return f && f->kind == SQ_EV_IO_FRAMES && SQ_EV_IO_OP(f->arg) == from ? f : 0;
}

/* A call (SQ_EV_IO): its row gets the call, its bytes and its time. The VM's thread is
 * the only writer of its rows: plain adds. */
static __always_inline void on_call(struct batch_state *b, const SqEventRecord *r, __u32 i)
{
	const SqEventRecord *more = frames_after(i, SQ_EV_IO_METHODS);
	struct sqio_key k = { .pid = b->pid, .op = SQ_EV_IO_OP(r->arg), .kind = SQ_EV_IO_KIND(r->arg) };
	struct sqio_stats *s;
	__s64 result = (__s64)r->io.result;
	__u64 ns = r->io.ns;
	__u32 slot;

	for (int j = 0; j < SQ_EV_IO_METHODS && j < SQIO_FRAMES; j++)
		k.frames[j] = r->io.methods[j];
	if (more)
		for (int j = SQ_EV_IO_METHODS; j < SQIO_FRAMES; j++)
			k.frames[j] = more->frames.methods[j - SQ_EV_IO_METHODS];
	if (!k.frames[0] || k.op >= SQIO_NOPS)
		return;
	s = batch_row(b, &k);
	if (!s)
		return;
	s->calls++;
	if (result < 0)
		s->errors++;
	else if (k.op == SQIO_READ || k.op == SQIO_WRITE)
		s->bytes += result;
	s->total_ns += ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
	slot = sq_hist_slot(ns / 1000);
	asm volatile("" : "+r"(slot));	/* the verifier checks the bound on the register used */
	if (slot < SQ_MAX_SLOTS)
		s->slots[slot]++;
}

/* A wait ends (SQ_EV_IO_READY, which holds when it began, and its frames record): its
 * row gets the wait. io__wait's op (0 read, 1 write, 2 accept, 3 connect) is sqio_op's
 * first four. */
static __always_inline void on_ready(struct batch_state *b, const SqEventRecord *r, __u32 i)
{
	const SqEventRecord *more = frames_after(i, 0);
	struct sqio_key k = { .pid = b->pid, .op = r->arg };
	struct sqio_stats *s;
	__u64 ns = r->ts - r->process.wait_began;

	/* no frames: it began before io__batch was enabled (wait_began 0), or before this tool */
	if (!more || !more->frames.methods[0] || r->process.wait_began < sq_batch_since_ns || r->arg > SQIO_CONNECT)
		return;
	k.kind = SQ_EV_IO_KIND(more->arg);
	for (int j = 0; j < SQIO_FRAMES; j++)
		k.frames[j] = more->frames.methods[j];
	s = batch_row(b, &k);
	if (!s)
		return;
	s->waits++;
	s->wait_ns += ns;
	if (ns > s->wait_max_ns)
		s->wait_max_ns = ns;
}

static long on_record(__u32 i, void *ctx)
{
	const SqEventRecord *r = sq_batch_record(i);

	if (!r)
		return 1;
	switch (r->kind) {
	case SQ_EV_IO:
		on_call(ctx, r, i);
		break;
	case SQ_EV_IO_READY:
		on_ready(ctx, r, i);
		break;
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(io_batch, __u64 records, __u32 count)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, n;
	struct sq_vm_offsets *vm = traced(pid);
	struct batch_state b = { .pid = pid };
	__u32 zero = 0;
	struct pending *p;

	if (!vm || !(p = bpf_map_lookup_elem(&pendings, &zero)))
		return 0;
	b.print_name_off = vm->method_print_name;
	p->n = 0;
	n = sq_batch_load(records, count);
	if (n) {
		bpf_loop(n, on_record, &b, 0);
		flush_pending(b.print_name_off);
	}
	return 0;
}

/* ---- Disk reads ---- */

/* Is system call nr a read (x86-64: read, pread64, readv, preadv, preadv2)? The I/O
 * primitives make read(2) calls only. */
static __always_inline bool is_read(long nr)
{
	return nr == 0 || nr == 17 || nr == 19 || nr == 295 || nr == 327;
}

/* A read that misses the page cache adds the pages it reads, in the reading thread: the
 * row of its call (the same frames, op and kind as the VM's record of it), found from
 * the running process's stack while the VM thread is in the read system call. */
SEC("tp/filemap/mm_filemap_add_to_page_cache")
int page_added(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_vm_offsets *vm;
	struct pt_regs *regs;
	struct sqio_stats *s;
	struct sqio_key k = {};

	if ((only_pid && pid != only_pid) || !(vm = traced(pid)))
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs || !is_read(BPF_CORE_READ(regs, orig_ax)) || !walk(vm, k.frames))
		return 0;	/* not a read; no Smalltalk frame: the VM's own */
	k.pid = pid;
	k.op = SQIO_READ;
	k.kind = fd_kind((int)BPF_CORE_READ(regs, di));
	s = row_of(&k, vm->method_print_name);
	if (s)
		__sync_fetch_and_add(&s->disk_pages, 1ULL << (ctx->order & 31));
	return 0;
}

SEC("usdt")
int BPF_USDT(vm_start, char *version, __u64 offsets)
{
	sq_learn_vm(offsets);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqio.bpf.c - the I/O of sqvm processes by Smalltalk method: the VM thread's read,
 * write, accept, connect, open and close system calls, each charged to the innermost
 * frames of the running green process (the primitive runs in the frame of the method
 * that sent it) and to the kind of descriptor (a regular file, a TCP socket, other),
 * with their bytes and time; the process's waits in the event loop for a descriptor
 * (io__wait to io__ready, after EAGAIN); and the pages a read brought into the page
 * cache (filemap:mm_filemap_add_to_page_cache, which fires in the reading thread for a
 * miss it reads synchronously). System-call numbers are x86-64's. Aggregated here.
 *
 * What it costs the traced VM is what runs in its system calls, so that is kept
 * small: the BTF raw tracepoints sys_enter/sys_exit (no perf buffer is filled, as it
 * is for a syscalls: or raw_syscalls: tracepoint), the process filter before anything
 * else, the call in flight in the thread's own task storage (no hash map update and
 * delete per call), and the frame walk reading a frame's caller and method together. */
#include "sqvm.bpf.h"
#include "sqio.h"

const volatile __u32 only_pid = 0;	/* -p */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQIO_MAX_ROWS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sqio_key);
	__type(value, struct sqio_stats);
} rows SEC(".maps");

/* A system call or a wait in flight: its row and since when. */
struct inflight {
	struct sqio_key key;
	__u64 start_ns;
	__s32 fd_from_ret;	/* accept, open: the kind is the new descriptor's */
	__u32 live;		/* calls: a call is in flight (the storage outlives it) */
};

/* The system call in flight of each thread, in the thread's task storage. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct inflight);
} calls SEC(".maps");

struct wait_key {
	__u32 pid;
	__u32 pad;
	__u64 process;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct wait_key);
	__type(value, struct inflight);
} waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct inflight);
} scratch SEC(".maps");

__u64 lost = 0;		/* calls that found no room in a map */

#define S_IFMT 0170000
#define S_IFREG 0100000
#define S_IFSOCK 0140000

/* The kind of descriptor fd of the current task (SQIO_OTHER if it cannot tell). The
 * task's descriptor table is read through its BTF pointers (plain loads); the file and
 * what it points to through bpf_probe_read_kernel. */
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

/* The operation of system call id (x86-64), or SQIO_NOPS. */
static __always_inline __u8 op_of(long id)
{
	switch (id) {
	case 0: case 17: case 19: case 45: case 47:	/* read pread64 readv recvfrom recvmsg */
		return SQIO_READ;
	case 1: case 18: case 20: case 44: case 46:	/* write pwrite64 writev sendto sendmsg */
		return SQIO_WRITE;
	case 43: case 288:				/* accept accept4 */
		return SQIO_ACCEPT;
	case 42:
		return SQIO_CONNECT;
	case 2: case 257: case 437:			/* open openat openat2 */
		return SQIO_OPEN;
	case 3:
		return SQIO_CLOSE;
	}
	return SQIO_NOPS;
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

/* Fills in *in the key of the running process's I/O of op on fd (from_ret: the kind is
 * the returned descriptor's, when the call succeeds). */
static __always_inline bool begin(struct inflight *in, struct sq_vm_offsets *vm, __u32 pid, __u8 op, int fd,
				  bool from_ret)
{
	__builtin_memset(&in->key, 0, sizeof(in->key));
	if (!walk(vm, in->key.frames))
		return false;	/* no Smalltalk frame: the VM's own I/O (start-up, the event loop) */
	in->key.pid = pid;
	in->key.op = op;
	/* accept: the listening socket's kind until the new one's is known; open: a file
	 * (a failed open is a path's) */
	in->key.kind = op == SQIO_OPEN ? SQIO_FILE : fd_kind(fd);
	in->fd_from_ret = from_ret;
	in->start_ns = bpf_ktime_get_ns();
	return true;
}

static __always_inline struct sqio_stats *row_of(const struct sqio_key *k, struct sq_vm_offsets *vm)
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
			sq_remember_method(k->pid, k->frames[i], vm->method_print_name);
	return s;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long id)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_vm_offsets *vm;
	struct inflight *in;
	__u8 op;

	if ((only_pid && pid != only_pid) || (op = op_of(id)) == SQIO_NOPS || !(vm = traced(pid)))
		return 0;
	in = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!in) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	in->live = begin(in, vm, pid, op, (int)regs->di, op == SQIO_ACCEPT || op == SQIO_OPEN);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_vm_offsets *vm;
	struct inflight *in;
	struct sqio_stats *s;
	__u64 ns;

	if ((only_pid && pid != only_pid) || !(in = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0)) ||
	    !in->live || !(vm = traced(pid)))
		return 0;
	in->live = 0;
	ns = bpf_ktime_get_ns() - in->start_ns;
	if (in->fd_from_ret && ret >= 0)
		in->key.kind = fd_kind((int)ret);
	s = row_of(&in->key, vm);
	if (s) {
		__sync_fetch_and_add(&s->calls, 1);
		if (ret < 0)
			__sync_fetch_and_add(&s->errors, 1);
		else if (in->key.op == SQIO_READ || in->key.op == SQIO_WRITE)
			__sync_fetch_and_add(&s->bytes, ret);
		__sync_fetch_and_add(&s->total_ns, ns);
		if (ns > s->max_ns)
			s->max_ns = ns;		/* one VM thread per VM: no race */
		__u32 slot = sq_hist_slot(ns / 1000);
		asm volatile("" : "+r"(slot));
		if (slot < SQ_MAX_SLOTS)
			__sync_fetch_and_add(&s->slots[slot], 1);
	}
	return 0;
}

/* A read that misses the page cache adds the pages it reads, in the reading thread. */
SEC("tp/filemap/mm_filemap_add_to_page_cache")
int page_added(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_vm_offsets *vm;
	struct inflight *in;
	struct sqio_stats *s;

	if ((only_pid && pid != only_pid) || !(in = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0)) ||
	    !in->live || in->key.op != SQIO_READ || !(vm = traced(pid)))
		return 0;
	s = row_of(&in->key, vm);
	if (s)
		__sync_fetch_and_add(&s->disk_pages, 1ULL << (ctx->order & 31));
	return 0;
}

SEC("usdt")
int BPF_USDT(io_wait, __u64 process, char *name, int fd, int op, __u64 timeout)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	struct wait_key k = { .pid = pid, .process = process };
	struct sq_vm_offsets *vm = traced(pid);
	struct inflight *in = bpf_map_lookup_elem(&scratch, &zero);
	/* io__wait's op: 0 read, 1 write, 2 accept, 3 connect: sqio_op's first four */

	if (!vm || !in || op < 0 || op > SQIO_CONNECT || !begin(in, vm, pid, op, fd, false))
		return 0;
	if (bpf_map_update_elem(&waits, &k, in, BPF_ANY))
		__sync_fetch_and_add(&lost, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(io_ready, __u64 process, char *name, int fd, int op, int timedout)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct wait_key k = { .pid = pid, .process = process };
	struct sq_vm_offsets *vm = traced(pid);
	struct inflight *in = bpf_map_lookup_elem(&waits, &k);
	struct sqio_stats *s;
	__u64 ns;

	if (!vm || !in)
		return 0;
	ns = bpf_ktime_get_ns() - in->start_ns;
	s = row_of(&in->key, vm);
	if (s) {
		__sync_fetch_and_add(&s->waits, 1);
		__sync_fetch_and_add(&s->wait_ns, ns);
		if (ns > s->wait_max_ns)
			s->wait_max_ns = ns;
	}
	bpf_map_delete_elem(&waits, &k);
	return 0;
}

SEC("usdt")
int BPF_USDT(vm_start, char *version, __u64 offsets)
{
	sq_learn_vm(offsets);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

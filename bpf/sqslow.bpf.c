// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqslow.bpf.c - sqslow's flight recorder, the kernel's half: it forwards every batch of
 * the VM's scheduler, request, allocation-sample and I/O records (squeak:sched__batch,
 * which the records of req__batch, sample__batch and io__batch share while those are
 * enabled too) whole into a ring buffer, one message a batch, and adds what the records
 * do not hold: the collections (gc__*__begin, _end) with the process and method they
 * stop, timer samples of the running process's stack, the processes' names, which a
 * collection may move and so are read while the batch is handled, and the VM thread's
 * context switches (sched_switch), so that time off the CPU is not called CPU.
 *
 * Nothing is aggregated here: user space keeps the last seconds and replays them
 * (tools/sqslow_replay.c) when a request is slow. A batch costs one copy, from the VM
 * into the ring buffer (18 KB at most), and, for a process not named yet, one map
 * lookup, instead of a state machine's lookups and updates per record
 * (bpf/sqgreen.bpf.h, which sqreq runs in the kernel because it keeps nothing but sums). */
#include "sqvm.bpf.h"
#include "event_batch.h"
#include "sqslow.h"

const volatile __u32 only_pid = 0;	/* -p: samples of this process only */

/* 1 MiB: small enough that the memory a batch is copied into is still in cache from the
 * last turn round the ring. The copy is most of a batch's BPF time, and it grows with the
 * ring (examples/http under make load's mix, one server: 4.5 us a batch with 1 MiB, 5.4
 * with 512 KiB, 8.1 with 2 MiB, 11.5 with 4 MiB, 23 with 8 MiB). User space drains it
 * without stopping: captures are written by child processes (tools/sqslow.c). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SQSLOW_MAX_NAMES);
	__type(key, struct sqslow_name_key);
	__type(value, struct sqslow_name);
} pnames SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sqslow_name);
} name_buf SEC(".maps");

/* A message wakes sqslow only once a quarter of the ring buffer waits: a wake-up costs
 * the traced process about 10 us (an irq_work and a task wake-up, in its own time:
 * BPF run time per batch 33 us with a wake-up per message, on examples/http under
 * make load's mix); user space drains the ring every SQSLOW_POLL_MS anyway. */
#define WAKE_BYTES (256 * 1024)

static __always_inline __u64 wake_flags(void)
{
	return bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) > WAKE_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

__u64 lost = 0;		/* messages that found the ring buffer full */
__u64 unreadable = 0;	/* batches that could not be read */

/* Which processes this CPU named last, direct-mapped by id: most activations are of a
 * process named already, and a hit costs an array read where the names map's lookup
 * costs a hash (BPF run time of a batch on examples/http under make load's mix: 18 us
 * with a lookup per activation, 8 us with no names at all). */
#define NAMED_SLOTS 1024

struct named {
	__u64 key[NAMED_SLOTS];		/* id ^ (pid << 40), 0: empty */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct named);
} named SEC(".maps");

struct name_loop {
	const SqEventRecord *rec;	/* the message's records */
	__u64 mask;			/* its room less one (a power of two less one) */
	__u32 pid;
	__u32 n;
};

/* Record i of the batch just copied into its message: a process's first activation seen
 * gets its name kept. */
static long name_record(__u32 i, void *ctx)
{
	struct name_loop *l = ctx;
	__u32 zero = 0;
	struct named *seen;
	struct sqslow_name_key k = { .pid = l->pid };
	struct sqslow_name *buf;
	const SqEventRecord *r;
	__u64 key;

	if (i >= l->n)
		return 1;
	r = &l->rec[i & l->mask];
	if (r->kind != SQ_EV_PROCESS_ACTIVATE || !(seen = bpf_map_lookup_elem(&named, &zero)))
		return 0;
	k.id = r->process.id;
	key = k.id ^ ((__u64)l->pid << 40);
	if (seen->key[k.id & (NAMED_SLOTS - 1)] == key)
		return 0;
	seen->key[k.id & (NAMED_SLOTS - 1)] = key;
	if (bpf_map_lookup_elem(&pnames, &k) || !(buf = bpf_map_lookup_elem(&name_buf, &zero)))
		return 0;
	__builtin_memset(buf->name, 0, sizeof(buf->name));
	if (bpf_probe_read_user_str(buf->name, sizeof(buf->name), (void *)r->process.name) < 0)
		buf->name[0] = 0;
	bpf_map_update_elem(&pnames, &k, buf, BPF_NOEXIST);
	return 0;
}

/* A batch of count records (at most cap, a constant) into a message of cap records' room:
 * read straight from the VM into the ring buffer, one copy. User space reads n. */
static __always_inline int send_batch(__u64 records, __u32 count, __u32 pid, const __u32 cap)
{
	struct sqslow_batch *b = bpf_ringbuf_reserve(&rb, sizeof(*b) + cap * sizeof(SqEventRecord), 0);
	SqEventRecord *rec;
	__u64 size = (__u64)count * sizeof(SqEventRecord);

	if (!b) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	rec = (SqEventRecord *)(b + 1);
	barrier_var(size);	/* the verifier checks the bound on the register the call gets */
	if (size > cap * sizeof(SqEventRecord) || bpf_probe_read_user(rec, size, (void *)records)) {
		bpf_ringbuf_discard(b, BPF_RB_NO_WAKEUP);
		__sync_fetch_and_add(&unreadable, 1);
		return 0;
	}
	b->h.kind = SQSLOW_BATCH;
	b->h.pid = pid;
	b->n = count;
	b->pad = 0;
	struct name_loop nl = { .rec = rec, .mask = cap - 1, .pid = pid, .n = count };

	bpf_loop(count, name_record, &nl, 0);
	bpf_ringbuf_submit(b, wake_flags());
	return 0;
}

/* squeak:sched__batch: the records, as they are, into the ring buffer, in a message whose
 * room is the next of 16, 64 or 256 records (a reservation's size is a constant): one
 * copy, from the VM's buffer into the ring buffer's memory. Through a per-CPU scratch
 * and bpf_ringbuf_output, two copies, each batch cost 1 us more; a whole batch's room
 * for every message filled the ring buffer faster and woke the tool far more often
 * (tests/bench/service-side.sh 6 3 32 mix: +6.74% of the server's CPU a request). */
SEC("usdt")
int BPF_USDT(sched_batch, __u64 records, __u32 count)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;

	if (!count)
		return 0;
	if (count > SQ_BATCH_MAX)	/* a VM that lies: its first records */
		count = SQ_BATCH_MAX;
	if (count <= 16)
		return send_batch(records, count, pid, 16);
	if (count <= 64)
		return send_batch(records, count, pid, 64);
	return send_batch(records, count, pid, SQ_BATCH_MAX);
}

/* Attached to the record switches (squeak.d: req__records, io__records, sample__records),
 * which never fire: they set req__batch's, io__batch's and sample__batch's semaphores, so
 * that the VM writes the requests', the I/O calls' and the allocation samples' records
 * into the buffer that sched__batch's program forwards, without a uprobe hit of each of
 * those probes at every flush (about 3 us each in the traced process). */
SEC("usdt")
int BPF_USDT(record_switch)
{
	return 0;
}

/* Room for a message of size bytes of kind, its head filled in and its time read: NULL
 * (counted in lost) when the ring buffer is full. */
static __always_inline void *message(__u64 size, __u32 kind, __u32 pid)
{
	struct sqslow_head *h = bpf_ringbuf_reserve(&rb, size, 0);

	if (!h) {
		__sync_fetch_and_add(&lost, 1);
		return NULL;
	}
	h->kind = kind;
	h->pid = pid;
	return h;
}

static __always_inline int gc_edge(bool begin, bool full, __u64 pause_ns)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_vm_offsets *vm = bpf_map_lookup_elem(&vms, &pid);
	struct sqslow_gc *e;
	__u64 m[1] = {}, proc;

	if (!vm)
		return 0;
	if (!(e = message(sizeof(*e), SQSLOW_GC, pid)))
		return 0;
	e->ts = bpf_ktime_get_ns();
	e->begin = begin;
	e->full = full;
	sq_current_process(vm, &e->process, &proc);
	e->method = begin && sq_walk_methods(vm, m, 1, 1) ? m[0] : 0;
	e->pause_ns = pause_ns;
	bpf_ringbuf_submit(e, wake_flags());
	return 0;
}

SEC("usdt")
int BPF_USDT(gc_incremental_begin) { return gc_edge(true, false, 0); }

SEC("usdt")
int BPF_USDT(gc_full_begin) { return gc_edge(true, true, 0); }

SEC("usdt")
int BPF_USDT(gc_incremental_end, __u64 seq, __u64 pause_ns) { return gc_edge(false, false, pause_ns); }

SEC("usdt")
int BPF_USDT(gc_full_end, __u64 seq, __u64 pause_ns) { return gc_edge(false, true, pause_ns); }

SEC("usdt")
int BPF_USDT(vm_start, char *version, __u64 offsets)
{
	sq_learn_vm(offsets);
	return 0;
}

/* The VM's thread of a traced VM leaves or takes a CPU (on). Only the thread whose id is
 * the process's: the one that runs Smalltalk, and the only one the VM starts. */
static __always_inline void cpu_edge(struct task_struct *t, bool on)
{
	__u32 tgid = BPF_CORE_READ(t, tgid), tid = BPF_CORE_READ(t, pid);
	struct sqslow_cpu *e;

	if (tid != tgid || (only_pid && tgid != only_pid) || !bpf_map_lookup_elem(&vms, &tgid))
		return;
	if (!(e = message(sizeof(*e), SQSLOW_CPU, tgid)))
		return;
	e->ts = bpf_ktime_get_ns();
	e->on = on;
	e->pad = 0;
	bpf_ringbuf_submit(e, wake_flags());
}

/* Every context switch of the machine: a lookup for each side, a message for a VM's. So
 * that the time a process "ran" while the kernel had its VM off the CPU (preempted by
 * another task, or blocked in a system call or a page fault) is not called its CPU. */
SEC("tp_btf/sched_switch")
int BPF_PROG(vm_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	cpu_edge(prev, false);
	cpu_edge(next, true);
	return 0;
}

/* A timer sample of a VM thread: the running process's innermost methods. */
SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_vm_offsets *vm;
	struct sqslow_sample *e;
	__u8 gc = 0;
	__u64 id, proc;

	if ((only_pid && pid != only_pid) || !(vm = bpf_map_lookup_elem(&vms, &pid)) || !sq_current_process(vm, &id, &proc))
		return 0;
	/* mid-collection the frames may be moving: the pause is in the GC messages */
	if (vm->gc_running && !bpf_probe_read_user(&gc, sizeof(gc), (void *)vm->gc_running) && gc)
		return 0;
	if (!(e = message(sizeof(*e), SQSLOW_SAMPLE, pid)))
		return 0;
	e->ts = bpf_ktime_get_ns();
	e->process = id;
	e->pad = 0;
	e->n = sq_walk_methods(vm, e->methods, SQSLOW_DEPTH, SQSLOW_DEPTH);
	bpf_ringbuf_submit(e, wake_flags());
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqslow.bpf.c - sqslow's flight recorder, the kernel's half. The VM's records
 * (scheduler, requests, allocation samples, I/O calls) do not pass through here: the
 * record switches this attaches to turn them and the VM's record ring on
 * (probes/record_ring.h), and user space polls the ring (tools/sqslow_ring.c). This adds
 * what the records do not hold, as messages in a ring buffer: the collections
 * (gc__*__begin, _end) with the process and method they stop, timer samples of the
 * running process's stack. (The VM thread's context switches come from perf's switch
 * records, read by user space: tools/sqslow_switch.c.)
 *
 * Nothing is aggregated here: user space merges these messages with the records by
 * time, keeps the last seconds and replays them (tools/sqslow_replay.c) when a request
 * is slow. */
#include "sqvm.bpf.h"
#include "event_batch.h"
#include "sqslow.h"

const volatile __u32 only_pid = 0;	/* -p: samples of this process only */

/* 1 MiB: many polls' worth of collections and samples. User space drains it without
 * stopping: captures are written by child processes (tools/sqslow.c). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} rb SEC(".maps");

/* A message wakes sqslow only once a quarter of the ring buffer waits: a wake-up costs
 * the traced process about 10 us (an irq_work and a task wake-up, in its own time);
 * user space drains the ring every SQSLOW_POLL_MS anyway. */
#define WAKE_BYTES (256 * 1024)

static __always_inline __u64 wake_flags(void)
{
	return bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) > WAKE_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

__u64 lost = 0;		/* messages that found the ring buffer full */

/* Attached to the record switches (squeak.d: sched__records, req__records, io__records,
 * sample__records, ring__records), which never fire: they set the batch probes'
 * semaphores, so that the VM writes the records sqslow reads, and the ring's, so that it
 * keeps each flushed batch in its record ring, which user space polls
 * (tools/sqslow_ring.c). No batch probe is attached: a flush costs the traced process a
 * copy into its ring instead of a uprobe hit and this program's copy (about 7 us a batch
 * in a VM guest). */
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

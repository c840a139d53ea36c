// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqstat.bpf.c - tells sqstat at once when an sqvm process starts (with the address of
 * its debug offsets) and when it exits (with its final totals, read from its memory as
 * it exits, so that even a VM that lives less than one refresh is counted); for the
 * exporter, buckets the GC pauses and the request latencies (per route and status) of
 * every VM (the hists map), each request bucket with its latest request (its exemplar).
 * The running
 * VMs' rates come from counters the VM keeps itself (SqVMCounters), which user space
 * reads from their memory: counting every call or allocation here would slow every VM
 * on the host by 10 to 1000 times. */
#include "sqvm.bpf.h"
#include "sqrequest.bpf.h"
#include "sqstat.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} rb SEC(".maps");

/* The event under construction and a copy of the offsets: too big for the stack. */
struct scratch {
	struct sqstat_event e;
	SqDebugOffsets d;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQSTAT_MAX_HISTS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sqstat_hist_key);
	__type(value, struct sqstat_hist);
} hists SEC(".maps");

/* The request each green process has open (bpf/sqrequest.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQSTAT_MAX_OPEN);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sq_request_key);
	__type(value, struct sq_request);
} open_requests SEC(".maps");

__u64 lost = 0;
__u64 lost_observations = 0;	/* the hists map was full, or the open_requests map */
__u64 nested = 0, unseen = 0;	/* requests not followed (bpf/sqrequest.bpf.h) */

/* The VM's counters and the collector's words (SQSTAT_GC_WORDS), from its memory. */
static __always_inline bool read_raw(const SqDebugOffsets *d, struct sqstat_raw *r)
{
	if (bpf_probe_read_user(&r->counters, sizeof(r->counters), (void *)d->counters))
		return false;
#define READ_WORD(f) bpf_probe_read_user(&r->f, sizeof(r->f), (void *)d->f);
	SQSTAT_GC_WORDS(READ_WORD)
#undef READ_WORD
	return true;
}

/* The process's argv, from its mm (CO-RE): the VM is running, so the memory is there. */
static __always_inline void read_cmdline(struct sqstat_event *e)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	unsigned long start = BPF_CORE_READ(task, mm, arg_start);
	unsigned long end = BPF_CORE_READ(task, mm, arg_end);
	__u64 len = end > start ? end - start : 0;

	if (len > SQSTAT_CMDLINE - 1)
		len = SQSTAT_CMDLINE - 1;
	len &= SQSTAT_CMDLINE - 1;	/* the same bound, in a form the verifier keeps */
	e->cmdline_len = 0;
	if (len && !bpf_probe_read_user(e->cmdline, len, (void *)start))
		e->cmdline_len = len;
}

/* The vms map (sqvm.bpf.h) holds each VM's debug offsets' address: from vm__start, or
 * from user space for the VMs that were running when sqstat started. */
static __always_inline int emit(__u32 type, __u64 offsets, __s32 status)
{
	__u32 zero = 0, pid = bpf_get_current_pid_tgid() >> 32;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct sq_vm_offsets *known;

	if (!s)
		return 0;
	__builtin_memset(&s->e, 0, sizeof(s->e));
	s->e.ts_ns = bpf_ktime_get_ns();
	s->e.pid = pid;
	s->e.type = type;
	s->e.status = status;
	read_cmdline(&s->e);
	if (type == SQSTAT_START) {
		s->e.offsets = offsets;
		s->e.offsets_ok = sq_learn_vm(offsets) != 0;
	} else {
		known = bpf_map_lookup_elem(&vms, &pid);
		if (known) {
			s->e.offsets = known->debug_offsets;
			s->e.start_ns = known->started_ns;
			if (!bpf_probe_read_user(&s->d, sizeof(s->d), (void *)known->debug_offsets) &&
			    sq_debug_offsets_ok(&s->d))
				s->e.have_raw = read_raw(&s->d, &s->e.raw);
			bpf_map_delete_elem(&vms, &pid);
		}
	}
	if (bpf_ringbuf_output(&rb, &s->e, sizeof(s->e), 0))
		__sync_fetch_and_add(&lost, 1);
	return 0;
}

/* The smallest i with ns <= 2^i microseconds: the first bucket that holds ns. */
static __always_inline __u32 bucket_of(__u64 ns)
{
	__u64 us = (ns + 999) / 1000;
	__u64 i = us <= 1 ? 0 : sq_log2(us - 1) + 1;	/* 64-bit: see sq_hist_slot */

	return i < SQ_MAX_SLOTS ? i : SQ_MAX_SLOTS - 1;
}

/* One observation of ns into the histogram of (this VM, family, kind, label); a request
 * (id not 0, ended at now) also becomes its bucket's exemplar. Its cost beside the
 * lookup and the two adds it had: four stores into the value the lookup found, two
 * multiplies; no map, no lookup, no helper call more (sqstat.h's struct sqstat_exemplar
 * has the space). Not measurable beside the two uprobe traps of a request:
 * BENCH_ONLY=requests tests/bench/tools.sh, tests/bench/README.md. */
static __always_inline void observe(__u16 family, __u16 kind, __u64 label, __u64 ns, __u64 id, __u64 now)
{
	static const struct sqstat_hist zero;
	struct sqstat_hist_key k = { .pid = bpf_get_current_pid_tgid() >> 32, .family = family,
				     .kind = kind, .label = label };
	struct sqstat_hist *h = sq_lookup_or_init(&hists, &k, &zero, NULL);
	__u32 slot = bucket_of(ns), b = slot < SQSTAT_BUCKETS ? slot : SQSTAT_BUCKETS;

	if (!h) {
		__sync_fetch_and_add(&lost_observations, 1);
		return;
	}
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
	barrier_var(b);		/* keep the check, which the verifier needs, from being optimized away */
	if (id && b <= SQSTAT_BUCKETS) {
		h->ex[b].id = id;
		h->ex[b].ns = ns;
		h->ex[b].end_ns = now;
		h->ex[b].check = sqstat_exemplar_check(id, ns, now);
	}
}

/* The pause as the VM measured it (what its counters add up to). */
SEC("usdt")
int BPF_USDT(gc_young_end, __u64 seq, __u64 pause_ns)
{
	observe(SQSTAT_GC_PAUSE, 0, 0, pause_ns, 0, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(gc_full_end, __u64 seq, __u64 pause_ns)
{
	observe(SQSTAT_GC_PAUSE, 1, 0, pause_ns, 0, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(request_begin, __u64 id, char *route, __u64 process)
{
	struct sq_request_key k = sq_request_key(bpf_get_current_pid_tgid() >> 32, process);
	struct sq_request r = { .id = id, .route = (__u64)route, .begin_ns = bpf_ktime_get_ns() };

	if (sq_request_may_begin(&open_requests, &k, &nested) &&
	    bpf_map_update_elem(&open_requests, &k, &r, BPF_ANY))
		__sync_fetch_and_add(&lost_observations, 1);
	return 0;
}

/* The latency from request__begin, by route (its name kept for user space) and status;
 * the request its bucket's exemplar. */
SEC("usdt")
int BPF_USDT(request_end, __u64 id, char *route, __u64 process, int status)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_request_key k = sq_request_key(pid, process);
	struct sq_request *r = sq_request_ending(&open_requests, &k, id, &unseen);

	if (!r)
		return 0;
	sq_remember_name(pid, r->route, (const void *)r->route);
	observe(SQSTAT_REQUEST, SQSTAT_CODE(status), r->route, now - r->begin_ns, id, now);
	bpf_map_delete_elem(&open_requests, &k);
	return 0;
}

SEC("usdt")
int BPF_USDT(process_exit, __u64 id, char *name)
{
	struct sq_request_key k = sq_request_key(bpf_get_current_pid_tgid() >> 32, id);

	bpf_map_delete_elem(&open_requests, &k);
	return 0;
}

SEC("usdt")
int BPF_USDT(vm_start, char *version, __u64 offsets)
{
	return emit(SQSTAT_START, offsets, 0);
}

SEC("usdt")
int BPF_USDT(vm_exit, int status)
{
	return emit(SQSTAT_EXIT, 0, status);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

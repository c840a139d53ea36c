// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqgc.bpf.c - GC pauses of sqvm processes: log2 histograms and totals per kind of
 * collection, and optionally one event per collection, from squeak:gc__{incremental,full}__
 * {begin,end}. The pause comes from the end probe (the VM measures it); the begin probe
 * gives the event its start time. */
#include "sqvm.bpf.h"
#include "sqgc.h"

/* Options, set by user space before load. */
const volatile bool millis = false;	/* histogram in ms rather than us */
const volatile __u64 min_ns = 0;	/* ignore shorter collections (-M) */
const volatile bool events = false;	/* send one event per collection (-e) */

/* Begin timestamps, per thread and kind of collection: a full collection could run
 * inside a young one's begin/end without the two mixing up. */
struct begin_key {
	__u32 tid;
	__u32 kind;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct begin_key);
	__type(value, __u64);
} begins SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} rb SEC(".maps");

struct sqgc_stats stats[SQGC_KINDS] = {};
__u64 lost = 0;		/* events the ring buffer had no room for */

static __always_inline int on_begin(__u32 kind)
{
	struct begin_key key = { .tid = (__u32)bpf_get_current_pid_tgid(), .kind = kind };
	__u64 now = bpf_ktime_get_ns();

	bpf_map_update_elem(&begins, &key, &now, BPF_ANY);
	return 0;
}

static __always_inline void account(struct sqgc_stats *s, __u64 pause_ns)
{
	__u64 v = millis ? pause_ns / 1000000 : pause_ns / 1000;
	__u32 slot = sq_hist_slot(v);
	__u64 max;

	__sync_fetch_and_add(&s->slots[slot], 1);
	__sync_fetch_and_add(&s->count, 1);
	__sync_fetch_and_add(&s->total_ns, pause_ns);
	for (int i = 0; i < 8; i++) {	/* bounded: a lost race only means a retry */
		max = s->max_ns;
		if (pause_ns <= max || __sync_val_compare_and_swap(&s->max_ns, max, pause_ns) == max)
			break;
	}
}

static __always_inline int on_end(struct pt_regs *ctx, __u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct begin_key key = { .tid = (__u32)id, .kind = kind };
	__u64 now = bpf_ktime_get_ns(), *begin;
	__u64 pause_ns = sq_usdt_arg(ctx, 1);
	struct sqgc_stats *s = &stats[kind & 1];
	struct sqgc_event *e;

	begin = bpf_map_lookup_elem(&begins, &key);
	__u64 begin_ns = begin ? *begin : now - pause_ns;
	__u32 begin_seen = begin != 0;
	if (begin)
		bpf_map_delete_elem(&begins, &key);

	if (pause_ns < min_ns) {
		__sync_fetch_and_add(&s->filtered, 1);
		return 0;
	}
	account(s, pause_ns);
	if (!events)
		return 0;

	e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	e->begin_ns = begin_ns;
	e->end_ns = now;
	e->pause_ns = pause_ns;
	e->begin_seen = begin_seen;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->kind = kind;
	e->seq = sq_usdt_arg(ctx, 0);
	e->young_before = sq_usdt_arg(ctx, 2);
	e->young_after = sq_usdt_arg(ctx, 3);
	e->old_before = sq_usdt_arg(ctx, 4);
	e->old_after = sq_usdt_arg(ctx, 5);
	e->survived = sq_usdt_arg(ctx, 6);
	e->tenured = sq_usdt_arg(ctx, 7);
	e->freed = sq_usdt_arg(ctx, 8);
	e->remembered = sq_usdt_arg(ctx, 9);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("usdt")
int gc_young_begin(struct pt_regs *ctx) { return on_begin(SQGC_YOUNG); }

SEC("usdt")
int gc_young_end(struct pt_regs *ctx) { return on_end(ctx, SQGC_YOUNG); }

SEC("usdt")
int gc_full_begin(struct pt_regs *ctx) { return on_begin(SQGC_FULL); }

SEC("usdt")
int gc_full_end(struct pt_regs *ctx) { return on_end(ctx, SQGC_FULL); }

char LICENSE[] SEC("license") = "Dual BSD/GPL";

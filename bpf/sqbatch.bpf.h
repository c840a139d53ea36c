// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqbatch.bpf.h - reading the VM's event batches (squeak:alloc__batch, squeak:call__batch;
 * the records: probes/event_batch.h). A batch probe hands over the address of the first
 * record and their number; the program copies the batch into this CPU's scratch with one
 * read and visits its records in order with bpf_loop (verified once, whatever the count):
 *
 *	static long on_record(__u32 i, void *state)
 *	{
 *		const SqEventRecord *r = sq_batch_record(i);
 *
 *		if (!r)
 *			return 1;	// past the batch: stop
 *		... aggregate r as the per-event program did its probe's arguments ...
 *		return 0;
 *	}
 *
 *	SEC("usdt")
 *	int BPF_USDT(alloc_batch, __u64 records, __u32 count)
 *	{
 *		bpf_loop(sq_batch_load(records, count), on_record, &state, 0);
 *		return 0;
 *	}
 *
 * Records stamped before sq_batch_since_ns (CLOCK_MONOTONIC; user space sets it before it
 * attaches) are skipped: a VM's buffer may still hold the records of a tool that detached
 * before a flush dropped them, which are not this tool's. Include after sqvm.bpf.h. */
#ifndef SQBATCH_BPF_H
#define SQBATCH_BPF_H

#include "event_batch.h"

_Static_assert((SQ_BATCH_MAX & (SQ_BATCH_MAX - 1)) == 0, "SQ_BATCH_MAX is a power of two");

struct sq_batch_buf {
	__u32 n;		/* records in rec[] */
	__u32 pad;
	SqEventRecord rec[SQ_BATCH_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sq_batch_buf);
} sq_batch_scratch SEC(".maps");

/* Set by user space (the skeleton's .bss) right before it attaches. */
__u64 sq_batch_since_ns = 0;

/* Batches that could not be read (counted, not retried: their events are lost). */
__u64 sq_batch_lost = 0;

/* Copies the batch at records (count records) of the current task into this CPU's
 * scratch; answers how many records to visit (0: none, or unreadable). */
static __always_inline __u32 sq_batch_load(__u64 records, __u32 count)
{
	__u32 zero = 0;
	struct sq_batch_buf *b = bpf_map_lookup_elem(&sq_batch_scratch, &zero);

	__u64 size;

	if (!b || !count)
		return 0;
	if (count > SQ_BATCH_MAX)
		count = SQ_BATCH_MAX;
	size = (__u64)count * sizeof(SqEventRecord);
	barrier_var(size);	/* the verifier checks the bound on the register the call gets */
	if (size > sizeof(b->rec))
		return 0;
	if (bpf_probe_read_user(b->rec, size, (void *)records)) {
		b->n = 0;
		__sync_fetch_and_add(&sq_batch_lost, 1);
		return 0;
	}
	b->n = count;
	return count;
}

/* Record i of the batch sq_batch_load copied; NULL past its end. A record from before
 * this tool attached answers a record of kind SQ_EV_NONE. */
static __always_inline const SqEventRecord *sq_batch_record(__u32 i)
{
	static const SqEventRecord none;
	__u32 zero = 0;
	struct sq_batch_buf *b = bpf_map_lookup_elem(&sq_batch_scratch, &zero);

	if (!b || i >= b->n)
		return 0;
	i &= SQ_BATCH_MAX - 1;	/* a power of two: the verifier sees the bound */
	if (b->rec[i].ts < sq_batch_since_ns)
		return &none;
	return &b->rec[i];
}

#endif

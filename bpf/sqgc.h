// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqgc.h - what sqgc's BPF program and user space share: per-kind histograms and summary
 * counters (in .bss, read and reset with atomic exchanges) and the per-collection event. */
#ifndef SQGC_H
#define SQGC_H

#include "sqcommon.h"

enum sqgc_kind {
	SQGC_YOUNG = 0,		/* gc__incremental__*: the young generation only */
	SQGC_FULL = 1,		/* gc__full__*: the whole heap */
	SQGC_KINDS = 2,
};

/* One interval's view of one kind of collection. */
struct sqgc_stats {
	__u64 slots[SQ_MAX_SLOTS];	/* log2 histogram of pauses, in the display unit */
	__u64 count;			/* collections at least min_ns long */
	__u64 total_ns;			/* their summed pause */
	__u64 max_ns;			/* the longest (written by a compare-and-swap loop) */
	__u64 filtered;			/* collections shorter than min_ns (not in the rest) */
};

/* One collection, for -e. Sizes in bytes, times in nanoseconds (CLOCK_MONOTONIC). */
struct sqgc_event {
	__u64 begin_ns;		/* when gc__*__begin fired; end_ns - pause_ns if it was missed */
	__u64 end_ns;
	__u64 seq;		/* the VM's sequence number of this kind of collection */
	__u64 pause_ns;		/* the pause as the VM measured it */
	__u64 young_before, young_after, old_before, old_after;
	__u64 survived, tenured, freed, remembered;
	__u32 pid, tid;
	__u32 kind;		/* enum sqgc_kind */
	__u32 begin_seen;	/* 1 if the begin probe of this collection was seen */
};

#endif

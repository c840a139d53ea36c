// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqalloc.h - the map layout sqalloc's BPF program and user space share. */
#ifndef SQALLOC_H
#define SQALLOC_H

#include "sqcommon.h"

#define SQALLOC_MAX_KEYS 10240
#define SQALLOC_MAX_CALLERS 16		/* --callers N, N at most this */
#define SQALLOC_CLASS_MAX 1024		/* -C CLASS: the longest name it can match */

/* Fixed-point scale of est_count: the sampled mode adds weight/bytes per sample, a fraction. */
#define SQALLOC_EST_SCALE 1024

/* Key flags. */
#define SQALLOC_NO_STACK 1	/* --callers: the VM's stack could not be walked */

/* What allocations are aggregated by: the process and the addresses of the names (the VM
 * keeps names where they never move, so an address is a name, exactly, however long),
 * and with --callers the Method * of the innermost frames. User space turns addresses
 * into names (tools/sqnames.h). Unused fields stay zero so equal keys are equal bytes. */
struct sqalloc_key {
	__u32 pid;
	__u16 ncallers;			/* --callers: frames in callers[] */
	__u16 flags;			/* SQALLOC_* */
	__u64 cls;			/* the new object's class name */
	__u64 alloc_class;		/* -b: the class defining the allocating method */
	__u64 alloc_sel;		/* -b: its selector */
	__u64 callers[SQALLOC_MAX_CALLERS];	/* --callers: Method *, innermost first */
};

struct sqalloc_val {
	__u64 count;		/* objects (exact mode) or samples (--sample) */
	__u64 bytes;		/* bytes (exact) or the sum of sample weights: estimated bytes */
	__u64 est_count;	/* --sample: estimated objects, times SQALLOC_EST_SCALE */
};

#endif

/* sqalloc.h - the map layout sqalloc's BPF program and user space share. */
#ifndef SQALLOC_H
#define SQALLOC_H

#include "sqcommon.h"

#define SQALLOC_MAX_KEYS 10240

/* Fixed-point scale of est_count: the sampled mode adds weight/bytes per sample, a fraction. */
#define SQALLOC_EST_SCALE 1024

/* What allocations are aggregated by: the class created, and (with -m) the method that
 * created it. Unused fields stay zero so equal keys are equal bytes. */
struct sqalloc_key {
	char cls[SQ_NAME_LEN];		/* class of the new object */
	char alloc_class[SQ_NAME_LEN];	/* -m: class defining the allocating method */
	char alloc_sel[SQ_NAME_LEN];	/* -m: its selector */
};

struct sqalloc_val {
	__u64 count;		/* objects (exact mode) or samples (--sample) */
	__u64 bytes;		/* bytes (exact) or the sum of sample weights: estimated bytes */
	__u64 est_count;	/* --sample: estimated objects, times SQALLOC_EST_SCALE */
};

#endif

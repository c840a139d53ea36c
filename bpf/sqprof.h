// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqprof.h - the map layouts sqprof's BPF program and user space share. */
#ifndef SQPROF_H
#define SQPROF_H

#include "sqcommon.h"
#include "sqgreen.h"

/* The deepest --max-depth: the per-CPU scratch key holds this many frames. The stacks
 * map's key size is set at load to hold exactly --max-depth frames, so a shallow limit
 * costs shallow keys. */
#define SQPROF_MAX_DEPTH 1024
#define SQPROF_DEFAULT_DEPTH 127

#define SQPROF_MAX_STACKS 32768	/* distinct (process, stack) pairs */
#define SQPROF_MAX_NATIVE 16384	/* -K/-U: distinct kernel or C stacks */

/* Key flags. */
#define SQPROF_TRUNCATED 1	/* deeper than --max-depth: the outermost frames are missing */
#define SQPROF_NO_PROCESS 2	/* no Smalltalk process yet (start-up) or a read failed */

/* --wall: the processes sampled per VM and tick, at most (a longer list is cut, and
 * counted), and the state of a suspended process, beyond sqgreen.h's. */
#define SQPROF_WALL_MAX_PROCS 4096
#define SQPROF_SUSPENDED SQ_GREEN_NSTATES

/* Room for a green process's name (longer ones are cut). */
#define SQPROF_PROCESS_LEN 32

/* One stack: the OS process and the green one, then its frames innermost first as
 * Method * addresses (they never move). Only the first max_depth frames are part of the
 * map's key; the rest of the array is scratch space, and unused frames are zero so
 * equal stacks are equal keys. */
struct sqprof_key {
	__u32 pid;
	__u16 depth;			/* frames in use */
	__u16 flags;			/* SQPROF_* */
	__s32 kstack;			/* -K: kernel stack id, else -1 */
	__s32 ustack;			/* -U: the VM's C stack id, else -1 */
	__u32 process_id;		/* the green process's id (1: main), 0 if unknown */
	__u32 state;			/* --wall: its state (enum sq_green_state, or
					 * SQPROF_SUSPENDED); 0 in CPU and allocation profiles */
	char process[SQPROF_PROCESS_LEN];	/* its name; empty: it has none */
	/* The W3C trace context of the green process's innermost open request that has one
	 * (the pprof labels trace_id, span_id, parent_span_id): read only for pprof output
	 * (trace_labels), else, as while it has none, all 0. */
	__u64 trace_hi, trace_lo;		/* the 16-byte trace id, big-endian halves */
	__u64 parent_span;			/* the caller's span (traceparent's parent-id) */
	__u64 span;				/* the request's own span; 0: no trace context */
	__u64 frames[SQPROF_MAX_DEPTH];
};

#define SQPROF_KEY_SIZE(depth) (sizeof(struct sqprof_key) - 8 * (SQPROF_MAX_DEPTH - (depth)))

struct sqprof_val {
	__u64 samples;
	__u64 weight;			/* --alloc: bytes (the probe's weights); else samples */
};

#endif

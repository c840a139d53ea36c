// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqsched.h - what sqsched's BPF program and user space share. */
#ifndef SQSCHED_H
#define SQSCHED_H

#include "sqcommon.h"
#include "sqgreen.h"

#define SQSCHED_MAX_PROCS 16384	/* in the spill */
#define SQSCHED_SLOTS 16384

/* A green process: its VM and its id. */
struct sqsched_key {
	__u32 pid;
	__u32 pad;
	__u64 id;
};

struct sqsched_stats {
	__u64 activations;	/* times the scheduler gave it the CPU */
	__u64 cpu_ns;		/* time it ran */
	__u64 runq_count;	/* activations after a process__ready seen */
	__u64 runq_ns;		/* ... the time they spent ready, waiting to run */
	__u64 runq_max_ns;
	__u64 sem_waits, sem_wait_ns;		/* blocked on Semaphores */
	__u64 delay_waits, delay_wait_ns;	/* blocked on Delays */
	__u64 io_waits, io_wait_ns;		/* blocked on descriptors (io__wait) */
	__u64 gcs, gc_ns;			/* collections that paused it while it ran */
	__u64 max_run_ns;	/* its longest run: activation to wait, ready, suspension or
				 * exit (collections inside it included) */
	__u64 delay_overshoots;	/* Delay waits it ran again after (activation) */
	__u64 delay_overshoot_ns, delay_overshoot_max_ns;	/* ... the time past their length */
	__u64 slots[SQ_MAX_SLOTS];	/* run-queue latency, log2 (us, or ms with -m) */
	char name[SQ_NAME_LEN];
	__u32 exited;
	__u32 pad;
};

/* A slot of the stats table (bpf/sqslots.bpf.h's layout, which the BPF side asserts):
 * user space reads the array and the spill. */
struct sqsched_slot {
	__u64 used;		/* 1: held by (pid, id) */
	__u64 id;
	__u32 pid;
	__u32 pad;
	struct sqsched_stats st;
};

/* The Semaphore waits, by what they were and who ended them: user space adds up the rows
 * of a Semaphore (pid, semaphore) and names its top waiter and signaller. */
#define SQSCHED_MAX_SEM_ROWS 16384

struct sqsched_sem_key {
	__u32 pid;
	__u32 pad;
	__u64 semaphore;	/* its identity hash */
	__u64 method;		/* the Method * the wait began in */
	__u64 waiter;		/* the process that waited */
	__u64 signaller;	/* the process that ran when its signal made the waiter ready (0:
				 * not known, or the wait ended otherwise) */
};

struct sqsched_sem_stats {
	__u64 waits, wait_ns, max_ns;
};

/* A slot of bpf/sqgreen.bpf.h's table of process states (the layout of
 * bpf/sqslots.bpf.h, which the BPF side asserts): user space reads the runs in progress. */
struct sqsched_green_slot {
	__u64 used;
	__u64 id;
	__u32 pid;
	__u32 pad;
	struct sq_green v;
};

/* -e: one switch. */
struct sqsched_event {
	__u64 ts_ns;
	__u64 from, to;		/* process ids (from 0: not known yet) */
	__u64 runq_ns;		/* how long `to` was ready before it ran (0: not seen) */
	__u32 pid, tid;
	char to_name[SQ_NAME_LEN];
};

#endif

// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqgreen.h - the states of a green process as the tools tell them from the process,
 * I/O and GC probes (bpf/sqgreen.bpf.h), shared by the BPF side and user space. */
#ifndef SQGREEN_H
#define SQGREEN_H

#include "sqcommon.h"

enum sq_green_state {
	SQ_GREEN_UNKNOWN,	/* not seen since the tool attached, or suspended */
	SQ_GREEN_RUNNING,	/* the VM thread runs it (process__activate) */
	SQ_GREEN_READY,		/* on its ready queue (process__ready) */
	SQ_GREEN_SEMAPHORE,	/* blocked on a Semaphore (process__wait, semaphore != 0) */
	SQ_GREEN_DELAY,		/* blocked on a Delay (process__wait, semaphore 0) */
	SQ_GREEN_IO,		/* blocked on a descriptor (io__wait to io__ready's process__ready) */
	SQ_GREEN_GC,		/* it was running when a collection began: the pause */
	SQ_GREEN_NSTATES,
};

#define SQ_GREEN_MAX_PROCS 65536	/* in the spill */
#define SQ_GREEN_SLOTS 16384

/* A process's state (bpf/sqgreen.bpf.h's table of them, which sqsched also reads from
 * user space for the runs in progress). */
struct sq_green {
	__u64 since_ns;		/* when it entered state */
	__u32 state;		/* enum sq_green_state */
	__u32 pad;
	__u64 run_ns;		/* running or gc: when its run began (0: not seen), which a
				 * collection inside the run does not end */
	/* Its last wait (process__wait), for a tool that charges what it waited on when
	 * the wait ends: written by the tool on the entry sq_green_enter answers, kept
	 * until the next wait (sqsched). */
	__u64 wait_on;		/* the Semaphore's identity hash (0: a Delay) */
	__u64 wait_method;	/* the Method * it waited in */
	__u64 wait_until_ns;	/* a Delay's end (the wait's time + its length) until it runs
				 * again (0: none pending) */
};

/* Their names in the tools' output (sqprof --wall's second frame, JSON keys). */
#define SQ_GREEN_NAMES { "unknown", "running", "ready", "semaphore", "delay", "io", "gc" }

#endif

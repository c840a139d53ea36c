// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqgreen.h - the states of a green process as the tools tell them from the process,
 * I/O and GC probes (bpf/sqgreen.bpf.h), shared by the BPF side and user space. */
#ifndef SQGREEN_H
#define SQGREEN_H

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

/* Their names in the tools' output (sqprof --wall's second frame, JSON keys). */
#define SQ_GREEN_NAMES { "unknown", "running", "ready", "semaphore", "delay", "io", "gc" }

#endif

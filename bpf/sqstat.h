// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqstat.h - what sqstat's BPF program and user space share. */
#ifndef SQSTAT_H
#define SQSTAT_H

#include "sqcommon.h"

#define SQSTAT_MAX_VMS 4096

enum sqstat_type {
	SQSTAT_START = 0,
	SQSTAT_EXIT = 1,
};

/* The figures sqstat shows, as totals since the VM started. */
struct sqstat_totals {
	__u64 activations, allocations, process_switches, dnus, class_loads, primitive_failures;
	__u64 bytes_allocated;		/* up to the last collection (plus eden at exit) */
	__u64 young_count, full_count, young_pause_ns, full_pause_ns;
};

/* A VM started (with the address of its debug offsets) or exited (with its totals, read
 * from its memory as it exits, so that a VM that lives less than one interval is seen). */
#define SQSTAT_CMDLINE 512	/* a power of two: the BPF side masks the length with it */

struct sqstat_event {
	__u64 ts_ns;		/* CLOCK_MONOTONIC */
	__u64 start_ns;		/* exit: when its vm__start fired (0: not seen) */
	__u64 offsets;		/* the run-time address of its sqvm_debug_offsets */
	__u32 pid;
	__u32 type;		/* enum sqstat_type */
	__s32 status;		/* exit: the exit status */
	__u32 have_totals;	/* exit: 1 if the totals could be read */
	struct sqstat_totals totals;
	/* Its command line (arguments separated by NULs, cut at SQSTAT_CMDLINE bytes) as the
	 * kernel holds it, for a VM gone before user space could read /proc/PID/cmdline. */
	__u32 cmdline_len;
	char cmdline[SQSTAT_CMDLINE];
};

/* What the BPF side keeps per VM. */
struct sqstat_vm {
	__u64 offsets;		/* the run-time address of its sqvm_debug_offsets */
	__u64 start_ns;		/* its vm__start, or 0 */
};

#endif

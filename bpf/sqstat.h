// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqstat.h - what sqstat's BPF program and user space share. */
#ifndef SQSTAT_H
#define SQSTAT_H

#include "sqcommon.h"

enum sqstat_type {
	SQSTAT_START = 0,
	SQSTAT_EXIT = 1,
};

/* The collector's figures sqstat reads, each a uint64_t at the address of the debug
 * offsets' field of the same name. Listed once, for both readers: the BPF program as a
 * VM exits, user space every interval (tools/sqstat.c turns them into totals). */
#define SQSTAT_GC_WORDS(X) \
	X(gc_top) X(gc_eden) X(gc_bytes_allocated) X(gc_young_count) X(gc_full_count) \
	X(gc_young_pause_ns) X(gc_full_pause_ns)

/* What sqstat reads of a VM: its counters (SqVMCounters) and the collector's words. */
struct sqstat_raw {
	SqVMCounters counters;
#define SQSTAT_WORD(f) __u64 f;
	SQSTAT_GC_WORDS(SQSTAT_WORD)
#undef SQSTAT_WORD
};

/* A VM started (with the address of its debug offsets) or exited (with its figures, read
 * from its memory as it exits, so that a VM that lives less than one interval is seen). */
#define SQSTAT_CMDLINE 512	/* a power of two: the BPF side masks the length with it */

struct sqstat_event {
	__u64 ts_ns;		/* CLOCK_MONOTONIC */
	__u64 start_ns;		/* exit: when its vm__start fired (0: not seen) */
	__u64 offsets;		/* the run-time address of its sqvm_debug_offsets */
	__u32 pid;
	__u32 type;		/* enum sqstat_type */
	__s32 status;		/* exit: the exit status */
	__u32 have_raw;		/* exit: 1 if its figures could be read */
	struct sqstat_raw raw;
	/* Its command line (arguments separated by NULs, cut at SQSTAT_CMDLINE bytes) as the
	 * kernel holds it, for a VM gone before user space could read /proc/PID/cmdline. */
	__u32 cmdline_len;
	/* start: its debug offsets were read here and are a structure the tools know; if not
	 * (a fake VM, or one that lies), user space does not try to read it at once: a flood
	 * of such starts costs the exporter's loop next to nothing each */
	__u32 offsets_ok;
	char cmdline[SQSTAT_CMDLINE];
};

/* Latency histograms, bucketed here as the GC and request probes fire, for the exporter
 * (--listen, --prom): one per VM, family and kind (and, for families that have one, a
 * label: the address of a name the VM keeps, resolved through the names map). A family
 * is one Prometheus histogram: adding one is its probe program calling observe() in the
 * BPF program, and one function writing it in tools/sqstat.c. */
enum sqstat_family {
	SQSTAT_GC_PAUSE = 1,		/* sqvm_gc_pause_seconds; kind 0 young, 1 full */
	SQSTAT_REQUEST = 2,		/* sqvm_request_duration_seconds; kind: the status
					 * (SQSTAT_CODE), label: the route */
};

/* request__end's status as a histogram's kind: -2 to 999 as themselves (HTTP's codes,
 * and the probe's -1 and -2), any other value as one kind, "other", so that a program
 * cannot make more than 1,003 histograms of a route. */
#define SQSTAT_CODE_MIN (-2)
#define SQSTAT_CODE_MAX 999
#define SQSTAT_CODE_OTHER (SQSTAT_CODE_MAX - SQSTAT_CODE_MIN + 1)
#define SQSTAT_CODE(status) \
	((status) >= SQSTAT_CODE_MIN && (status) <= SQSTAT_CODE_MAX ? (__u16)((status) - SQSTAT_CODE_MIN) \
								     : (__u16)SQSTAT_CODE_OTHER)

struct sqstat_hist_key {
	__u32 pid;
	__u16 family;			/* enum sqstat_family */
	__u16 kind;
	__u64 label;			/* a name's address; 0: none */
};

#define SQSTAT_MAX_HISTS 8192
#define SQSTAT_MAX_OPEN 65536		/* requests open at once, in all VMs */
/* Buckets exported, up to 2^25 us (33.6 s); slower ones count in +Inf only. */
#define SQSTAT_BUCKETS 26

/* The most recent request a bucket holds (OpenMetrics's exemplar): request__begin's id,
 * which sqreq --slowest prints and sqflow writes as request_id, its latency and when it
 * ended. One VM's requests end on its one interpreter thread, so one CPU at a time writes
 * a histogram's exemplars, but a scrape may copy one while it is written: check (written
 * with the rest) is their mix, and a copy whose fields do not give it is torn, read as
 * none. id 0: none yet (ids count from 1). */
struct sqstat_exemplar {
	__u64 id;
	__u64 ns;
	__u64 end_ns;			/* CLOCK_MONOTONIC */
	__u64 check;			/* sqstat_exemplar_check(id, ns, end_ns) */
};

static inline __u64 sqstat_exemplar_check(__u64 id, __u64 ns, __u64 end_ns)
{
	return (id * 0x9e3779b97f4a7c15ULL) ^ (ns * 0xc2b2ae3d27d4eb4fULL) ^ end_ns;
}

/* Slot i counts observations of (2^(i-1), 2^i] microseconds (slot 0: up to 1 us): the
 * bucket le="2^i us" of a Prometheus histogram is the sum of slots 0..i. A request
 * histogram keeps the exemplar of each exported bucket, the +Inf bucket's (slots
 * SQSTAT_BUCKETS and up) last: 27 x 32 bytes beside the 264 of the counts, so at most
 * 8,192 x 1,128 bytes (9.2 MB) in all, allocated as histograms appear. */
struct sqstat_hist {
	__u64 slots[SQ_MAX_SLOTS];
	__u64 sum_ns;
	struct sqstat_exemplar ex[SQSTAT_BUCKETS + 1];
};

#endif

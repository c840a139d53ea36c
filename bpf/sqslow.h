// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqslow.h - the messages sqslow's user space keeps and replays: the VMs' own batches
 * (probes/event_batch.h), which user space reads from the VMs' record rings
 * (tools/sqslow_ring.c) and wraps as SQSLOW_BATCH messages; what the BPF program adds
 * through its ring buffer, which a batch does not hold: collections and timer stack
 * samples; and the VM thread's context switches, from perf's switch records
 * (tools/sqslow_switch.c). User space keeps the last seconds of them
 * (tools/sqslow_window.c) and replays them (tools/sqslow_replay.c). */
#ifndef SQSLOW_H
#define SQSLOW_H

#include "sqcommon.h"

/* Frames of a timer sample, innermost first. */
#define SQSLOW_DEPTH 32
/* How often user space reads the VMs' record rings and drains the ring buffer (ms): it
 * bounds how late a slow request is told, and a ring of 256 batches holds this many
 * ms of a VM that flushes 12,000 batches a second (a busy server flushes about 1,500). */
#define SQSLOW_POLL_MS 20

enum sqslow_kind {
	SQSLOW_BATCH = 1,	/* struct sqslow_batch, then n SqEventRecords */
	SQSLOW_GC,		/* struct sqslow_gc */
	SQSLOW_SAMPLE,		/* struct sqslow_sample */
	SQSLOW_CPU,		/* struct sqslow_cpu */
};

/* Every message begins with this. */
struct sqslow_head {
	__u32 kind;		/* enum sqslow_kind */
	__u32 pid;		/* the VM's */
};

struct sqslow_batch {
	struct sqslow_head h;
	__u32 n;		/* records that follow */
	__u32 pad;
};

/* A collection begins (begin 1) or ends, with the process it stops and where. */
struct sqslow_gc {
	struct sqslow_head h;
	__u64 ts;
	__u32 begin, full;
	__u64 process;		/* the running process's id (0: none known) */
	__u64 method;		/* its innermost Method * (0: none) */
	__u64 pause_ns;		/* at the end: the VM's own measure of the pause */
};

/* A timer sample of the running process. */
struct sqslow_sample {
	struct sqslow_head h;
	__u64 ts;
	__u64 process;
	__u32 n;		/* methods[0..n) */
	__u32 pad;
	__u64 methods[SQSLOW_DEPTH];
};

/* The VM's thread (the one that runs Smalltalk) leaves its CPU (on 0: preempted, or
 * blocked in the kernel) or gets one back (on 1): a perf switch record. */
struct sqslow_cpu {
	struct sqslow_head h;
	__u64 ts;
	__u32 on;
	__u32 pad;
};

#endif

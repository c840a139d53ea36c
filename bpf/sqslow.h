// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqslow.h - what sqslow's BPF program and user space share: the messages of its ring
 * buffer. The BPF side forwards the VM's own batches (probes/event_batch.h) whole, the
 * allocation samples among their records, and adds what a batch does not hold:
 * collections, timer stack samples, the VM thread's context switches and process names.
 * User space keeps the last seconds of them (tools/sqslow_window.c)
 * and replays them (tools/sqslow_replay.c). */
#ifndef SQSLOW_H
#define SQSLOW_H

#include "sqcommon.h"

/* Frames of a timer sample, innermost first. */
#define SQSLOW_DEPTH 32
/* Bytes of a green process's name kept (longer ones are cut). */
#define SQSLOW_NAME_LEN 32
/* How often user space drains the ring buffer (ms): messages wake it only in bulk
 * (bpf/sqslow.bpf.c), so this bounds how late a slow request is told. */
#define SQSLOW_POLL_MS 50
/* Process names kept (an LRU map: the oldest processes' go first). */
#define SQSLOW_MAX_NAMES 16384

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
 * blocked in the kernel) or gets one back (on 1): sched_switch. */
struct sqslow_cpu {
	struct sqslow_head h;
	__u64 ts;
	__u32 on;
	__u32 pad;
};

/* The names map: (VM, process id) -> its name, read while its batch is handled. */
struct sqslow_name_key {
	__u32 pid;
	__u32 pad;
	__u64 id;
};

struct sqslow_name {
	char name[SQSLOW_NAME_LEN];
};

#endif

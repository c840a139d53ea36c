// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqcalls.h - the maps sqcalls's BPF program and user space share. */
#ifndef SQCALLS_H
#define SQCALLS_H

#include "sqcommon.h"

#define SQCALLS_MAX_METHODS 10240

/* Activations a process's shadow stack keeps (bpf/sqshadow.bpf.h): deeper ones are
 * counted, not timed (the deep counter). A power of two. */
#define SQCALLS_SHADOW_DEPTH 256

/* A method (or a block of it): the process and the addresses of its defining class's
 * name and its selector, which never move (user space turns them into names). */
struct sqcalls_key {
	__u32 pid;
	__u32 block;		/* 1: the blocks of that method */
	__u64 def_class;	/* address of the defining class's name */
	__u64 selector;		/* address of the selector */
};

struct sqcalls_stats {
	__u64 count;		/* returns seen (calls that ended while traced) */
	__u64 total_ns;		/* inclusive time of the outermost activations (recursion once) */
	__u64 self_ns;		/* exclusive time: minus the callees' inclusive time */
	__u64 entered_before;	/* of count: entered before tracing began (no time) */
	__u64 slots[SQ_MAX_SLOTS];	/* -L: log2 histogram of inclusive times (us, or ms with -m) */
};

/* -S: the system calls made while the method was the innermost running one. */
struct sqcalls_sys {
	__u64 count;
	__u64 total_ns;
};

/* --mse: calls between methods, by the Methods of the two frames (native memory that
 * never moves; user space names them from their printName). */
#define SQCALLS_MAX_EDGES 16384

struct sqcalls_edge_key {
	__u32 pid;
	__u32 pad;
	__u64 caller;		/* Method * of the calling frame (a block's, when a block calls) */
	__u64 callee;		/* Method * of the frame that returned */
};

#endif

// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqflow.h - the event sqflow's BPF program sends user space for each method or block
 * entry and return. */
#ifndef SQFLOW_H
#define SQFLOW_H

#include "sqcommon.h"

enum sqflow_type {
	SQFLOW_ENTRY = 0,
	SQFLOW_RETURN = 1,
};

struct sqflow_event {
	__u64 ts_ns;		/* CLOCK_MONOTONIC */
	__u64 duration_ns;	/* returns: since the matching entry; 0 if it was not seen */
	__u64 frame;		/* the activation's frame address (pairs entry and return) */
	__u64 recv_addr, sel_addr, def_addr;	/* the names' addresses in the VM (full names) */
	__u64 process;		/* the green process that runs it (0: not known yet) */
	__u32 pid, tid;
	__u32 depth;		/* frames below this one on the process's Smalltalk stack (0: outermost) */
	__u8 type;		/* enum sqflow_type */
	__u8 block;		/* 1: a block activation, 0: a method */
	__u8 paired;		/* returns: 1 if the entry was seen (duration_ns is valid) */
	__u8 pad;
	/* The names' first SQ_NAME_LEN - 1 bytes (user space reads longer ones whole). */
	char recv_class[SQ_NAME_LEN];	/* class of the receiver */
	char selector[SQ_NAME_LEN];	/* of the method (of the home method, for a block) */
	char def_class[SQ_NAME_LEN];	/* class that defines that method */
};

/* A request, whole, once it has ended (req__batch's records, paired as
 * bpf/sqrequest.bpf.h says, the way sqreq pairs them): its slice on the track of its
 * green process. The ring buffer carries these and struct sqflow_event: told apart by
 * their sizes. */
struct sqflow_request {
	__u64 begin_ns, end_ns;	/* CLOCK_MONOTONIC */
	__u64 id;		/* request__begin's: 1, 2, ... per VM */
	__u64 route_addr;	/* its interned name in the VM */
	__u64 process;		/* the owner */
	__u64 trace_hi, trace_lo;	/* the W3C trace id, big-endian halves */
	__u64 parent, span;	/* the caller's span and the request's own; span 0: no trace */
	__u32 pid, tid;
	__s32 status;		/* -1, -2: as request__end's */
	__u32 pad;
	char route[SQ_NAME_LEN];	/* its first SQ_NAME_LEN - 1 bytes */
};

/* The key of the names of green processes (the proc_names map: the first SQ_NAME_LEN - 1
 * bytes of the name the scheduler probes give, read at the first that names it). */
struct sqflow_proc_key {
	__u32 pid;
	__u32 pad;
	__u64 id;		/* the green process */
};

#endif

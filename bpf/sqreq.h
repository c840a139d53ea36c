// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqreq.h - what sqreq's BPF program and user space share. */
#ifndef SQREQ_H
#define SQREQ_H

#include "sqcommon.h"
#include "sqgreen.h"

#define SQREQ_MAX_ROUTES 1024
#define SQREQ_MAX_OPEN 65536

/* The latency histogram for percentiles: log-linear in ns, 16 slots per power of two
 * (each within 1/16 of its value: a percentile is off by at most 3%): slot v for
 * v < 16, else 16 * (floor(log2 v) - 3) + the next 4 bits below the top one. */
#define SQREQ_FINE_SLOTS 640
#define SQREQ_TOP_METHODS 4

/* A route of a VM: the address of its interned name. */
struct sqreq_key {
	__u32 pid;
	__u32 pad;
	__u64 route;
};

struct sqreq_route {
	__u64 count;			/* requests ended */
	__u64 errors;			/* ... with status >= 500, or -1/-2 (never ended by the program) */
	__u64 total_ns, max_ns;
	__u64 state_ns[SQ_GREEN_NSTATES];	/* where the time went (sq_green_state) */
	__u64 allocations, bytes;
	__u64 slots[SQ_MAX_SLOTS];	/* -L: log2 of the latency in us */
	__u64 fine[SQREQ_FINE_SLOTS];	/* the latency in ns, log-linear */
};

/* A method's share of one request: CPU samples in it, or time waiting in it. */
struct sqreq_method {
	__u64 method;
	__u64 ns;
};

/* A request's W3C trace context (SQ_EV_REQUEST_TRACE); span 0: it has none. */
struct sqreq_trace {
	__u64 trace_hi, trace_lo, parent, span;
	__u32 flags;
	__u32 pad;
};

/* --slowest: one record per ended request. */
struct sqreq_event {
	__u32 pid;
	__s32 status;
	__u64 id, route, process;
	__u64 begin_ns, latency_ns;
	__u64 state_ns[SQ_GREEN_NSTATES];
	__u64 allocations, bytes;
	struct sqreq_method top[SQREQ_TOP_METHODS];
	struct sqreq_trace trace;
};

#endif

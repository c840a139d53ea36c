// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_merge.h - sqflow --merge: a browser's trace (Chromium's JSON, as the DevTools
 * Protocol's Tracing domain or chrome://tracing saves it) put into sqflow's Chrome trace,
 * on one timeline: both count CLOCK_MONOTONIC µs (Chromium's TimeTicks on Linux), so the
 * server's slices are written with their absolute times and the browser's are copied as
 * they are.
 *
 * The browser's fetches are the performance.measure slices named "fetch TRACEPARENT URL"
 * (examples/http/static/trace.html makes them): each becomes a slice of its own on a
 * "fetches" track of its renderer, and a flow links it to the server's request begun with
 * that traceparent (the request's parent span is the fetch's span), and the request to
 * the first method that ran in it. The trace read is untrusted: its size is bounded, it
 * is parsed whole before anything is written, and every string is escaped again. */
#ifndef SQFLOW_MERGE_H
#define SQFLOW_MERGE_H

#include <stddef.h>
#include <stdio.h>

#include <linux/types.h>

/* The largest browser trace read (Chromium's are a few MiB a minute with these
 * categories). */
#define SQFLOW_MERGE_MAX_BYTES (512u << 20)

/* A request of the server's trace that has a trace context: where a fetch can lead. */
struct sqflow_merge_request {
	__u64 trace_hi, trace_lo;	/* the W3C trace id */
	__u64 parent, span;		/* the caller's span (the fetch's), the request's own */
	__u64 begin_ns, end_ns;		/* CLOCK_MONOTONIC */
	__u32 pid, tid;			/* its track in the trace */
};

struct sqflow_merge_stats {
	size_t events;		/* the browser's events copied */
	size_t fetches;		/* fetch measures paired into slices */
	size_t unpaired;	/* fetch measure begins or ends without the other */
	size_t linked;		/* fetches linked to a request */
	size_t inside;		/* of those, the request began within the fetch (causally bound to) */
	size_t ended_after;	/* of those, the request ended after the fetch: the VM ran endRequest
				 * after the browser had the answer (its thread descheduled after the
				 * write, say), which nothing forbids */
};

/* Appends to out, each event after ",\n", the browser trace at path: its events, its
 * fetches as slices, and the flows from each fetch to the requests of reqs[0..n) (sorted
 * here) it led to. Nothing is written if the trace cannot be read: -1 and why in err. */
int sqflow_merge_browser(FILE *out, const char *path, struct sqflow_merge_request *reqs, size_t n,
			 struct sqflow_merge_stats *st, char *err, size_t errlen);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_trace.h - a capture of sqslow's window as a Trace Event Format file (the JSON
 * that Perfetto's UI, chrome://tracing and speedscope open): per green process a track
 * of its states as slices (with the wait's method, holder and waker as args), a track of
 * its requests and one of its I/O calls; a track of the collections; the timer samples
 * and allocation samples as instants on the process's track; a flow arrow from each
 * process whose signal woke another to the one it woke. Within a track no two slices
 * overlap, so every slice is balanced whatever the viewer's nesting rules. */
#ifndef SQSLOW_TRACE_H
#define SQSLOW_TRACE_H

#include <stdio.h>

#include "sqslow_replay.h"
#include "sqslow_window.h"

/* Names of what the messages hold by address, resolved by the tool. */
struct sqslow_names {
	void *ctx;
	const char *(*process)(void *ctx, __u32 pid, __u64 id);		/* never NULL */
	const char *(*method)(void *ctx, __u32 pid, __u64 method);	/* never NULL */
	const char *(*name)(void *ctx, __u32 pid, __u64 addr);		/* a route, a class; never NULL */
};

/* What a capture is of, for its otherData and the request it names. */
struct sqslow_capture {
	const char *trigger;			/* "request", "gc", "wait", "signal" */
	const struct sqslow_request *req;	/* the slow request (NULL: none) */
	const char *summary;			/* the line sqslow printed */
	__u64 since_ns;				/* the tool's start: older records are not its */
	__u64 end_ns;				/* the capture's end (now, or the request's end) */
	__u64 window_ns;			/* W */
	__u32 pid;				/* the traced VM (0: every) */
};

/* Writes the window w as a trace to out. Answers the events written (negative: out of
 * memory). */
long sqslow_trace_write(FILE *out, const struct sqslow_window *w, const struct sqslow_capture *c,
			const struct sqslow_names *names);

/* The state names as the trace and the line print them. */
extern const char *const sqslow_state_names[SQ_GREEN_NSTATES];

#endif

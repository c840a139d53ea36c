// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_trace.h - a capture of sqslow's window as a trace: per green process a track
 * of its states as slices (with the wait's method, holder and waker as args), a track of
 * its requests and one of its I/O calls; a track of the collections; the timer samples
 * and allocation samples as instants on the process's track; a flow arrow from each
 * process whose signal woke another to the one it woke. Within a track no two slices
 * overlap, so every slice is balanced whatever the viewer's nesting rules. One replay of
 * the window finds them and hands them to a writer (struct sqslow_trace_out): a Trace
 * Event Format file (sqslow_trace_json.c: the JSON that Perfetto's UI, chrome://tracing
 * and speedscope open) or Perfetto's protobuf trace (sqslow_trace_perfetto.c). */
#ifndef SQSLOW_TRACE_H
#define SQSLOW_TRACE_H

#include <stdbool.h>
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

/* An event's argument. */
enum sqslow_arg_type {
	SQSLOW_ARG_STR,		/* s */
	SQSLOW_ARG_INT,		/* i */
	SQSLOW_ARG_UINT,	/* u */
	SQSLOW_ARG_MS,		/* ms, printed with 3 decimals */
	SQSLOW_ARG_TRUE,
	SQSLOW_ARG_STACK,	/* n methods of VM pid, innermost first, named by names */
};

struct sqslow_arg {
	const char *key;
	enum sqslow_arg_type type;
	bool key_arg;		/* one that identifies (request_id, route, trace_id, span_id):
				 * the compact writer keeps only these */
	const char *s;
	long long i;
	unsigned long long u;
	double ms;
	const __u64 *stack;
	__u32 n, pid;
};

struct sqslow_trace_end {
	const struct sqslow_capture *c;
	const struct sqslow_window *win;
	__u64 base_ns, end_ns;
	__u64 clamped;		/* state slices that began before the last one ended */
	long events;
};

/* What the replay of a capture found, as the writers take it. Tracks are (pid, tid):
 * tid 1 the collections; for green process ID, 4 ID its states, 4 ID + 1 its requests,
 * 4 ID + 2 its I/O calls. A track is named (track) before its first event, and its VM
 * (process) before its first track. Times are CLOCK_MONOTONIC ns, none before base_ns. */
struct sqslow_trace_out {
	void *ctx;
	void (*begin)(void *ctx, __u64 base_ns);
	void (*process)(void *ctx, __u32 pid);
	void (*track)(void *ctx, __u32 pid, __u64 tid, const char *name);
	void (*slice)(void *ctx, __u32 pid, __u64 tid, const char *name, const char *cat, __u64 begin_ns,
		      __u64 end_ns, const struct sqslow_arg *args, int nargs);
	void (*instant)(void *ctx, __u32 pid, __u64 tid, const char *name, const char *cat, __u64 ts_ns,
			const struct sqslow_arg *args, int nargs);
	/* flow id from track from_tid to track to_tid at ts_ns (ids 1, 2, ...) */
	void (*flow)(void *ctx, __u32 pid, __u64 from_tid, __u64 to_tid, __u64 ts_ns, __u64 id);
	/* the end: what the capture is of and how it went; answers false if the writer ran
	 * out of memory. Frees the writer. */
	bool (*end)(void *ctx, const struct sqslow_trace_end *e);
};

/* The writers (ctx NULL: out of memory). names resolves a stack argument's methods. */
struct sqslow_trace_out sqslow_trace_json(FILE *out, const struct sqslow_names *names);
struct sqslow_trace_out sqslow_trace_perfetto(FILE *out);

/* Writes the window w as a trace through out (which it frees). Answers the events
 * written, a flow counted as 2 (negative: out of memory). */
long sqslow_trace_write(const struct sqslow_trace_out *out, const struct sqslow_window *w,
			const struct sqslow_capture *c, const struct sqslow_names *names);

/* The state names as the trace and the line print them. */
extern const char *const sqslow_state_names[SQSLOW_NSTATES];

#endif

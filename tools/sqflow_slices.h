// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_slices.h - sqflow's entries and returns paired into slices, a track per green
 * process, for the trace writers (sqflow_chrome.c: Chrome JSON; sqflow_perfetto.c:
 * Perfetto protobuf), which are told each track, each slice's begin and end, and each
 * time a VM thread passes from one track to another.
 *
 * The stream comes from a target, through its probes: a VM that lies, or a ring buffer
 * that overflowed, can send returns without entries, entries without returns, times that
 * go backwards and any number of processes. Whatever it sends, the slices told lie
 * within the trace's window, the slices of a track nest (each ends before its parent,
 * its end told before its parent's), no two tracks share an out_tid, and what had to be
 * left out is counted (fuzz/fuzz_flow.c checks exactly that, over arbitrary streams). */
#ifndef SQFLOW_SLICES_H
#define SQFLOW_SLICES_H

#include <stdbool.h>
#include <stddef.h>

#include "sqflow.h"

/* What a target can make sqflow hold: its tracks (a green process on a thread: a VM
 * can make any number) and the open calls of each (its recursion). Past either, events
 * are left out and counted. */
#define SQFLOW_MAX_TRACKS 4096
#define SQFLOW_MAX_DEPTH 100000

/* A green process on a VM thread: its calls' track. */
struct sqflow_track {
	__u32 pid, tid;
	__u64 process;		/* 0: not known yet (the one running when tracing began) */
	__u32 out_tid;		/* unique among the pid's tracks: (__u32)process, unless taken */
	__u32 index;		/* 0, 1, 2, ...: the order the tracks were made in */
	char name[SQ_NAME_LEN];	/* the green process's, as its probes give it ("": none known) */
};

/* A call: entered at ts_ns (CLOCK_MONOTONIC), named name (NULL: "?"). */
struct sqflow_call {
	__u64 frame, ts_ns;
	char *name;
	bool block;
};

/* What a writer does with them. Every function may be NULL. */
struct sqflow_sink {
	void *ctx;
	/* A new track (new_pid: the first of its VM process), before anything on it. */
	void (*track)(void *ctx, const struct sqflow_track *t, bool new_pid);
	/* The VM thread of to, last seen running from's calls (at from_ns), runs to's now:
	 * told before to's next slice event. */
	void (*handoff)(void *ctx, const struct sqflow_track *from, __u64 from_ns, const struct sqflow_track *to);
	/* A call entered and kept open. */
	void (*begin)(void *ctx, const struct sqflow_track *t, const struct sqflow_call *c);
	/* An open call (told to begin) ends at end_ns; unfinished: it was still running when
	 * the trace ended. */
	void (*end)(void *ctx, const struct sqflow_track *t, const struct sqflow_call *c, __u64 end_ns, bool unfinished);
	/* A call that began before the trace returns at end_ns: c->ts_ns is the window's
	 * start, and every slice told on t so far lies within it. False: the writer could
	 * not keep it (counted as left out). */
	bool (*before)(void *ctx, const struct sqflow_track *t, const struct sqflow_call *c, __u64 end_ns);
	/* A request on t from r->begin_ns to r->end_ns (within the window), named route:
	 * told once it has ended, in no order with t's calls (a writer of whole slices, as
	 * Chrome's JSON, writes it then; a streaming one, as Perfetto's, sorts by time). */
	void (*request)(void *ctx, const struct sqflow_track *t, const struct sqflow_request *r, const char *route);
	/* The trace's end: events seen, lost by the BPF side, left out here. Frees ctx. */
	void (*finish)(void *ctx, __u64 events, __u64 lost, __u64 left_out);
};

/* t's name for a viewer: "main (green process 1, thread 185)", "green process 5 (thread
 * 185)" for a process without a name, or "green process not known yet (thread 185)";
 * the process's name as the target gave it, unescaped (SQFLOW_TRACK_NAME_LEN bytes with
 * the NUL). */
#define SQFLOW_TRACK_NAME_LEN (SQ_NAME_LEN + 72)
void sqflow_track_name(const struct sqflow_track *t, char *buf, size_t len);

/* Names green process process of VM pid into name (SQ_NAME_LEN bytes with its NUL; ""
 * when none is known). */
typedef void (*sqflow_namer)(void *ctx, __u32 pid, __u64 process, char *name);

struct sqflow_slices;

/* Starts pairing into sink whose times count from base_ns (CLOCK_MONOTONIC: when every
 * probe was attached; earlier events are left out), each new track named by namer (NULL:
 * no names). NULL if out of memory (then sink's finish is not called: its ctx is the
 * caller's to free). */
struct sqflow_slices *sqflow_slices_begin(struct sqflow_sink sink, sqflow_namer namer, void *namer_ctx,
					  __u64 base_ns);

/* One entry or return, its call named name ("Point>>x", malloc'ed: kept while the call
 * is open, then freed; NULL: "?"). */
void sqflow_slices_event(struct sqflow_slices *s, const struct sqflow_event *e, char *name);

/* A whole request (bpf/sqflow.h), its route named route (NULL: "?"), to the track of its
 * green process; its times are cut to the window, one wholly outside it is left out. */
void sqflow_slices_request(struct sqflow_slices *s, const struct sqflow_request *r, const char *route);

/* The trace's window ends at end_ns (when detaching began): later events are left out,
 * and calls still open are told as ending there. */
void sqflow_slices_stop(struct sqflow_slices *s, __u64 end_ns);

/* Ends the calls still open (unfinished) and the trace (the sink's finish), reports on
 * stderr what was left out, and frees s. */
void sqflow_slices_end(struct sqflow_slices *s, __u64 events, __u64 lost);

#endif

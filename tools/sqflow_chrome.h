// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_chrome.h - sqflow's --format=chrome: Chrome trace-event JSON (Perfetto,
 * chrome://tracing) from the stream of entries and returns, a track per green process.
 *
 * The stream comes from a target, through its probes: a VM that lies, or a ring buffer
 * that overflowed, can send returns without entries, entries without returns, times that
 * go backwards and any number of processes. Whatever it sends, the trace written is
 * well formed: every slice lies within the trace's window, the slices of a track nest,
 * no two tracks share an id, and what had to be left out is counted in otherData
 * (fuzz/fuzz_flow.c checks exactly that, over arbitrary streams). */
#ifndef SQFLOW_CHROME_H
#define SQFLOW_CHROME_H

#include <stdio.h>

#include "sqflow.h"

/* What a target can make the writer hold: its tracks (a green process on a thread: a VM
 * can make any number) and the open calls of each (its recursion). Past either, events
 * are left out and counted. */
#define SQFLOW_CHROME_MAX_TRACKS 4096
#define SQFLOW_CHROME_MAX_DEPTH 100000

struct sqflow_chrome;

/* Starts a trace on out whose times count from base_ns (CLOCK_MONOTONIC: when every
 * probe was attached; earlier events are left out). NULL if out of memory. */
struct sqflow_chrome *sqflow_chrome_begin(FILE *out, __u64 base_ns);

/* One entry or return, its call named name ("Point>>x", malloc'ed: the writer keeps it
 * while the call is open and frees it; NULL: "?"). */
void sqflow_chrome_event(struct sqflow_chrome *c, const struct sqflow_event *e, char *name);

/* The trace's window ends at end_ns (when detaching began): later events are left out,
 * and calls still open are written as ending there. */
void sqflow_chrome_stop(struct sqflow_chrome *c, __u64 end_ns);

/* Writes the calls still open (marked unfinished) and the trace's end with its counts
 * (events seen, lost by the BPF side), reports on stderr what was left out, and frees c. */
void sqflow_chrome_end(struct sqflow_chrome *c, __u64 events, __u64 lost);

#endif

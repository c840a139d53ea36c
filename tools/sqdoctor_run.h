// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_run.h - recording with the family's own tools: sqdoctor runs sqgc, sqalloc,
 * sqsched, sqreq, sqio and sqprof side by side on one VM (each with -p PID -j, from the
 * folder sqdoctor itself is in), starts the clock once every one of them says
 * "Tracing", and after the duration (or at Ctrl-C, or when the VM exits) sends them
 * SIGINT, upon which each prints its final report and exits. The report is read as soon
 * as it is written, without waiting for the exit: a tool detaches after its report, and
 * the kernel takes about 0.1 s to remove each uprobe. Their output is kept,
 * bounded, for the rules to read. One that fails keeps its error line: the report says
 * which evidence is missing, the others go on. */
#ifndef SQDOCTOR_RUN_H
#define SQDOCTOR_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

/* The most output kept of one recorder (sqgc -e writes a line per collection). */
#define SQ_RECORDER_OUT_MAX (64u << 20)
#define SQ_RECORDER_ERR_MAX 4096

struct sq_recorder {
	const char *tool;		/* "sqgc" */
	const char *args[8];		/* its own options, beside -p PID -j (NULL-terminated) */
	const char *final;		/* text only its final report's line holds (NULL: wait
					 * for it to exit) */
	pid_t child;			/* 0: not started or reaped */
	int out_fd, err_fd;		/* -1 once closed */
	char *out;			/* its stdout */
	size_t out_len, out_cap;
	bool out_cut;			/* it wrote more than SQ_RECORDER_OUT_MAX */
	char err[SQ_RECORDER_ERR_MAX];	/* the start of its stderr */
	size_t err_len;
	bool tracing;			/* it printed its "Tracing" line */
	int status;			/* its exit status (-1: killed, not run, or running) */
	bool ok;			/* it traced and wrote its final report */
};

/* The window the recorders shared: from the last one's "Tracing" to the SIGINT (both
 * CLOCK_MONOTONIC ns), and whether it ended early (Ctrl-C, or the VM exited). */
struct sq_window {
	__u64 begin_ns, end_ns;
	bool interrupted, vm_exited;
};

/* Runs the recorders r[0..n) on pid for duration_ns (tooldir: where they are). 0 when at
 * least one recorded, else -1 (the reason printed). on_start(ctx), if given, runs once
 * they are all attached, at the window's start (sqdoctor attaches its own probes then). */
int sq_record(struct sq_recorder *r, int n, pid_t pid, __u64 duration_ns, const char *tooldir,
	      bool verbose, void (*on_start)(void *ctx), void *ctx, struct sq_window *w);
/* Waits a while (1 s) for the recorders still detaching to exit; those that have not
 * finish on their own. */
void sq_record_finish(struct sq_recorder *r, int n);
/* Its error line (the first line of its stderr that is not "Tracing ..."), or NULL. */
const char *sq_recorder_error(struct sq_recorder *r);
void sq_recorders_free(struct sq_recorder *r, int n);

#endif

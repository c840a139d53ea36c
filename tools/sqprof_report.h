// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_report.h - a profile as folded stacks, and what sqprof prints from it: the
 * self/total table, folded lines, JSON. The flame graph (sqprof_svg.h) reads the same. */
#ifndef SQPROF_REPORT_H
#define SQPROF_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Frames that are not methods. A truncated stack starts with the marker: its outermost
 * frames are missing, so its first real frame must not pass for a root. */
#define SQP_TRUNCATED "[truncated]"
#define SQP_NO_FRAME "[VM]"		/* sampled outside any Smalltalk method */

/* The W3C trace context of the request a stack's samples were taken in (span 0: none). */
struct sqp_trace {
	uint64_t trace_hi, trace_lo;	/* the 16-byte trace id, big-endian halves */
	uint64_t parent_span;		/* the caller's span */
	uint64_t span;			/* the request's own; 0: no trace context */
};

/* One stack: frames outermost first, joined by ';' (the folded format), and who ran it:
 * the VM process, its green process and the trace of its request (the labels of a pprof
 * sample). The same frames in two green processes are two stacks; the reports that know
 * no labels (folded lines, JSON) show them as one. */
struct sqp_stack {
	char *frames;
	uint64_t samples;
	uint64_t weight;		/* samples, or bytes in an allocation profile */
	pid_t pid;			/* 0: not known (a profile read from folded stacks) */
	char *process;			/* the green process's name; NULL: not known */
	struct sqp_trace trace;		/* all 0: taken outside any request with a trace */
};

struct sqp_profile {
	struct sqp_stack *stacks;
	size_t n, cap;
	bool merged;			/* sorted by frames and labels, duplicates summed */
};

/* What the reports say about how the profile was taken. */
struct sqp_info {
	bool alloc;			/* weights are bytes */
	bool wall;			/* --wall: every process, each stack's first two frames
					 * its name and state */
	uint64_t wall_ticks;		/* --wall: samples of every process taken */
	uint64_t wall_missed;		/* --wall: ticks the tool was too late for */
	bool from_file;			/* read from folded input, not sampled */
	const char *input;		/* that input's name */
	pid_t pid;			/* 0: every VM */
	int nvms;			/* VMs sampled */
	long hz;
	double seconds;
	unsigned max_depth;
	uint64_t truncated;		/* samples deeper than max_depth */
	uint64_t lost, lost_weight;	/* samples the kernel map had no room for */
	uint64_t unknown;		/* --alloc: samples of VMs not (yet) known */
	uint64_t unresolved;		/* frames whose method name could not be read */
	uint64_t inconsistent;		/* samples dropped by the BPF walk: the stack failed its checks */
	uint64_t alloc_period;		/* --alloc: the VM's mean bytes between samples (0: not known) */
	long top;			/* table rows; 0: all */
	bool sort_total;		/* table order: total, not self */
};

/* Adds a stack (frames copied). */
int sqp_profile_add(struct sqp_profile *p, const char *frames, uint64_t samples, uint64_t weight);

/* The same, run by green process `process` (copied; NULL: not known) of VM pid. */
int sqp_profile_add_labeled(struct sqp_profile *p, const char *frames, pid_t pid, const char *process,
			    uint64_t samples, uint64_t weight);

/* The same, taken in a request with trace context t (NULL, or span 0: none). */
int sqp_profile_add_traced(struct sqp_profile *p, const char *frames, pid_t pid, const char *process,
			   const struct sqp_trace *t, uint64_t samples, uint64_t weight);

/* Moves the stacks of VM pid from one profile to the end of another. -ENOMEM. */
int sqp_profile_move_pid(struct sqp_profile *from, pid_t pid, struct sqp_profile *to);

/* Sorts by frames, then labels, and sums equal stacks. */
void sqp_profile_merge(struct sqp_profile *p);

void sqp_profile_free(struct sqp_profile *p);

/* Reads folded lines ("a;b;c 42"); a count is both samples and weight. Returns 0, or -1
 * with a message on stderr naming name:line. */
int sqp_read_folded(FILE *f, const char *name, struct sqp_profile *p);

uint64_t sqp_total_weight(const struct sqp_profile *p);
uint64_t sqp_total_samples(const struct sqp_profile *p);

/* The reports. The profile is merged first. */
void sqp_print_folded(FILE *f, struct sqp_profile *p);
void sqp_print_table(FILE *f, struct sqp_profile *p, const struct sqp_info *info);
void sqp_print_json(FILE *f, struct sqp_profile *p, const struct sqp_info *info);

/* Is this frame a Smalltalk method ("Class>>selector", "[] in Class>>selector")? */
bool sqp_is_method_frame(const char *frame, size_t len);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_rules.h - the evidence one recording gathered, and the rules that read it.
 *
 * Each rule answers a score from 0 (nothing to see) to 100 (this is what is wrong), as
 * JDK Mission Control's automated-analysis rules do, with a one-line finding that names
 * what it points at (a Class>>selector, a class, a green process, a route) and the
 * command that shows more. A score is a ramp between two thresholds of the measure the
 * rule is about ("fine" below the first, "certainly wrong" past the second); the
 * thresholds, and why each sits where it does, are in docs/TOOLS.md ("sqdoctor") and
 * tests/doctor/README.md (the corpus they were set against). */
#ifndef SQDOCTOR_RULES_H
#define SQDOCTOR_RULES_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "sqjson.h"

/* The recorders (sqdoctor_run.h), in the order of struct sq_evidence's lines. */
enum sqd_source { SQD_GC, SQD_ALLOC, SQD_SCHED, SQD_REQ, SQD_IO, SQD_CPU, SQD_WALL, SQD_NSOURCES };

/* A recorder's output: its JSON lines, parsed. */
struct sqd_lines {
	struct sq_jv **v;
	int n;
	bool ok;		/* it attached and reported */
	char why[256];		/* else: why not (its error line) */
};

/* One storm row of sqdoctor's own BPF program (bpf/sqdoctor.h), its names resolved. */
struct sqd_storm {
	int kind;		/* SQDOCTOR_DNU, SQDOCTOR_EXCEPTION */
	char cls[256];		/* DNU: the receiver's class; EXCEPTION: the exception's */
	char sender[512];	/* DNU: the selector; EXCEPTION: the signalling Class>>selector */
	__u64 count;
};

struct sq_evidence {
	pid_t pid;
	char cmdline[256];
	__u64 begin_ns, end_ns;		/* the window all recorders shared */
	double seconds;
	struct sqd_lines src[SQD_NSOURCES];
	struct sqd_storm *storms;
	int nstorms;
	bool have_dnu, have_exceptions;	/* the VM has the probe, and it was attached */
	__u64 storms_lost;
};

#define SQD_TEXT_MAX 640

struct sq_finding {
	const char *id;			/* "gc-pause" */
	const char *title;		/* "GC pressure" */
	int score;			/* 0-100; -1: no evidence */
	char text[SQD_TEXT_MAX];	/* the finding, printable */
	char target[256];		/* what it names (printable), or "" */
	char command[320];		/* what shows more */
	char evidence[1024];		/* the figures it scored, as one JSON object */
};

#define SQD_NRULES 13

/* Applies every rule to e: out[0..SQD_NRULES), in the rules' order. */
void sqd_apply_rules(const struct sq_evidence *e, struct sq_finding *out);

/* The last line of a recorder's output with "type" equal to type (NULL: the last line). */
const struct sq_jv *sqd_last(const struct sq_evidence *e, enum sqd_source s, const char *type);

#endif

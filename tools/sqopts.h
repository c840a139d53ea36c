// SPDX-License-Identifier: BSD-2-Clause
/* sqopts.h - what every sqvm tool has: the common options (-p, --vm, -d, -T, -j, -v,
 * [interval [count]]) and the VM binaries they name (struct sq_common), their parsing,
 * messages, exit statuses and the clock every time stamp is taken from.
 *
 * The contract of every shared helper (sqtargets, sqattach, sqloop, ...): it prints its
 * own error message, one line prefixed with the tool's name (sq_error), and returns a
 * negative value; the tool then cleans up and exits SQ_EXIT_ERROR. */
#ifndef SQOPTS_H
#define SQOPTS_H

#include <argp.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <sys/types.h>
#include <linux/types.h>

#include "sqtargets.h"

#define SQTOOLS_VERSION "0.1.0"

/* Exit statuses: 0 done, 1 an error while tracing or setting up, 2 a bad command line. */
#define SQ_EXIT_ERROR 1
#define SQ_EXIT_USAGE 2

enum sq_format {
	SQ_FORMAT_TEXT,
	SQ_FORMAT_JSON,		/* JSON lines */
	SQ_FORMAT_CHROME,	/* Chrome trace-event JSON (sqflow) */
	SQ_FORMAT_PERFETTO,	/* Perfetto's protobuf trace (sqflow) */
};

/* The options every tool has, and what sq_find_targets (sqtargets.h) found from them. */
struct sq_common {
	const char *tool;		/* program name, for messages */
	pid_t pid;			/* -p; 0: every process running the VM binary */
	const char *vm;			/* --vm */
	bool verbose;			/* -v */
	bool timestamp;			/* -T */
	enum sq_format format;		/* -j, --format */
	__u64 interval_ns;		/* [interval]: 0 means one report at the end */
	__u64 duration_ns;		/* -d: trace this long, then report and exit; 0: no limit */
	long count;			/* [count]: reports before exiting; 0 means no limit */
	int npositional;
	__u64 start_ns;			/* CLOCK_MONOTONIC when main() began */

	int nbins;			/* filled by sq_find_targets */
	struct sq_binary bins[SQ_MAX_BINARIES];
	int pidfd;			/* -p: readable once the process has exited; else -1 */
	bool targets_optional;		/* no VM binary found is no error (sqstat: VMs may come) */
};

/* Options of every tool, to put first in the tool's argp option table. */
#define SQ_OPT_VM 0x1001
#define SQ_OPT_FORMAT 0x1002
#define SQ_OPT_VERSION 0x1003
#define SQ_COMMON_OPTIONS \
	{ "pid", 'p', "PID", 0, "Trace this process only (default: every process running the VM)", 0 }, \
	{ "vm", SQ_OPT_VM, "PATH", 0, "The sqvm binary to trace system-wide (default: sqvm on PATH)", 0 }, \
	{ "timestamp", 'T', NULL, 0, "Include timestamps on output", 0 }, \
	{ "json", 'j', NULL, 0, "Machine-readable output: one JSON object per line", 0 }, \
	{ "verbose", 'v', NULL, 0, "Verbose: libbpf debug output and start-up timing", 0 }, \
	{ "duration", 'd', "DURATION", 0, "Trace this long (seconds, or 500ms, 2m...), then report and exit", 0 }, \
	{ "help", 'h', NULL, 0, "Show this help", 0 }, \
	{ "version", SQ_OPT_VERSION, NULL, 0, "Show the version", 0 }

/* Start-up: the program name, the start time and argp's conventions. */
void sq_init(struct sq_common *c, const char *tool);

/* Handles a common option or positional argument; ARGP_ERR_UNKNOWN for the tool's own. */
int sq_parse_common_opt(int key, char *arg, struct argp_state *state, struct sq_common *c);

/* "250ms", "2s", "1.5us", "100ns"; a bare number is in units of unit_ns. */
int sq_parse_duration(const char *s, __u64 unit_ns, __u64 *ns);
int sq_parse_long(const char *s, long min, long max, long *out);

/* "TOOL: message" on stderr, one line. */
void sq_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Now, in CLOCK_MONOTONIC nanoseconds: the clock of bpf_ktime_get_ns, so event times and
 * ours compare. */
static inline __u64 sq_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#endif

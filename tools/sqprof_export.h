// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_export.h - a profile in the formats other viewers read: speedscope's JSON file
 * format (a "sampled" profile) and pprof's gzipped protobuf (profile.proto), each with
 * the frames' source files and lines where known. */
#ifndef SQPROF_EXPORT_H
#define SQPROF_EXPORT_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sqprof_report.h"

/* Where a frame's method was defined: file and line, or NULL/0 when not known (a
 * profile read back from folded stacks). */
typedef void (*sqp_location_fn)(void *ctx, const char *frame, const char **file, uint32_t *line);

/* speedscope: https://www.speedscope.app/file-format-schema.json. Weights are bytes for
 * an allocation profile, nanoseconds of CPU (samples times the period) otherwise.
 * Returns 0, or -errno. */
int sqp_write_speedscope(FILE *f, struct sqp_profile *p, const struct sqp_info *info, const char *name,
			 sqp_location_fn loc, void *ctx);

/* What a pprof file says besides the stacks. */
struct sqp_pprof {
	uint64_t start_ns;		/* time_nanos: when sampling began (CLOCK_REALTIME) */
	uint64_t duration_ns;		/* duration_nanos; 0: info->seconds */
	sqp_location_fn loc;		/* frames' files and lines (NULL: none) */
	/* The command line of a VM, for its samples' cmdline label (NULL: no such label). */
	const char *(*cmdline)(void *ctx, pid_t pid);
	void *ctx;
	const char *comments[4];	/* comment: free text, shown by pprof -comments */
	const char *binary;		/* the mapping's file: the VM's executable (NULL: "sqvm") */
};

/* pprof: a gzipped perftools.profiles.Profile with sample types samples/count and
 * cpu/nanoseconds (or alloc_space/bytes), one function and one location per method, the
 * period (CPU: nanoseconds between samples; allocations: the VM's mean bytes between
 * samples, when known) and, on every sample that has them, the labels pid, cmdline and
 * process (the green process), state (--wall), and trace_id, span_id and parent_span_id
 * (taken in a request with a W3C trace context). Returns 0, or -errno. */
int sqp_write_pprof(FILE *f, struct sqp_profile *p, const struct sqp_info *info, const struct sqp_pprof *o);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_chrome.h - sqflow's --format=chrome: Chrome trace-event JSON (Perfetto,
 * chrome://tracing) of the slices sqflow_slices.c pairs, a complete ("X") event per call
 * and a thread per green process. Whatever the stream, the trace written parses, and
 * what was left out is counted in otherData (fuzz/fuzz_flow.c checks it). */
#ifndef SQFLOW_CHROME_H
#define SQFLOW_CHROME_H

#include <stdio.h>

#include "sqflow_slices.h"

/* A sink writing to out, its ts counting µs from CLOCK_MONOTONIC's base_ns, the trace's
 * head written; its ctx NULL if out of memory. merge: a browser's trace to put in at the
 * end (sqflow_merge.h; base_ns 0 then, the browser's own clock), or NULL; if it cannot
 * be, *merge_failed is set and the server's trace is written alone. */
struct sqflow_sink sqflow_chrome_sink(FILE *out, __u64 base_ns, const char *merge, int *merge_failed);

#endif

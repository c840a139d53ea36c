// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_perfetto.h - sqflow's --format=perfetto: Perfetto's protobuf trace (a Trace
 * message: TracePackets, streamed) of the slices sqflow_slices.c pairs. Each call is a
 * TrackEvent slice (TYPE_SLICE_BEGIN at its entry, TYPE_SLICE_END at its return) on the
 * track of its green process, a child of its VM process's track; names are interned;
 * each time a VM thread passes from one green process to another, a flow goes from an
 * instant "process switch" on the one it left to the next event of the one it runs.
 * Times are CLOCK_MONOTONIC ns, delta-coded on a sequence clock that a ClockSnapshot ties
 * to BUILTIN_CLOCK_MONOTONIC (3), which is also the trace's clock. The fields used, with
 * their numbers, are tools/perfetto/trace_subset.proto's. */
#ifndef SQFLOW_PERFETTO_H
#define SQFLOW_PERFETTO_H

#include <stdio.h>

#include "sqflow_slices.h"

/* What a target can make the writer hold besides sqflow_slices.c's: the names it
 * interns (past either bound, names are written whole in each event), and the calls
 * begun before the trace whose begins are written at the end (past them, left out). */
#define SQFLOW_PERFETTO_MAX_NAMES 65536
#define SQFLOW_PERFETTO_MAX_NAME_BYTES (16u << 20)
#define SQFLOW_PERFETTO_MAX_BEFORE 65536

/* A sink writing to out, the trace's clock and sequence set up from base_ns (the one
 * given sqflow_slices_begin); its ctx NULL if out of memory. */
struct sqflow_sink sqflow_perfetto_sink(FILE *out, __u64 base_ns);

#endif

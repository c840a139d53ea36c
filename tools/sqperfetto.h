// SPDX-License-Identifier: BSD-2-Clause
/* sqperfetto.h - what the tools' Perfetto writers share (sqflow --format=perfetto,
 * sqslow --format=perfetto): the field numbers of tools/perfetto/trace_subset.proto
 * (upstream's), one packet at a time through sqpb.c on one sequence, times delta-coded
 * on a sequence clock that the first packet ties to BUILTIN_CLOCK_MONOTONIC, and event
 * names interned (InternedData.event_names) up to the writer's bounds. */
#ifndef SQPERFETTO_H
#define SQPERFETTO_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#include "sqintern.h"
#include "sqpb.h"

/* Field numbers and values, as in tools/perfetto/trace_subset.proto (upstream's). */
enum {
	TRACE_PACKET = 1,			/* Trace.packet */
	PACKET_TIMESTAMP = 8,
	PACKET_TIMESTAMP_CLOCK_ID = 58,
	PACKET_CLOCK_SNAPSHOT = 6,
	PACKET_TRACK_EVENT = 11,
	PACKET_TRACK_DESCRIPTOR = 60,
	PACKET_SEQUENCE_ID = 10,		/* trusted_packet_sequence_id */
	PACKET_INTERNED_DATA = 12,
	PACKET_SEQUENCE_FLAGS = 13,
	PACKET_DEFAULTS = 59,			/* trace_packet_defaults */
	DEFAULTS_TIMESTAMP_CLOCK_ID = 58,
	SNAPSHOT_CLOCKS = 1, SNAPSHOT_PRIMARY_TRACE_CLOCK = 2,
	CLOCK_ID = 1, CLOCK_TIMESTAMP = 2, CLOCK_IS_INCREMENTAL = 3,
	INTERNED_EVENT_NAMES = 2, EVENT_NAME_IID = 1, EVENT_NAME_NAME = 2,
	EVENT_TYPE = 9, EVENT_TRACK_UUID = 11, EVENT_NAME_IID_FIELD = 10, EVENT_NAME_FIELD = 23,
	EVENT_FLOW_IDS = 47, EVENT_TERMINATING_FLOW_IDS = 48, EVENT_DEBUG_ANNOTATIONS = 4,
	ANNOTATION_NAME = 10, ANNOTATION_BOOL_VALUE = 2, ANNOTATION_UINT_VALUE = 3,
	ANNOTATION_INT_VALUE = 4, ANNOTATION_STRING_VALUE = 6,
	TRACK_UUID = 1, TRACK_NAME = 2, TRACK_PROCESS = 3, TRACK_PARENT_UUID = 5,
	PROCESS_PID = 1, PROCESS_NAME = 6,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3,
	BUILTIN_CLOCK_MONOTONIC = 3,
	CLOCK_DELTAS = 64,			/* ours: sequence-scoped, incremental, ns */
};

/* One writer's sequence. */
struct sqperfetto {
	FILE *out;
	struct sqpb pb;			/* the packet being written */
	struct sq_intern names;		/* event names: iid = index + 1 */
	size_t name_bytes;		/* theirs */
	size_t max_names, max_name_bytes;	/* past either, names are written whole */
	__u64 clock;			/* CLOCK_DELTAS: the last time written on it */
	char *fix;			/* a name made well-formed UTF-8 */
	size_t fixcap;
	__u64 unwritten;		/* packets the encoder could not make (out of memory) */
};

/* Sets p up to write to out (the bounds of its interned names given), and writes the
 * first packet: the sequence's state starts there, and its clock at base_ns. */
void sqperfetto_start(struct sqperfetto *p, FILE *out, __u64 base_ns, size_t max_names, size_t max_name_bytes);

/* Opens a packet on the sequence; at ts_ns unless has_ts is false. A time not before the
 * sequence clock's last is written as the delta from it; an earlier one as itself, on
 * CLOCK_MONOTONIC. */
void sqperfetto_packet_open(struct sqperfetto *p, bool has_ts, __u64 ts_ns);

/* Closes the packet and writes it out (or counts it unwritten). */
void sqperfetto_packet_close(struct sqperfetto *p);

/* s as well-formed UTF-8 (a byte that is not becomes U+FFFD, as in the JSON), its length
 * in *len; NULL if out of memory. Valid until the next call. */
const char *sqperfetto_well_formed(struct sqperfetto *p, const char *s, size_t *len);

/* Interns name into the open packet: its iid (its interned data added to the packet if
 * new), or 0 past the bounds or out of memory: then the event names itself. */
__u64 sqperfetto_intern(struct sqperfetto *p, const char *name, size_t len);

/* Frees what p holds. */
void sqperfetto_free(struct sqperfetto *p);

#endif

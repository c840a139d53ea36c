// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_perfetto.c - Perfetto's protobuf trace from sqflow's slices (sqflow_perfetto.h),
 * written a packet at a time through sqpb.c: nothing is held but the interned names,
 * one pending flow per track and the begins of calls that began before the trace.
 *
 * Size: an event is a packet of some 15 bytes (its time as a delta, its track's uuid,
 * its name's iid), so a call takes some 30 where its Chrome JSON event takes 100 or
 * more (tests/perfetto.sh: under 30% of the JSON's size). Packets do not carry
 * SEQ_NEEDS_INCREMENTAL_STATE (it tells a reader which packets to skip after a loss,
 * and a file that one writer streams loses none): 2 bytes a packet, an eighth of it.
 *
 * Ordering: trace processors sort packets by time, ties in file order. A slice's begin
 * is written at its entry and its end at its return, so ties nest as they should. A
 * call that began before the trace encloses everything its track did before its
 * return, and begins at the window's start like every other such call of the track: so
 * its end is written at its return, and the begins of them all at the trace's end, the
 * outermost (the last to return) first. (A call entered at the very nanosecond of the
 * window's start, inside such a call, would tie with it the wrong way round: sqflow reads
 * that time after attaching, and no probe fires in the same nanosecond.) */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sqflow_perfetto.h"
#include "sqintern.h"
#include "sqoutput.h"
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
	ANNOTATION_NAME = 10, ANNOTATION_BOOL_VALUE = 2,
	TRACK_UUID = 1, TRACK_NAME = 2, TRACK_PROCESS = 3, TRACK_PARENT_UUID = 5,
	PROCESS_PID = 1, PROCESS_NAME = 6,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3,
	BUILTIN_CLOCK_MONOTONIC = 3,
	CLOCK_DELTAS = 64,			/* ours: sequence-scoped, incremental, ns */
};

#define SEQUENCE 1	/* the one sequence all packets are on */

/* Track uuids: a green process's track is its index + 1; a VM process's, past them. */
#define TRACK_UUID_OF(t) ((__u64)(t)->index + 1)
#define PROCESS_UUID_OF(pid) ((__u64)SQFLOW_MAX_TRACKS + 1 + (pid))

struct before {
	__u64 uuid, iid;
};

struct perfetto {
	FILE *out;
	__u64 base_ns;			/* the window's start */
	struct sqpb pb;			/* the packet being written */
	struct sq_intern names;		/* event names: iid = index + 1 */
	size_t name_bytes;		/* theirs */
	__u64 clock;			/* CLOCK_DELTAS: the last time written on it */
	__u64 switch_iid;		/* "process switch", once interned (0: not yet) */
	__u64 flow_in[SQFLOW_MAX_TRACKS];	/* by track index: a flow to end at its next event */
	__u64 flows;			/* flow ids given */
	struct before *before;		/* begins to write at the end, in order of return */
	size_t nbefore, capbefore;
	char *fix;			/* a name made well-formed UTF-8 */
	size_t fixcap;
	__u64 unwritten;		/* packets the encoder could not make (out of memory) */
};

/* ===================================================================== */
/* Packets                                                               */
/* ===================================================================== */

/* Opens a packet on the sequence; at ts_ns unless has_ts is false. A time not before the
 * sequence clock's last is written as the delta from it (a byte or three, where an
 * absolute time takes eight); an earlier one (a begin written at the end, another
 * thread's) as itself, on CLOCK_MONOTONIC. */
static void packet_open(struct perfetto *p, bool has_ts, __u64 ts_ns)
{
	sqpb_reset(&p->pb);
	sqpb_open(&p->pb, TRACE_PACKET);
	if (has_ts && ts_ns >= p->clock) {
		sqpb_varint(&p->pb, PACKET_TIMESTAMP, ts_ns - p->clock);
		p->clock = ts_ns;
	} else if (has_ts) {
		sqpb_varint(&p->pb, PACKET_TIMESTAMP, ts_ns);
		sqpb_varint(&p->pb, PACKET_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_MONOTONIC);
	}
	sqpb_varint(&p->pb, PACKET_SEQUENCE_ID, SEQUENCE);
}

static void packet_close(struct perfetto *p)
{
	sqpb_close(&p->pb);
	if (p->pb.failed)
		p->unwritten++;
	else
		fwrite(p->pb.data, 1, p->pb.len, p->out);
}

/* The first packet: the sequence's state starts here, and its clock with the trace. */
static void write_start(struct perfetto *p, __u64 base_ns)
{
	packet_open(p, false, 0);
	sqpb_varint(&p->pb, PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	sqpb_open(&p->pb, PACKET_DEFAULTS);
	sqpb_varint(&p->pb, DEFAULTS_TIMESTAMP_CLOCK_ID, CLOCK_DELTAS);
	sqpb_close(&p->pb);
	sqpb_open(&p->pb, PACKET_CLOCK_SNAPSHOT);
	sqpb_open(&p->pb, SNAPSHOT_CLOCKS);
	sqpb_varint(&p->pb, CLOCK_ID, CLOCK_DELTAS);
	sqpb_varint(&p->pb, CLOCK_TIMESTAMP, base_ns);
	sqpb_varint(&p->pb, CLOCK_IS_INCREMENTAL, 1);
	sqpb_close(&p->pb);
	sqpb_open(&p->pb, SNAPSHOT_CLOCKS);
	sqpb_varint(&p->pb, CLOCK_ID, BUILTIN_CLOCK_MONOTONIC);
	sqpb_varint(&p->pb, CLOCK_TIMESTAMP, base_ns);
	sqpb_close(&p->pb);
	sqpb_varint(&p->pb, SNAPSHOT_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_MONOTONIC);
	sqpb_close(&p->pb);
	packet_close(p);
	p->clock = base_ns;
}

/* s as well-formed UTF-8 (a byte that is not becomes U+FFFD, as in the JSON); NULL if out
 * of memory. */
static const char *well_formed(struct perfetto *p, const char *s, size_t *len)
{
	size_t n = strlen(s), need = 3 * n + 1, o = 0;

	if (need > p->fixcap) {
		char *grown = realloc(p->fix, need);

		if (!grown)
			return NULL;
		p->fix = grown;
		p->fixcap = need;
	}
	for (size_t i = 0; i < n;) {
		int k = sq_utf8_seq((const unsigned char *)s + i, n - i);

		if (k > 0) {
			memcpy(p->fix + o, s + i, (size_t)k);
			o += (size_t)k, i += (size_t)k;
		} else {
			memcpy(p->fix + o, "\xef\xbf\xbd", 3);
			o += 3, i++;
		}
	}
	p->fix[o] = '\0';
	*len = o;
	return p->fix;
}

/* Interns name into the open packet: its iid (its interned data added to the packet if
 * new), or 0 past the bounds (sqflow_perfetto.h) or out of memory: then the event names
 * itself. */
static __u64 intern(struct perfetto *p, const char *name, size_t len)
{
	size_t had = p->names.n, i;

	/* past the bounds even a name interned already is written whole: the table has no
	 * lookup that would not add it */
	if (had == SQFLOW_PERFETTO_MAX_NAMES || len > SQFLOW_PERFETTO_MAX_NAME_BYTES - p->name_bytes)
		return 0;
	i = sq_intern(&p->names, name, len);
	if (i == (size_t)-1)
		return 0;
	if (p->names.n > had) {
		p->name_bytes += len;
		sqpb_open(&p->pb, PACKET_INTERNED_DATA);
		sqpb_open(&p->pb, INTERNED_EVENT_NAMES);
		sqpb_varint(&p->pb, EVENT_NAME_IID, i + 1);
		sqpb_bytes(&p->pb, EVENT_NAME_NAME, name, len);
		sqpb_close(&p->pb);
		sqpb_close(&p->pb);
	}
	return i + 1;
}

/* What a TrackEvent says beyond its type, track and time. */
struct event {
	const char *name;	/* begins and instants: named by name, or by iid if name is NULL */
	__u64 iid;
	const char *note;	/* a true debug annotation of that name, or NULL */
	__u64 flow_out, flow_end;	/* flows beginning and ending here (0: none) */
};

static void write_event(struct perfetto *p, bool has_ts, __u64 ts_ns, unsigned type, __u64 uuid,
			struct event *ev)
{
	size_t len = 0;
	const char *name = ev->name ? well_formed(p, ev->name, &len) : NULL;

	packet_open(p, has_ts, ts_ns);
	if (name)
		ev->iid = intern(p, name, len);
	sqpb_open(&p->pb, PACKET_TRACK_EVENT);
	sqpb_varint(&p->pb, EVENT_TYPE, type);
	sqpb_varint(&p->pb, EVENT_TRACK_UUID, uuid);
	if (ev->iid)
		sqpb_varint(&p->pb, EVENT_NAME_IID_FIELD, ev->iid);
	else if (type != TYPE_SLICE_END)
		sqpb_string(&p->pb, EVENT_NAME_FIELD, name ? name : "?");
	if (ev->flow_out)
		sqpb_fixed64(&p->pb, EVENT_FLOW_IDS, ev->flow_out);
	if (ev->flow_end)
		sqpb_fixed64(&p->pb, EVENT_TERMINATING_FLOW_IDS, ev->flow_end);
	if (ev->note) {
		sqpb_open(&p->pb, EVENT_DEBUG_ANNOTATIONS);
		sqpb_string(&p->pb, ANNOTATION_NAME, ev->note);
		sqpb_varint(&p->pb, ANNOTATION_BOOL_VALUE, 1);
		sqpb_close(&p->pb);
	}
	sqpb_close(&p->pb);
	packet_close(p);
}

/* The flow that a handoff to t left for its next event (0: none), taken. */
static __u64 flow_into(struct perfetto *p, const struct sqflow_track *t)
{
	__u64 f = p->flow_in[t->index];

	p->flow_in[t->index] = 0;
	return f;
}

/* ===================================================================== */
/* The sink                                                              */
/* ===================================================================== */

static void write_track(void *ctx, const struct sqflow_track *t, bool new_pid)
{
	struct perfetto *p = ctx;
	char name[SQFLOW_TRACK_NAME_LEN];
	const char *shown;
	size_t len;

	if (new_pid) {
		packet_open(p, false, 0);
		sqpb_open(&p->pb, PACKET_TRACK_DESCRIPTOR);
		sqpb_varint(&p->pb, TRACK_UUID, PROCESS_UUID_OF(t->pid));
		sqpb_open(&p->pb, TRACK_PROCESS);
		sqpb_varint(&p->pb, PROCESS_PID, t->pid);
		sqpb_string(&p->pb, PROCESS_NAME, "sqvm");
		sqpb_close(&p->pb);
		sqpb_close(&p->pb);
		packet_close(p);
	}
	/* as the Chrome writer names its threads */
	sqflow_track_name(t, name, sizeof(name));
	shown = well_formed(p, name, &len);
	packet_open(p, false, 0);
	sqpb_open(&p->pb, PACKET_TRACK_DESCRIPTOR);
	sqpb_varint(&p->pb, TRACK_UUID, TRACK_UUID_OF(t));
	sqpb_varint(&p->pb, TRACK_PARENT_UUID, PROCESS_UUID_OF(t->pid));
	sqpb_bytes(&p->pb, TRACK_NAME, shown ? shown : "?", shown ? len : 1);
	sqpb_close(&p->pb);
	packet_close(p);
}

/* The VM thread left from for to: an instant where from stopped, a flow from it to
 * to's next event. */
static void handoff(void *ctx, const struct sqflow_track *from, __u64 from_ns, const struct sqflow_track *to)
{
	struct perfetto *p = ctx;
	struct event ev = { .name = p->switch_iid ? NULL : "process switch", .iid = p->switch_iid,
			    .flow_out = ++p->flows, .flow_end = flow_into(p, from) };

	write_event(p, true, from_ns, TYPE_INSTANT, TRACK_UUID_OF(from), &ev);
	p->switch_iid = ev.iid;
	p->flow_in[to->index] = ev.flow_out;
}

static void begin_slice(void *ctx, const struct sqflow_track *t, const struct sqflow_call *c)
{
	struct perfetto *p = ctx;
	struct event ev = { .name = c->name ? c->name : "?", .flow_end = flow_into(p, t) };

	write_event(p, true, c->ts_ns, TYPE_SLICE_BEGIN, TRACK_UUID_OF(t), &ev);
}

static void end_slice(void *ctx, const struct sqflow_track *t, const struct sqflow_call *c, __u64 end_ns,
		      bool unfinished)
{
	struct perfetto *p = ctx;
	struct event ev = { .note = unfinished ? "unfinished" : NULL, .flow_end = flow_into(p, t) };

	write_event(p, true, end_ns, TYPE_SLICE_END, TRACK_UUID_OF(t), &ev);
}

/* Its end now, its begin at the trace's end (see the top of the file); its name must be
 * interned for that, so it is here. */
static bool before_slice(void *ctx, const struct sqflow_track *t, const struct sqflow_call *c, __u64 end_ns)
{
	struct perfetto *p = ctx;
	struct event ev = { 0 };
	const char *name;
	size_t len, had;
	__u64 iid;

	if (p->nbefore == p->capbefore) {
		size_t cap = p->capbefore ? 2 * p->capbefore : 16;
		struct before *grown = cap > SQFLOW_PERFETTO_MAX_BEFORE ? NULL : realloc(p->before, cap * sizeof(*grown));

		if (!grown)
			return false;
		p->before = grown;
		p->capbefore = cap;
	}
	/* interned in a packet of its own: the begin that names it comes much later */
	name = well_formed(p, c->name ? c->name : "?", &len);
	if (!name)
		return false;
	had = p->names.n;
	packet_open(p, false, 0);
	iid = intern(p, name, len);
	if (p->names.n > had)
		packet_close(p);
	if (!iid)
		return false;
	ev.flow_end = flow_into(p, t);	/* taken only by an event written */
	write_event(p, true, end_ns, TYPE_SLICE_END, TRACK_UUID_OF(t), &ev);
	p->before[p->nbefore++] = (struct before){ TRACK_UUID_OF(t), iid };
	return true;
}

static void finish(void *ctx, __u64 events, __u64 lost, __u64 left_out)
{
	struct perfetto *p = ctx;

	while (p->nbefore) {
		struct before *b = &p->before[--p->nbefore];
		struct event ev = { .iid = b->iid, .note = "began_before_trace" };

		write_event(p, true, p->base_ns, TYPE_SLICE_BEGIN, b->uuid, &ev);
	}
	if (p->unwritten)
		fprintf(stderr, "sqflow: %llu trace packets could not be encoded (out of memory)\n",
			(unsigned long long)p->unwritten);
	sqpb_free(&p->pb);
	sq_intern_free(&p->names);
	free(p->before);
	free(p->fix);
	free(p);
}

struct sqflow_sink sqflow_perfetto_sink(FILE *out, __u64 base_ns)
{
	struct perfetto *p = calloc(1, sizeof(*p));
	struct sqflow_sink sink = {
		.ctx = p, .track = write_track, .handoff = handoff, .begin = begin_slice,
		.end = end_slice, .before = before_slice, .finish = finish,
	};

	if (!p)
		return sink;
	p->out = out;
	p->base_ns = base_ns;
	write_start(p, base_ns);
	return sink;
}

// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_perfetto.c - Perfetto's protobuf trace from sqflow's slices (sqflow_perfetto.h),
 * written a packet at a time through sqperfetto.c: nothing is held but the interned names,
 * one pending flow per track and the begins of calls that began before the trace.
 *
 * Size: an event is a packet of some 15 bytes (its time as a delta, its track's uuid,
 * its name's iid), so a call takes some 30 where its Chrome JSON event takes 100 or
 * more (tests/perfetto.sh: under 30% of the JSON's size).
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
#include "sqoutput.h"
#include "sqperfetto.h"

/* Track uuids: a green process's track is its index + 1; a VM process's, past them. */
#define TRACK_UUID_OF(t) ((__u64)(t)->index + 1)
#define PROCESS_UUID_OF(pid) ((__u64)SQFLOW_MAX_TRACKS + 1 + (pid))

struct before {
	__u64 uuid, iid;
};

struct perfetto {
	struct sqperfetto pf;		/* the sequence: packets, clock, interned names */
	__u64 base_ns;			/* the window's start */
	__u64 switch_iid;		/* "process switch", once interned (0: not yet) */
	__u64 flow_in[SQFLOW_MAX_TRACKS];	/* by track index: a flow to end at its next event */
	__u64 flows;			/* flow ids given */
	struct before *before;		/* begins to write at the end, in order of return */
	size_t nbefore, capbefore;
};

/* ===================================================================== */
/* Packets                                                               */
/* ===================================================================== */

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
	const char *name = ev->name ? sqperfetto_well_formed(&p->pf, ev->name, &len) : NULL;

	sqperfetto_packet_open(&p->pf, has_ts, ts_ns);
	if (name)
		ev->iid = sqperfetto_intern(&p->pf, name, len);
	sqpb_open(&p->pf.pb, PACKET_TRACK_EVENT);
	sqpb_varint(&p->pf.pb, EVENT_TYPE, type);
	sqpb_varint(&p->pf.pb, EVENT_TRACK_UUID, uuid);
	if (ev->iid)
		sqpb_varint(&p->pf.pb, EVENT_NAME_IID_FIELD, ev->iid);
	else if (type != TYPE_SLICE_END)
		sqpb_string(&p->pf.pb, EVENT_NAME_FIELD, name ? name : "?");
	if (ev->flow_out)
		sqpb_fixed64(&p->pf.pb, EVENT_FLOW_IDS, ev->flow_out);
	if (ev->flow_end)
		sqpb_fixed64(&p->pf.pb, EVENT_TERMINATING_FLOW_IDS, ev->flow_end);
	if (ev->note) {
		sqpb_open(&p->pf.pb, EVENT_DEBUG_ANNOTATIONS);
		sqpb_string(&p->pf.pb, ANNOTATION_NAME, ev->note);
		sqpb_varint(&p->pf.pb, ANNOTATION_BOOL_VALUE, 1);
		sqpb_close(&p->pf.pb);
	}
	sqpb_close(&p->pf.pb);
	sqperfetto_packet_close(&p->pf);
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
		sqperfetto_packet_open(&p->pf, false, 0);
		sqpb_open(&p->pf.pb, PACKET_TRACK_DESCRIPTOR);
		sqpb_varint(&p->pf.pb, TRACK_UUID, PROCESS_UUID_OF(t->pid));
		sqpb_open(&p->pf.pb, TRACK_PROCESS);
		sqpb_varint(&p->pf.pb, PROCESS_PID, t->pid);
		sqpb_string(&p->pf.pb, PROCESS_NAME, "sqvm");
		sqpb_close(&p->pf.pb);
		sqpb_close(&p->pf.pb);
		sqperfetto_packet_close(&p->pf);
	}
	/* as the Chrome writer names its threads */
	sqflow_track_name(t, name, sizeof(name));
	shown = sqperfetto_well_formed(&p->pf, name, &len);
	sqperfetto_packet_open(&p->pf, false, 0);
	sqpb_open(&p->pf.pb, PACKET_TRACK_DESCRIPTOR);
	sqpb_varint(&p->pf.pb, TRACK_UUID, TRACK_UUID_OF(t));
	sqpb_varint(&p->pf.pb, TRACK_PARENT_UUID, PROCESS_UUID_OF(t->pid));
	sqpb_bytes(&p->pf.pb, TRACK_NAME, shown ? shown : "?", shown ? len : 1);
	sqpb_close(&p->pf.pb);
	sqperfetto_packet_close(&p->pf);
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
	name = sqperfetto_well_formed(&p->pf, c->name ? c->name : "?", &len);
	if (!name)
		return false;
	had = p->pf.names.n;
	sqperfetto_packet_open(&p->pf, false, 0);
	iid = sqperfetto_intern(&p->pf, name, len);
	if (p->pf.names.n > had)
		sqperfetto_packet_close(&p->pf);
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
	if (p->pf.unwritten)
		fprintf(stderr, "sqflow: %llu trace packets could not be encoded (out of memory)\n",
			(unsigned long long)p->pf.unwritten);
	sqperfetto_free(&p->pf);
	free(p->before);
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
	p->base_ns = base_ns;
	sqperfetto_start(&p->pf, out, base_ns, SQFLOW_PERFETTO_MAX_NAMES, SQFLOW_PERFETTO_MAX_NAME_BYTES);
	return sink;
}

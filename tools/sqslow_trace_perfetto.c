// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_trace_perfetto.c - a capture as Perfetto's protobuf trace (sqslow_trace.h),
 * through sqperfetto.c: a TrackDescriptor per VM (a process track) and per track (its
 * child, named as the JSON names its thread); a slice as a TYPE_SLICE_BEGIN and a
 * TYPE_SLICE_END TrackEvent, an instant as a TYPE_INSTANT, names interned; of the
 * arguments only those that identify (request_id, route, trace_id, span_id, captured),
 * as debug annotations: the rest is in the JSON capture.
 *
 * Ordering: a slice is written whole (begin and end) when the replay finds it, at its
 * end; trace processors sort packets by time, ties in file order, and within a track the
 * slices follow one another, so the end of one is written before the begin of the next.
 *
 * Flows: the JSON binds a flow's ends to the slices around its time; here a flow is
 * held until the next slice of each of its tracks that ends after it (the waker's
 * running slice, the waiter's ready slice: both end later, so are found later), whose
 * begin carries it in flow_ids or terminating_flow_ids. An end that no slice takes by
 * the end of the trace is written on an instant "signal" of its own. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sqperfetto.h"
#include "sqslow_trace.h"

/* The names interned at most: a capture's are its states, routes and sampled methods. */
#define MAX_NAMES 65536
#define MAX_NAME_BYTES (16u << 20)
/* Flow ends waiting for their slice; past it, a flow's end is written on its own. */
#define MAX_PENDING 4096

/* Track uuids are given in the order the tracks are named, 1 up (a byte an event where
 * one made of pid and tid would take five): the (pid, tid) -> uuid table is open-addressed. */
#define PROCESS_TID (~0ULL)	/* a VM's own track */

struct pending {
	__u32 pid;
	bool terminating;
	__u64 tid, ts, id;
};

struct uuid {
	__u32 pid;
	__u64 tid, uuid;	/* uuid 0: a free slot */
};

struct pf {
	struct sqperfetto pf;
	struct uuid *uuids;	/* cap a power of 2, at most half full */
	size_t nuuids, capuuids;
	struct pending pending[MAX_PENDING];
	size_t npending;
	bool oom;
};

static size_t slot(const struct pf *p, __u32 pid, __u64 tid)
{
	size_t i = (size_t)((tid * 0x9e3779b97f4a7c15ULL) ^ pid) & (p->capuuids - 1);

	while (p->uuids[i].uuid && (p->uuids[i].pid != pid || p->uuids[i].tid != tid))
		i = (i + 1) & (p->capuuids - 1);
	return i;
}

/* The uuid of track (pid, tid), given if new (0: out of memory). */
static __u64 uuid_of(struct pf *p, __u32 pid, __u64 tid)
{
	size_t i;

	if ((p->nuuids + 1) * 2 > p->capuuids) {
		struct pf grown = { .capuuids = p->capuuids ? 2 * p->capuuids : 64 };

		grown.uuids = calloc(grown.capuuids, sizeof(*grown.uuids));
		if (!grown.uuids) {
			p->oom = true;
			return 0;
		}
		for (size_t k = 0; k < p->capuuids; k++)
			if (p->uuids[k].uuid)
				grown.uuids[slot(&grown, p->uuids[k].pid, p->uuids[k].tid)] = p->uuids[k];
		free(p->uuids);
		p->uuids = grown.uuids;
		p->capuuids = grown.capuuids;
	}
	i = slot(p, pid, tid);
	if (!p->uuids[i].uuid)
		p->uuids[i] = (struct uuid){ pid, tid, ++p->nuuids };
	return p->uuids[i].uuid;
}

static void begin(void *ctx, __u64 base_ns)
{
	struct pf *p = ctx;

	sqperfetto_start(&p->pf, p->pf.out, base_ns, MAX_NAMES, MAX_NAME_BYTES);
}

static void descriptor(struct pf *p, __u64 uuid, __u64 parent, const char *name, __u32 pid)
{
	struct sqpb *b = &p->pf.pb;
	size_t len;
	const char *shown;

	sqperfetto_packet_open(&p->pf, false, 0);
	sqpb_open(b, PACKET_TRACK_DESCRIPTOR);
	sqpb_varint(b, TRACK_UUID, uuid);
	if (parent) {
		shown = sqperfetto_well_formed(&p->pf, name, &len);
		sqpb_varint(b, TRACK_PARENT_UUID, parent);
		sqpb_bytes(b, TRACK_NAME, shown ? shown : "?", shown ? len : 1);
	} else {
		sqpb_open(b, TRACK_PROCESS);
		sqpb_varint(b, PROCESS_PID, pid);
		sqpb_string(b, PROCESS_NAME, name);
		sqpb_close(b);
	}
	sqpb_close(b);
	sqperfetto_packet_close(&p->pf);
}

static void process(void *ctx, __u32 pid)
{
	char name[32];

	snprintf(name, sizeof(name), "sqvm %u", pid);	/* as the JSON's process_name */
	descriptor(ctx, uuid_of(ctx, pid, PROCESS_TID), 0, name, pid);
}

static void track(void *ctx, __u32 pid, __u64 tid, const char *name)
{
	descriptor(ctx, uuid_of(ctx, pid, tid), uuid_of(ctx, pid, PROCESS_TID), name, pid);
}

static void annotate(struct sqpb *b, const struct sqslow_arg *a)
{
	sqpb_open(b, EVENT_DEBUG_ANNOTATIONS);
	sqpb_string(b, ANNOTATION_NAME, a->key);
	switch (a->type) {
	case SQSLOW_ARG_STR:
		sqpb_string(b, ANNOTATION_STRING_VALUE, a->s);
		break;
	case SQSLOW_ARG_INT:
		sqpb_varint(b, ANNOTATION_INT_VALUE, (uint64_t)a->i);
		break;
	case SQSLOW_ARG_UINT:
		sqpb_varint(b, ANNOTATION_UINT_VALUE, a->u);
		break;
	default:	/* only identifiers and flags are kept */
		sqpb_varint(b, ANNOTATION_BOOL_VALUE, 1);
		break;
	}
	sqpb_close(b);
}

/* A TrackEvent of type on track uuid at ts; named (a begin, an instant) unless name is
 * NULL; carrying the flow ends pending on (pid, tid) that it takes (take: those before
 * a time it ends after), and the key arguments. */
static void event(struct pf *p, unsigned type, __u32 pid, __u64 tid, __u64 ts, const char *name, bool take,
		  __u64 ends_ns, const struct sqslow_arg *a, int n)
{
	struct sqpb *b = &p->pf.pb;
	__u64 iid = 0;
	size_t len = 0;
	const char *shown = name ? sqperfetto_well_formed(&p->pf, name, &len) : NULL;

	sqperfetto_packet_open(&p->pf, true, ts);
	if (shown)
		iid = sqperfetto_intern(&p->pf, shown, len);
	sqpb_open(b, PACKET_TRACK_EVENT);
	sqpb_varint(b, EVENT_TYPE, type);
	sqpb_varint(b, EVENT_TRACK_UUID, uuid_of(p, pid, tid));
	if (iid)
		sqpb_varint(b, EVENT_NAME_IID_FIELD, iid);
	else if (name)
		sqpb_string(b, EVENT_NAME_FIELD, shown ? shown : "?");
	for (size_t i = 0; take && i < p->npending;) {
		struct pending *q = &p->pending[i];

		if (q->pid != pid || q->tid != tid || ends_ns <= q->ts) {
			i++;
			continue;
		}
		sqpb_fixed64(b, q->terminating ? EVENT_TERMINATING_FLOW_IDS : EVENT_FLOW_IDS, q->id);
		*q = p->pending[--p->npending];
	}
	for (int i = 0; i < n; i++)
		if (a[i].key_arg)
			annotate(b, &a[i]);
	sqpb_close(b);
	sqperfetto_packet_close(&p->pf);
}

static void slice(void *ctx, __u32 pid, __u64 tid, const char *name, const char *cat, __u64 begin_ns, __u64 end_ns,
		  const struct sqslow_arg *a, int n)
{
	event(ctx, TYPE_SLICE_BEGIN, pid, tid, begin_ns, name, true, end_ns, a, n);
	event(ctx, TYPE_SLICE_END, pid, tid, end_ns, NULL, false, 0, NULL, 0);
}

static void instant(void *ctx, __u32 pid, __u64 tid, const char *name, const char *cat, __u64 ts_ns,
		    const struct sqslow_arg *a, int n)
{
	event(ctx, TYPE_INSTANT, pid, tid, ts_ns, name, false, 0, a, n);
}

/* A flow end written on an instant of its own (no slice took it, or no room to wait). */
static void lone_end(struct pf *p, const struct pending *q)
{
	p->npending++;	/* the one event() takes: */
	p->pending[p->npending - 1] = *q;
	event(p, TYPE_INSTANT, q->pid, q->tid, q->ts, "signal", true, q->ts + 1, NULL, 0);
}

static void flow(void *ctx, __u32 pid, __u64 from_tid, __u64 to_tid, __u64 ts_ns, __u64 id)
{
	struct pf *p = ctx;
	struct pending ends[2] = { { pid, false, from_tid, ts_ns, id }, { pid, true, to_tid, ts_ns, id } };

	for (int i = 0; i < 2; i++) {
		if (p->npending < MAX_PENDING - 1)
			p->pending[p->npending++] = ends[i];
		else
			lone_end(p, &ends[i]);
	}
}

static bool end(void *ctx, const struct sqslow_trace_end *e)
{
	struct pf *p = ctx;
	bool ok;

	while (e && p->npending) {
		struct pending q = p->pending[--p->npending];
		lone_end(p, &q);
	}
	ok = !p->pf.unwritten;
	if (p->pf.unwritten)
		fprintf(stderr, "sqslow: %llu trace packets could not be encoded (out of memory)\n",
			(unsigned long long)p->pf.unwritten);
	sqperfetto_free(&p->pf);
	free(p->uuids);
	ok = ok && !p->oom && e;
	free(p);
	return ok;
}

struct sqslow_trace_out sqslow_trace_perfetto(FILE *out)
{
	struct pf *p = calloc(1, sizeof(*p));

	if (p)
		p->pf.out = out;
	return (struct sqslow_trace_out){ .ctx = p, .begin = begin, .process = process, .track = track, .slice = slice,
					  .instant = instant, .flow = flow, .end = end };
}

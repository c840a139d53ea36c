// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_slices.c - sqflow's entries and returns paired into slices (sqflow_slices.h).
 * Calls are paired per green process, each a track whose open calls are kept, so that
 * the ones that have not returned when tracing stops are told too. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqflow_slices.h"

/* The open calls of one green process on one thread (entries and returns pair up per
 * process: green processes interleave on the VM thread). Its out_tid is the process id
 * (0: the process running when tracing began, until a probe named it), unless another
 * track of the pid has it already (a process id seen on two threads, or equal in its
 * low 32 bits): then one of its own. */
struct track {
	struct sqflow_track id;
	__u64 last_ns;			/* its latest time: a track's times never go backwards */
	size_t n, cap;
	size_t deeper;			/* entries past SQFLOW_MAX_DEPTH not kept, still open */
	struct sqflow_call *calls;
};

/* Open addressing, twice the tracks: a lookup is one probe or a few, however many
 * processes a target makes. Slots hold a track's index + 1 (0: empty). */
#define SLOTS (2 * SQFLOW_MAX_TRACKS)

struct sqflow_slices {
	struct sqflow_sink sink;
	sqflow_namer namer;
	void *namer_ctx;
	__u64 base_ns, end_ns;		/* the window: events outside it are left out */
	struct track *tracks;		/* SQFLOW_MAX_TRACKS of them */
	size_t ntracks;
	__u32 by_key[SLOTS];		/* (pid, tid, process) -> track */
	__u32 by_out[SLOTS];		/* (pid, out_tid) -> track: the ids taken */
	__u32 by_thread[SLOTS];		/* (pid, tid) -> the track that ran last on it */
	__u64 left_out;			/* past the bounds, or returns whose entry was lost */
};

static size_t slot(__u64 a, __u64 b, __u64 c)
{
	__u64 h = a * 0x9e3779b97f4a7c15ULL ^ b * 0xc2b2ae3d27d4eb4fULL ^ c * 0x165667b19e3779f9ULL;

	return (size_t)(h ^ h >> 29) & (SLOTS - 1);
}

static struct track *find(struct sqflow_slices *s, __u32 pid, __u32 tid, __u64 process)
{
	for (size_t i = slot(pid, tid, process);; i = (i + 1) & (SLOTS - 1)) {
		struct track *t;

		if (!s->by_key[i])
			return NULL;
		t = &s->tracks[s->by_key[i] - 1];
		if (t->id.pid == pid && t->id.tid == tid && t->id.process == process)
			return t;
	}
}

static bool out_tid_taken(const struct sqflow_slices *s, __u32 pid, __u32 out_tid, size_t *free_slot)
{
	for (size_t i = slot(pid, out_tid, 0);; i = (i + 1) & (SLOTS - 1)) {
		const struct track *t;

		if (!s->by_out[i]) {
			*free_slot = i;
			return false;
		}
		t = &s->tracks[s->by_out[i] - 1];
		if (t->id.pid == pid && t->id.out_tid == out_tid)
			return true;
	}
}

static void put_key(struct sqflow_slices *s, const struct track *t, __u32 index)
{
	size_t i = slot(t->id.pid, t->id.tid, t->id.process);

	while (s->by_key[i])
		i = (i + 1) & (SLOTS - 1);
	s->by_key[i] = index + 1;
}

/* The track of (pid, tid, process), made if new; NULL past SQFLOW_MAX_TRACKS. */
static struct track *track_of(struct sqflow_slices *s, __u32 pid, __u32 tid, __u64 process)
{
	struct track *t = find(s, pid, tid, process);
	size_t out_slot;
	bool new_pid = true;

	if (t || s->ntracks == SQFLOW_MAX_TRACKS)
		return t;
	for (size_t i = 0; i < s->ntracks && new_pid; i++)
		new_pid = s->tracks[i].id.pid != pid;
	t = &s->tracks[s->ntracks];
	memset(t, 0, sizeof(*t));
	t->id.pid = pid;
	t->id.tid = tid;
	t->id.process = process;
	t->id.index = (__u32)s->ntracks;
	t->id.out_tid = (__u32)process;
	if (process && s->namer) {
		s->namer(s->namer_ctx, pid, process, t->id.name);
		t->id.name[SQ_NAME_LEN - 1] = '\0';
	}
	/* at most SQFLOW_MAX_TRACKS ids are taken: a free one is that near */
	while (out_tid_taken(s, pid, t->id.out_tid, &out_slot))
		t->id.out_tid = 0x80000000u | (__u32)(t->id.out_tid + 1);
	s->by_out[out_slot] = (__u32)s->ntracks + 1;
	put_key(s, t, (__u32)s->ntracks);
	s->ntracks++;
	if (s->sink.track)
		s->sink.track(s->sink.ctx, &t->id, new_pid);
	return t;
}

/* Tells the sink when t's VM thread ran another track's calls last. Each thread holds
 * a slot (there are fewer threads than tracks: the table has room). */
static void note_thread(struct sqflow_slices *s, struct track *t)
{
	size_t i = slot(t->id.pid, t->id.tid, 1);
	struct track *last;

	for (; s->by_thread[i]; i = (i + 1) & (SLOTS - 1)) {
		last = &s->tracks[s->by_thread[i] - 1];
		if (last->id.pid == t->id.pid && last->id.tid == t->id.tid)
			break;
	}
	if (s->by_thread[i] && (last = &s->tracks[s->by_thread[i] - 1]) != t && s->sink.handoff)
		s->sink.handoff(s->sink.ctx, &last->id, last->last_ns, &t->id);
	s->by_thread[i] = t->id.index + 1;
}

static void tell_end(struct sqflow_slices *s, const struct track *t, const struct sqflow_call *o,
		     __u64 end_ns, bool unfinished)
{
	if (s->sink.end)
		s->sink.end(s->sink.ctx, &t->id, o, end_ns, unfinished);
}

/* Closes the call of frame in t, and any above it whose return was not seen; false if
 * frame is not open in t. */
static bool close_call(struct sqflow_slices *s, struct track *t, __u64 frame, __u64 end_ns)
{
	if (end_ns < t->last_ns)
		end_ns = t->last_ns;
	for (size_t i = t->n; i > 0; i--) {
		if (t->calls[i - 1].frame != frame)
			continue;
		while (t->n >= i) {
			struct sqflow_call *o = &t->calls[--t->n];

			tell_end(s, t, o, end_ns, false);
			free(o->name);
		}
		t->last_ns = end_ns;
		return true;
	}
	return false;
}

void sqflow_track_name(const struct sqflow_track *t, char *buf, size_t len)
{
	if (t->process && t->name[0])
		snprintf(buf, len, "%s (green process %llu, thread %u)", t->name, (unsigned long long)t->process, t->tid);
	else if (t->process)
		snprintf(buf, len, "green process %llu (thread %u)", (unsigned long long)t->process, t->tid);
	else
		snprintf(buf, len, "green process not known yet (thread %u)", t->tid);
}

struct sqflow_slices *sqflow_slices_begin(struct sqflow_sink sink, sqflow_namer namer, void *namer_ctx,
					  __u64 base_ns)
{
	struct sqflow_slices *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->tracks = calloc(SQFLOW_MAX_TRACKS, sizeof(*s->tracks));
	if (!s->tracks) {
		free(s);
		return NULL;
	}
	s->sink = sink;
	s->namer = namer;
	s->namer_ctx = namer_ctx;
	s->base_ns = base_ns;
	return s;
}

/* An open call on t, named name (which it keeps). */
static void entry(struct sqflow_slices *s, struct track *t, const struct sqflow_event *e, char *name)
{
	struct sqflow_call *o;

	if (t->n == SQFLOW_MAX_DEPTH || t->deeper) {
		t->deeper++;
		s->left_out++;
		free(name);
		return;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct sqflow_call *grown = realloc(t->calls, cap * sizeof(*grown));

		if (!grown) {
			s->left_out++;
			free(name);
			return;
		}
		t->calls = grown;
		t->cap = cap;
	}
	o = &t->calls[t->n++];
	o->frame = e->frame;
	o->ts_ns = t->last_ns;
	o->block = e->block;
	o->name = name;	/* NULL is told as "?" */
	if (s->sink.begin)
		s->sink.begin(s->sink.ctx, &t->id, o);
}

/* The return of a call on t, named name (only where its entry is not open). */
static void ret(struct sqflow_slices *s, struct track *t, const struct sqflow_event *e, char *name)
{
	struct sqflow_call whole = { .frame = e->frame, .ts_ns = s->base_ns, .name = name, .block = e->block };
	struct track *unknown;

	if (t->deeper) {	/* the return of an entry left out */
		t->deeper--;
		s->left_out++;
		return;
	}
	if (close_call(s, t, e->frame, t->last_ns))
		return;
	/* Entered before the tool knew which process ran (it learns at the first switch,
	 * wait or yield): that process's calls until then are on track 0. */
	if (e->process && (unknown = find(s, e->pid, e->tid, 0)) && close_call(s, unknown, e->frame, t->last_ns))
		return;
	/* Entered before tracing began: only a call deeper than every open one can return
	 * now, so with calls open this return's entry was lost (a full ring buffer), and
	 * the time it began is not known: left out. */
	if (t->n || (s->sink.before && !s->sink.before(s->sink.ctx, &t->id, &whole, t->last_ns)))
		s->left_out++;
}

void sqflow_slices_event(struct sqflow_slices *s, const struct sqflow_event *e, char *name)
{
	struct track *t;

	if (e->ts_ns < s->base_ns || (s->end_ns && e->ts_ns > s->end_ns)) {
		free(name);
		return;
	}
	t = track_of(s, e->pid, e->tid, e->process);
	if (!t) {
		s->left_out++;
		free(name);
		return;
	}
	note_thread(s, t);
	if (e->ts_ns > t->last_ns)
		t->last_ns = e->ts_ns;
	if (e->type == SQFLOW_ENTRY) {
		entry(s, t, e, name);
	} else {
		ret(s, t, e, name);
		free(name);
	}
}

void sqflow_slices_request(struct sqflow_slices *s, const struct sqflow_request *r, const char *route)
{
	struct sqflow_request cut = *r;
	struct track *t;

	if (cut.begin_ns < s->base_ns)
		cut.begin_ns = s->base_ns;
	if (s->end_ns && cut.end_ns > s->end_ns)
		cut.end_ns = s->end_ns;
	if (cut.end_ns < cut.begin_ns || !(t = track_of(s, r->pid, r->tid, r->process))) {
		s->left_out++;
		return;
	}
	if (s->sink.request)
		s->sink.request(s->sink.ctx, &t->id, &cut, route ? route : "?");
}

void sqflow_slices_stop(struct sqflow_slices *s, __u64 end_ns)
{
	s->end_ns = end_ns < s->base_ns ? s->base_ns : end_ns;
}

void sqflow_slices_end(struct sqflow_slices *s, __u64 events, __u64 lost)
{
	for (size_t i = 0; i < s->ntracks; i++) {
		struct track *t = &s->tracks[i];
		/* a track's times may run past the window's end only when the window was
		 * not closed; then the trace ends at its latest */
		__u64 end_ns = s->end_ns > t->last_ns ? s->end_ns : t->last_ns;

		while (t->n > 0) {
			struct sqflow_call *o = &t->calls[--t->n];

			tell_end(s, t, o, end_ns, true);
			free(o->name);
		}
		free(t->calls);
	}
	if (s->sink.finish)
		s->sink.finish(s->sink.ctx, events, lost, s->left_out);
	if (s->left_out)
		fprintf(stderr, "sqflow: left out %llu events (past %d tracks or %d open calls a track, "
			"returns whose entry was lost, or past the writer's bounds)\n",
			(unsigned long long)s->left_out, SQFLOW_MAX_TRACKS, SQFLOW_MAX_DEPTH);
	free(s->tracks);
	free(s);
}

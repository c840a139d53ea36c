// SPDX-License-Identifier: BSD-2-Clause
/* sqflow_chrome.c - Chrome trace-event JSON from sqflow's entries and returns
 * (sqflow_chrome.h). Calls are paired per green process, each a track whose open calls
 * are kept, so that the ones that have not returned when tracing stops are written too. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sqflow_chrome.h"
#include "sqoutput.h"

struct open_call {
	__u64 frame, ts_ns;
	char *name;
	bool block;
};

/* The open calls of one green process on one thread (entries and returns pair up per
 * process: green processes interleave on the VM thread). Its "tid" in the trace is the
 * process id (0: the process running when tracing began, until a probe named it), unless
 * another track of the pid has it already (a process id seen on two threads, or equal
 * in its low 32 bits): then one of its own. */
struct track {
	__u32 pid, tid, out_tid;
	__u64 process;
	__u64 last_ns;			/* its latest time: a track's times never go backwards */
	size_t n, cap;
	size_t deeper;			/* entries past SQFLOW_CHROME_MAX_DEPTH not kept, still open */
	struct open_call *calls;
};

/* Open addressing, twice the tracks: a lookup is one probe or a few, however many
 * processes a target makes. Slots hold a track's index + 1 (0: empty). */
#define SLOTS (2 * SQFLOW_CHROME_MAX_TRACKS)

struct sqflow_chrome {
	FILE *out;
	__u64 base_ns, end_ns;		/* the window: events outside it are left out */
	struct track *tracks;		/* SQFLOW_CHROME_MAX_TRACKS of them */
	size_t ntracks;
	__u32 by_key[SLOTS];		/* (pid, tid, process) -> track */
	__u32 by_out[SLOTS];		/* (pid, out_tid) -> track: the ids taken */
	__u64 left_out;			/* past the bounds, or returns whose entry was lost */
	bool first;
};

static size_t slot(__u64 a, __u64 b, __u64 c)
{
	__u64 h = a * 0x9e3779b97f4a7c15ULL ^ b * 0xc2b2ae3d27d4eb4fULL ^ c * 0x165667b19e3779f9ULL;

	return (size_t)(h ^ h >> 29) & (SLOTS - 1);
}

static struct track *find(struct sqflow_chrome *c, __u32 pid, __u32 tid, __u64 process)
{
	for (size_t i = slot(pid, tid, process);; i = (i + 1) & (SLOTS - 1)) {
		struct track *t;

		if (!c->by_key[i])
			return NULL;
		t = &c->tracks[c->by_key[i] - 1];
		if (t->pid == pid && t->tid == tid && t->process == process)
			return t;
	}
}

static bool out_tid_taken(const struct sqflow_chrome *c, __u32 pid, __u32 out_tid, size_t *free_slot)
{
	for (size_t i = slot(pid, out_tid, 0);; i = (i + 1) & (SLOTS - 1)) {
		const struct track *t;

		if (!c->by_out[i]) {
			*free_slot = i;
			return false;
		}
		t = &c->tracks[c->by_out[i] - 1];
		if (t->pid == pid && t->out_tid == out_tid)
			return true;
	}
}

static void put_key(struct sqflow_chrome *c, const struct track *t, __u32 index)
{
	size_t i = slot(t->pid, t->tid, t->process);

	while (c->by_key[i])
		i = (i + 1) & (SLOTS - 1);
	c->by_key[i] = index + 1;
}

static void write_track_names(struct sqflow_chrome *c, const struct track *t, bool new_pid)
{
	if (new_pid)
		fprintf(c->out, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":\"sqvm\"}}",
			c->first ? "" : ",\n", t->pid);
	c->first = false;
	if (t->process)
		fprintf(c->out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
			"\"args\":{\"name\":\"green process %llu (thread %u)\"}}",
			t->pid, t->out_tid, (unsigned long long)t->process, t->tid);
	else
		fprintf(c->out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
			"\"args\":{\"name\":\"green process not known yet (thread %u)\"}}", t->pid, t->out_tid, t->tid);
}

/* The track of (pid, tid, process), made if new; NULL past SQFLOW_CHROME_MAX_TRACKS. */
static struct track *track_of(struct sqflow_chrome *c, __u32 pid, __u32 tid, __u64 process)
{
	struct track *t = find(c, pid, tid, process);
	size_t out_slot;
	bool new_pid = true;

	if (t || c->ntracks == SQFLOW_CHROME_MAX_TRACKS)
		return t;
	for (size_t i = 0; i < c->ntracks && new_pid; i++)
		new_pid = c->tracks[i].pid != pid;
	t = &c->tracks[c->ntracks];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	t->process = process;
	t->out_tid = (__u32)process;
	/* at most SQFLOW_CHROME_MAX_TRACKS ids are taken: a free one is that near */
	while (out_tid_taken(c, pid, t->out_tid, &out_slot))
		t->out_tid = 0x80000000u | (__u32)(t->out_tid + 1);
	c->by_out[out_slot] = (__u32)c->ntracks + 1;
	put_key(c, t, (__u32)c->ntracks);
	c->ntracks++;
	write_track_names(c, t, new_pid);
	return t;
}

/* Microseconds from the trace's start, from integers (so that a slice that ends within
 * another is printed so). */
static void write_us(FILE *out, __u64 ns)
{
	fprintf(out, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
}

static void write_slice(struct sqflow_chrome *c, const struct track *t, const char *name, bool block,
			__u64 begin_ns, __u64 end_ns, const char *note)
{
	__u64 ts = begin_ns - c->base_ns;

	fprintf(c->out, ",\n{\"name\":");
	sq_json_str(c->out, name ? name : "?");
	fprintf(c->out, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", block ? "block" : "method");
	write_us(c->out, ts);
	fprintf(c->out, ",\"dur\":");
	write_us(c->out, end_ns - begin_ns);
	fprintf(c->out, ",\"pid\":%u,\"tid\":%u", t->pid, t->out_tid);
	if (note)
		fprintf(c->out, ",\"args\":{\"%s\":true}", note);
	fprintf(c->out, "}");
}

/* Closes the call of frame in t, and any above it whose return was not seen; false if
 * frame is not open in t. */
static bool close_call(struct sqflow_chrome *c, struct track *t, __u64 frame, __u64 end_ns)
{
	if (end_ns < t->last_ns)
		end_ns = t->last_ns;
	for (size_t i = t->n; i > 0; i--) {
		if (t->calls[i - 1].frame != frame)
			continue;
		while (t->n >= i) {
			struct open_call *o = &t->calls[--t->n];

			write_slice(c, t, o->name, o->block, o->ts_ns, end_ns, NULL);
			free(o->name);
		}
		t->last_ns = end_ns;
		return true;
	}
	return false;
}

struct sqflow_chrome *sqflow_chrome_begin(FILE *out, __u64 base_ns)
{
	struct sqflow_chrome *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->tracks = calloc(SQFLOW_CHROME_MAX_TRACKS, sizeof(*c->tracks));
	if (!c->tracks) {
		free(c);
		return NULL;
	}
	c->out = out;
	c->base_ns = base_ns;
	c->first = true;
	fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	return c;
}

/* An open call on t, named name (which it keeps). */
static void entry(struct sqflow_chrome *c, struct track *t, const struct sqflow_event *e, char *name)
{
	struct open_call *o;

	if (t->n == SQFLOW_CHROME_MAX_DEPTH || t->deeper) {
		t->deeper++;
		c->left_out++;
		free(name);
		return;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct open_call *grown = realloc(t->calls, cap * sizeof(*grown));

		if (!grown) {
			c->left_out++;
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
	o->name = name;	/* NULL is written as "?" */
}

/* The return of a call on t, named name (only where its entry is not open). */
static void ret(struct sqflow_chrome *c, struct track *t, const struct sqflow_event *e, const char *name)
{
	struct track *unknown;

	if (t->deeper) {	/* the return of an entry left out */
		t->deeper--;
		c->left_out++;
		return;
	}
	if (close_call(c, t, e->frame, t->last_ns))
		return;
	/* Entered before the tool knew which process ran (it learns at the first switch,
	 * wait or yield): that process's calls until then are on track 0. */
	if (e->process && (unknown = find(c, e->pid, e->tid, 0)) && close_call(c, unknown, e->frame, t->last_ns))
		return;
	/* Entered before tracing began: only a call deeper than every open one can return
	 * now, so with calls open this return's entry was lost (a full ring buffer), and
	 * the time it began is not known: left out. */
	if (t->n) {
		c->left_out++;
		return;
	}
	write_slice(c, t, name, e->block, c->base_ns, t->last_ns, "began_before_trace");
}

void sqflow_chrome_event(struct sqflow_chrome *c, const struct sqflow_event *e, char *name)
{
	struct track *t;

	if (e->ts_ns < c->base_ns || (c->end_ns && e->ts_ns > c->end_ns)) {
		free(name);
		return;
	}
	t = track_of(c, e->pid, e->tid, e->process);
	if (!t) {
		c->left_out++;
		free(name);
		return;
	}
	if (e->ts_ns > t->last_ns)
		t->last_ns = e->ts_ns;
	if (e->type == SQFLOW_ENTRY) {
		entry(c, t, e, name);
	} else {
		ret(c, t, e, name);
		free(name);
	}
}

void sqflow_chrome_stop(struct sqflow_chrome *c, __u64 end_ns)
{
	c->end_ns = end_ns < c->base_ns ? c->base_ns : end_ns;
}

void sqflow_chrome_end(struct sqflow_chrome *c, __u64 events, __u64 lost)
{
	for (size_t i = 0; i < c->ntracks; i++) {
		struct track *t = &c->tracks[i];
		/* a track's times may run past the window's end only when the window was
		 * not closed; then the trace ends at its latest */
		__u64 end_ns = c->end_ns > t->last_ns ? c->end_ns : t->last_ns;

		while (t->n > 0) {
			struct open_call *o = &t->calls[--t->n];

			write_slice(c, t, o->name, o->block, o->ts_ns, end_ns, "unfinished");
			free(o->name);
		}
		free(t->calls);
	}
	fprintf(c->out, "\n],\"otherData\":{\"tool\":\"sqflow\",\"events\":\"%llu\",\"lost_events\":\"%llu\","
		"\"left_out_events\":\"%llu\"}}\n",
		(unsigned long long)events, (unsigned long long)lost, (unsigned long long)c->left_out);
	if (c->left_out)
		fprintf(stderr, "sqflow: left out %llu events (past %d tracks or %d open calls a track, "
			"or returns whose entry was lost)\n",
			(unsigned long long)c->left_out, SQFLOW_CHROME_MAX_TRACKS, SQFLOW_CHROME_MAX_DEPTH);
	free(c->tracks);
	free(c);
}

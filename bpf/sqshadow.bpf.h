// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqshadow.bpf.h - sqcalls's call-timing engine: each green process's open activations
 * on a shadow stack indexed by the depth the call probes carry (call__batch's records
 * and the per-event probes carry the same), with the time the process has spent switched
 * out. Both of sqcalls's ways in feed it the same events:
 *
 *   shadow_open    an activation begins (an entry)
 *   shadow_close   it ends (a return): its inclusive time (less the time its process was
 *                  switched out meanwhile) and self time (less its callees' inclusive
 *                  time, which each return adds to its caller's entry, one depth below);
 *                  a non-local return ends each frame it unwinds with a return of its own
 *   shadow_switch  a process switch: the outgoing process's clock stops, the incoming
 *                  one's resumes
 *   shadow_innermost  the activation open on top now (-S: at a system call)
 *
 * Recursion: a method's total counts its outermost activation only (the inner ones are
 * inside it). An entry is inner if an activation of the same method is open below it on
 * its stack; to find one without walking the stack, each open activation is linked to
 * the one below it in its bucket (a hash of the method, SQ_SHADOW_BUCKETS of them), and
 * an entry follows its bucket's chain (direct recursion: its first link).
 *
 * Activations deeper than SQ_SHADOW_DEPTH are not kept: their returns are counted, not
 * timed (sqcalls's deep counter), their time is their shallow caller's own, and no
 * system call is charged to them (-S). A stack
 * is an LRU entry: created by a process's first entry, evicted when SQ_SHADOW_PROCS
 * processes with stacks have run since it last did (its open activations then return
 * untimed). Include after sqvm.bpf.h. */
#ifndef SQSHADOW_BPF_H
#define SQSHADOW_BPF_H

#include "sqcalls.h"

#define SQ_SHADOW_DEPTH SQCALLS_SHADOW_DEPTH	/* a power of two: depths are masked for the verifier */
_Static_assert((SQ_SHADOW_DEPTH & (SQ_SHADOW_DEPTH - 1)) == 0, "SQ_SHADOW_DEPTH is a power of two");
#define SQ_SHADOW_PROCS 1024		/* 16.5 KB each, preallocated: 17 MB */
#define SQ_SHADOW_BUCKET_BITS 6
#define SQ_SHADOW_BUCKETS (1 << SQ_SHADOW_BUCKET_BITS)
#define SQ_SHADOW_CHAIN 8		/* links an entry follows, at most, to find its method */

/* One open activation (by its depth on its process's stack). */
struct sq_open {
	__u64 frame;		/* 0: none open at this depth */
	__u64 ts_ns;		/* its entry */
	__u64 child_ns;		/* the callees' inclusive time so far */
	__u64 off_ns;		/* its process's switched-out time at entry */
	__u64 recv;		/* the receiver's class name (char *, for -C) */
	__u64 def_class;	/* the method: its defining class's name, its selector (char *) */
	__u64 selector;
	__u16 next;		/* depth + 1 of the activation open below it in its bucket (0: none) */
	__u8 bucket;
	__u8 block;		/* 1: a block of the method */
	__u8 inner;		/* 1: an activation of the same method is open below it */
	__u8 pad[3];
};

/* A green process's open activations, and its switched-out time. */
struct sq_shadow {
	__u64 off_total_ns;
	__u64 off_since_ns;	/* when it was switched out; 0 while it runs */
	__u32 top;		/* depth of the activation running now (-S) */
	__u32 pad;
	__u16 head[SQ_SHADOW_BUCKETS];	/* depth + 1 of the innermost open activation of each bucket */
	struct sq_open s[SQ_SHADOW_DEPTH];
};

/* A call probe's activation: what its entry and its return say of it. */
struct sq_call {
	__u64 recv, def_class, selector;	/* char * */
	__u64 frame;
	__u64 caller;		/* the caller's frame (0: none, or not known) */
	__u32 depth;
	__u32 block;
};

/* What a closed activation was, and its times. */
struct sq_closed {
	__u64 recv, def_class, selector;
	__u64 incl_ns, self_ns;
	__u32 block;
	__u32 inner;
};

/* Stacks by (VM thread, green process id). */
struct sq_shadow_key {
	__u32 tid;
	__u32 pad;
	__u64 proc;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SQ_SHADOW_PROCS);
	__type(key, struct sq_shadow_key);
	__type(value, struct sq_shadow);
} shadows SEC(".maps");

/* A new stack's value: too big for the BPF stack (stays all zero: only read). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sq_shadow);
} shadow_zero SEC(".maps");

/* The stack of process proc on VM thread tid (create: make it if it has none). */
static __always_inline struct sq_shadow *shadow_of(__u32 tid, __u64 proc, bool create)
{
	struct sq_shadow_key k = { .tid = tid, .proc = proc };
	struct sq_shadow *st = bpf_map_lookup_elem(&shadows, &k);
	const struct sq_shadow *z;
	__u32 zero = 0;

	if (st || !create)
		return st;
	z = bpf_map_lookup_elem(&shadow_zero, &zero);
	return z ? sq_lookup_or_init(&shadows, &k, z, NULL) : 0;
}

static __always_inline __u32 shadow_bucket(__u64 def_class, __u64 selector, __u32 block)
{
	return ((def_class ^ (selector << 1) ^ block) * 0x9E3779B97F4A7C15ULL) >> (64 - SQ_SHADOW_BUCKET_BITS);
}

/* Is an activation of c's method open below depth? Any open one the chain leads to is a
 * true answer; a chain a lost return broke, or one longer than SQ_SHADOW_CHAIN, may miss
 * one (then the activation counts as outermost). */
__noinline bool shadow_open_below(const struct sq_shadow *st, __u32 bucket, const struct sq_call *c)
{
	__u32 j;

	if (!st || !c)
		return false;
	j = st->head[bucket & (SQ_SHADOW_BUCKETS - 1)];

	for (int i = 0; i < SQ_SHADOW_CHAIN; i++) {
		const struct sq_open *o;

		if (!j)
			return false;
		o = &st->s[(j - 1) & (SQ_SHADOW_DEPTH - 1)];
		if (j - 1 < c->depth && o->frame && o->selector == c->selector && o->def_class == c->def_class &&
		    o->block == c->block)
			return true;
		j = o->next;
	}
	return false;
}

/* The open activation o at depth leaves its bucket's chain (if it heads it: else an
 * activation above it lost its return, and its chain still leads through o's link). */
static __always_inline void shadow_unlink(struct sq_shadow *st, __u32 depth, const struct sq_open *o)
{
	__u32 b = o->bucket & (SQ_SHADOW_BUCKETS - 1);

	if (st->head[b] == depth + 1)
		st->head[b] = o->next;
}

/* Activation c begins at ts. */
static __always_inline void shadow_open(struct sq_shadow *st, const struct sq_call *c, __u64 ts)
{
	__u32 depth = c->depth, b;
	struct sq_open *o;

	st->top = depth;
	if (depth >= SQ_SHADOW_DEPTH)
		return;		/* deep: its return counts it */
	o = &st->s[depth & (SQ_SHADOW_DEPTH - 1)];
	if (o->frame)
		shadow_unlink(st, depth, o);	/* the one before it here lost its return */
	b = shadow_bucket(c->def_class, c->selector, c->block);
	o->inner = shadow_open_below(st, b, c);
	o->next = st->head[b & (SQ_SHADOW_BUCKETS - 1)];
	st->head[b & (SQ_SHADOW_BUCKETS - 1)] = depth + 1;
	o->bucket = b;
	o->frame = c->frame;
	o->ts_ns = ts;
	o->child_ns = 0;
	o->off_ns = st->off_total_ns;
	o->recv = c->recv;
	o->def_class = c->def_class;
	o->selector = c->selector;
	o->block = c->block;
}

/* Activation c returns at ts: *out gets what it was and its times, and its caller's entry
 * (one depth below, if it is c's caller's) its inclusive time. False: none is open for
 * it (it was entered before tracing began, or it is deeper than the stack). */
static __always_inline bool shadow_close(struct sq_shadow *st, const struct sq_call *c, __u64 ts,
					 struct sq_closed *out)
{
	__u32 depth = c->depth;
	struct sq_open *o;
	__u64 off;

	if (!st)
		return false;
	st->top = depth - 1;
	if (depth >= SQ_SHADOW_DEPTH)
		return false;
	o = &st->s[depth & (SQ_SHADOW_DEPTH - 1)];
	if (o->frame != c->frame || !c->frame)
		return false;
	out->incl_ns = ts - o->ts_ns;
	off = st->off_total_ns - o->off_ns;
	out->incl_ns = out->incl_ns > off ? out->incl_ns - off : 0;
	out->self_ns = out->incl_ns > o->child_ns ? out->incl_ns - o->child_ns : 0;
	out->recv = o->recv;
	out->def_class = o->def_class;
	out->selector = o->selector;
	out->block = o->block;
	out->inner = o->inner;
	o->frame = 0;
	shadow_unlink(st, depth, o);
	if (c->caller && depth > 0) {
		struct sq_open *p = &st->s[(depth - 1) & (SQ_SHADOW_DEPTH - 1)];

		if (p->frame == c->caller)
			p->child_ns += out->incl_ns;	/* one thread writes a stack */
	}
	return true;
}

/* On VM thread tid, process from is switched out and process to in, at ts (a process
 * with no stack has no open activation to time: it needs none). */
static __always_inline void shadow_switch(__u32 tid, __u64 from, __u64 to, __u64 ts)
{
	struct sq_shadow *st = shadow_of(tid, from, false);

	if (st)
		st->off_since_ns = ts;
	st = shadow_of(tid, to, false);
	if (st && st->off_since_ns) {
		st->off_total_ns += ts - st->off_since_ns;
		st->off_since_ns = 0;
	}
}

/* The open activation on top of st if its frame is frame (the VM's innermost), or NULL. */
static __always_inline const struct sq_open *shadow_innermost(const struct sq_shadow *st, __u64 frame)
{
	const struct sq_open *o;

	if (!st || st->top >= SQ_SHADOW_DEPTH)
		return 0;
	o = &st->s[st->top & (SQ_SHADOW_DEPTH - 1)];
	return o->frame == frame && frame ? o : 0;
}

#endif

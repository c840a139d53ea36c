// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_mem.c - the memory rules: GC pressure (the pause ratio and the minimum mutator
 * utilisation), the allocation hot spot and tenuring. Their evidence: sqgc -e (one line
 * per collection) and sqalloc --sample -b (bytes by class and allocating method). */
#include "sqdoctor_rule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The MMU's window: what a 10 ms deadline (a frame, a request's budget) sees. */
#define MMU_WINDOW_NS 10000000ULL
/* At most this many pauses enter the MMU (its cost is pauses x pauses per window). */
#define MMU_MAX_PAUSES 50000

struct pause {
	__u64 begin, end;
};

static int by_begin(const void *a, const void *b)
{
	const struct pause *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* The minimum, over every 10 ms window inside [from, to), of the share of the window
 * that no pause took (Cheng and Blelloch's MMU). The least is at a window that begins
 * where a pause begins, or ends where one ends: only those are tried. 1 if the recording
 * is shorter than a window. */
static double mmu(struct pause *p, int n, __u64 from, __u64 to)
{
	double worst = 1;

	if (to - from < MMU_WINDOW_NS)
		return 1;
	qsort(p, n, sizeof(*p), by_begin);
	for (int i = 0; i < n; i++) {
		__u64 starts[2] = { p[i].begin, p[i].end > MMU_WINDOW_NS ? p[i].end - MMU_WINDOW_NS : 0 };
		for (int k = 0; k < 2; k++) {
			__u64 s = starts[k] < from ? from : starts[k], t, paused = 0;
			if (s + MMU_WINDOW_NS > to)
				s = to - MMU_WINDOW_NS;
			int j = i;
			t = s + MMU_WINDOW_NS;
			/* pauses are sorted by begin and do not overlap (one VM thread collects):
			 * those inside the window are a run around i */
			while (j > 0 && p[j - 1].end > s)
				j--;
			for (; j < n && p[j].begin < t; j++) {
				__u64 b = p[j].begin > s ? p[j].begin : s, en = p[j].end < t ? p[j].end : t;
				if (en > b)
					paused += en - b;
			}
			if (1.0 - (double)paused / MMU_WINDOW_NS < worst)
				worst = 1.0 - (double)paused / MMU_WINDOW_NS;
		}
	}
	return worst;
}

struct gc_totals {
	double young_ns, full_ns, young_n, full_n;
	double tenured, young_before;	/* bytes, over the young collections */
	double min_mutator;		/* MMU over 10 ms windows */
	double max_ns;
};

/* The collections that ended inside the window. */
static void gc_totals(const struct sq_evidence *e, struct gc_totals *t)
{
	const struct sqd_lines *l = &e->src[SQD_GC];
	struct pause *p = calloc(MMU_MAX_PAUSES, sizeof(*p));
	int n = 0;

	memset(t, 0, sizeof(*t));
	for (int i = 0; i < l->n; i++) {
		const struct sq_jv *v = l->v[i];
		const char *type = sq_jv_str(v, "type"), *kind = sq_jv_str(v, "kind");
		double end = sqd_num(v, "end_ns"), pause = sqd_num(v, "pause_ns");
		if (!type || strcmp(type, "gc") || !kind || end < e->begin_ns || end > e->end_ns)
			continue;
		if (!strcmp(kind, "full")) {
			t->full_ns += pause;
			t->full_n++;
		} else {
			t->young_ns += pause;
			t->young_n++;
			t->tenured += sqd_num(v, "tenured");
			t->young_before += sqd_num(v, "young_before");
		}
		if (pause > t->max_ns)
			t->max_ns = pause;
		if (p && n < MMU_MAX_PAUSES && pause > 0) {
			/* the VM's own pause, ending where the end probe fired */
			p[n].end = (__u64)end;
			p[n].begin = p[n].end - (__u64)pause;
			n++;
		}
	}
	t->min_mutator = p ? mmu(p, n, e->begin_ns, e->end_ns) : 1;
	free(p);
}

/* "61% of bytes are Point from Point>>+", and the class for the command. */
static void alloc_clause(const struct sq_evidence *e, char *buf, size_t len, char *target, size_t tlen,
			 char *cls, size_t clen)
{
	double share;
	const struct sq_jv *top = sqd_top_alloc(e, &share);

	buf[0] = target[0] = 0;
	snprintf(cls, clen, "CLASS");
	if (!top)
		return;
	snprintf(target, tlen, "%s", sqd_name(top, "method"));
	snprintf(cls, clen, "%s", sqd_name(top, "class"));
	snprintf(buf, len, "; %.0f%% of bytes are %s from %s", 100 * share, cls, target);
}

/* The share of the recording spent paused, and the worst 10 ms window. A young
 * collection that copies a large live set every few milliseconds is the usual cause. */
void sqd_rule_gc_pause(const struct sq_evidence *e, struct sq_finding *f)
{
	struct gc_totals t;
	char clause[700], target[256], cls[256];
	double window = (double)(e->end_ns - e->begin_ns), ratio;
	int score;

	if (!sqd_need(e, SQD_GC, f))
		return;
	gc_totals(e, &t);
	ratio = window > 0 ? (t.young_ns + t.full_ns) / window : 0;
	/* the ratio is the finding; a poor MMU alone (one long pause) is a note at most, below
	 * a warning: a batch program may well accept it, and AWFY's Storage and Sieve have
	 * young pauses over 10 ms at 1-5% of the time */
	score = sqd_ramp(ratio, 0.05, 0.25);
	if (sqd_ramp(1 - t.min_mutator, 0.5, 1.0) * 45 / 100 > score)
		score = sqd_ramp(1 - t.min_mutator, 0.5, 1.0) * 45 / 100;
	alloc_clause(e, clause, sizeof(clause), target, sizeof(target), cls, sizeof(cls));
	sqd_evidence(f, "{\"pause_ratio\":%.4f,\"young_ratio\":%.4f,\"full_ratio\":%.4f,\"young\":%.0f,"
		     "\"full\":%.0f,\"max_pause_ns\":%.0f,\"mmu_10ms\":%.3f}", ratio,
		     window > 0 ? t.young_ns / window : 0, window > 0 ? t.full_ns / window : 0, t.young_n,
		     t.full_n, t.max_ns, t.min_mutator);
	sqd_command(f, "sqalloc -p %d -b -C %s", e->pid, cls);
	sqd_found(f, score, target,
		  "collections take %.1f%% of wall time (young %.1f%%, full %.1f%%), the least mutator "
		  "time in a 10 ms window is %.0f%%%s",
		  100 * ratio, window > 0 ? 100 * t.young_ns / window : 0,
		  window > 0 ? 100 * t.full_ns / window : 0, 100 * t.min_mutator, clause);
}

/* One allocating method's rate, when it is most of the bytes: the place where a cache,
 * a reused buffer or a smaller object pays. */
void sqd_rule_alloc_hot(const struct sq_evidence *e, struct sq_finding *f)
{
	double share, rate;
	const struct sq_jv *top;
	char target[256];

	if (!sqd_need(e, SQD_ALLOC, f))
		return;
	top = sqd_top_alloc(e, &share);
	if (!top) {
		sqd_found(f, 0, NULL, "nothing was allocated");
		return;
	}
	rate = e->seconds > 0 ? sqd_num(top, "bytes") / e->seconds / 1e6 : 0;
	snprintf(target, sizeof(target), "%s", sqd_name(top, "method"));
	sqd_evidence(f, "{\"mb_per_s\":%.1f,\"share\":%.3f}", rate, share);
	sqd_command(f, "sqalloc -p %d -b -C %s", e->pid, sqd_name(top, "class"));
	sqd_found(f, share >= 0.5 ? sqd_ramp(rate, 300, 1500) : 0, target,
		  "%s allocates %.0f MB/s of %s, %.0f%% of all bytes", target, rate,
		  sqd_name(top, "class"), 100 * share);
}

/* Objects that outlive young collections are copied, then tenured, then die old, where
 * only a full collection frees them. */
void sqd_rule_tenuring(const struct sq_evidence *e, struct sq_finding *f)
{
	struct gc_totals t;
	char clause[700], target[256], cls[256];
	double frac, rate, window = (double)(e->end_ns - e->begin_ns);

	if (!sqd_need(e, SQD_GC, f))
		return;
	gc_totals(e, &t);
	frac = t.young_before > 0 ? t.tenured / t.young_before : 0;
	rate = e->seconds > 0 ? t.tenured / e->seconds / 1e6 : 0;
	alloc_clause(e, clause, sizeof(clause), target, sizeof(target), cls, sizeof(cls));
	sqd_evidence(f, "{\"tenured_share\":%.4f,\"tenured_mb_per_s\":%.2f,\"full_ratio\":%.4f}", frac,
		     rate, window > 0 ? t.full_ns / window : 0);
	sqd_command(f, "sqgc -p %d -e", e->pid);
	sqd_found(f, rate >= 1 ? sqd_ramp(frac, 0.05, 0.25) : 0, target,
		  "%.1f%% of the young bytes survive to be tenured (%.1f MB/s), full collections take "
		  "%.1f%% of wall time%s", 100 * frac, rate, window > 0 ? 100 * t.full_ns / window : 0,
		  clause);
}

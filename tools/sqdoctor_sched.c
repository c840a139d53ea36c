// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_sched.c - the green-process rules: Semaphore contention, run-queue latency, a
 * process that never yields, Delay overshoot. Their evidence: sqsched's summary (every
 * process's switches and waits, and the Semaphores waited on) and sqprof --wall (every
 * live process's state, sampled: it sees the processes that produced no scheduler event
 * in the recording, such as one that runs and never yields). */
#include "sqdoctor_rule.h"

#include <stdio.h>
#include <string.h>

#include "sqoutput.h"

static const struct sq_jv *sched_summary(const struct sq_evidence *e)
{
	return sqd_last(e, SQD_SCHED, "summary");
}

/* The Semaphore its waiters spent most time on, and what share of the recording that
 * is. A Semaphore held across a slow operation (a Delay, I/O) serialises its waiters. */
void sqd_rule_semaphore(const struct sq_evidence *e, struct sq_finding *f)
{
	const struct sq_jv *sum, *top = NULL;
	double share, window = (double)(e->end_ns - e->begin_ns);
	char target[256], signaller[300];

	if (!sqd_need(e, SQD_SCHED, f))
		return;
	sum = sched_summary(e);
	if (!sq_jv_get(sum, "semaphores")) {
		sqd_no_evidence(f, "sqsched does not list Semaphores (an older sqsched)");
		return;
	}
	for (const struct sq_jv *s = sq_jv_first(sq_jv_get(sum, "semaphores")); s; s = s->next)
		if (!top || sqd_num(s, "wait_ns") > sqd_num(top, "wait_ns"))
			top = s;
	sqd_command(f, "sqsched -p %d", e->pid);
	if (!top) {
		sqd_found(f, 0, NULL, "no process waited on a Semaphore");
		return;
	}
	share = window > 0 ? sqd_num(top, "wait_ns") / window : 0;
	snprintf(target, sizeof(target), "%s", sq_jv_str(top, "method") ? sqd_name(top, "method") : "?");
	signaller[0] = 0;
	if (sq_jv_str(top, "signaller"))
		snprintf(signaller, sizeof(signaller), ", signalled by %s", sqd_name(top, "signaller"));
	sqd_evidence(f, "{\"wait_share\":%.3f,\"waits\":%.0f,\"max_ns\":%.0f}", share, sqd_num(top, "waits"),
		     sqd_num(top, "max_ns"));
	sqd_found(f, sqd_ramp(share, 0.2, 0.6), target,
		  "%s waits %.0f%% of the time on the Semaphore in %s (%.0f waits, the longest %.1f ms)%s",
		  sqd_name(top, "waiter"), 100 * share, target, sqd_num(top, "waits"),
		  sqd_num(top, "max_ns") / 1e6, signaller);
}

/* The process that waits longest, on average, between being made ready and running,
 * when the turns are long: processes of one priority take turns, and one waits as long
 * as the turns before it last. Many processes with short turns (a busy server's
 * connections) queue too, but each turn is short: that is load, for which the remedy is
 * more VMs, not this rule's. So the score is the wait's ramp times the mean turn's
 * (0.2 ms to 1 ms: a turn a tenth of the wait the rule starts at). */
void sqd_rule_runq(const struct sq_evidence *e, struct sq_finding *f)
{
	const struct sq_jv *top = NULL;
	double mean = 0, cpu = 0, turns = 0, turn;
	int slow = 0;

	if (!sqd_need(e, SQD_SCHED, f))
		return;
	for (const struct sq_jv *p = sq_jv_first(sq_jv_get(sched_summary(e), "processes")); p; p = p->next) {
		double n = sqd_num2(p, "runq", "count"), m = n >= 5 ? sqd_num2(p, "runq", "total_ns") / n : 0;
		cpu += sqd_num(p, "cpu_ns");
		turns += sqd_num(p, "activations");
		slow += m >= 10e6;
		if (m > mean) {
			mean = m;
			top = p;
		}
	}
	turn = turns > 0 ? cpu / turns : 0;
	sqd_command(f, "sqsched -p %d", e->pid);
	sqd_evidence(f, "{\"mean_runq_ns\":%.0f,\"mean_turn_ns\":%.0f,\"processes_over_10ms\":%d}", mean, turn,
		     slow);
	if (!top) {
		sqd_found(f, 0, NULL, "no process was made ready five times or more");
		return;
	}
	sqd_found(f, sqd_ramp(mean / 1e6, 2, 10) * sqd_ramp(turn / 1e6, 0.2, 1) / 100, sqd_name(top, "name"),
		  "%s waits %.1f ms on average in the run queue for its turn (the longest %.1f ms); "
		  "a turn lasts %.2f ms on average; %d process%s wait 10 ms or more", sqd_name(top, "name"),
		  mean / 1e6, sqd_num2(top, "runq", "max_ns") / 1e6, turn / 1e6, slow, slow == 1 ? "" : "es");
}

/* What sqprof --wall saw of one process. */
struct wall_proc {
	char name[128];
	double running, ready;		/* samples in each state */
	char method[256];		/* its innermost method in its commonest running stack */
	double method_w;
};

#define WALL_PROCS 256

/* The wall samples, by process name (the samples name processes, not their ids). */
static int wall_procs(const struct sq_evidence *e, struct wall_proc *w, double *ticks)
{
	const struct sq_jv *last = sqd_last(e, SQD_WALL, NULL);
	int n = 0;

	*ticks = sqd_num(last, "ticks");
	for (const struct sq_jv *s = sq_jv_first(sq_jv_get(last, "stacks")); s; s = s->next) {
		const struct sq_jv *fr = sq_jv_first(sq_jv_get(s, "frames")), *st, *inner;
		double weight = sqd_num(s, "samples");
		struct wall_proc *p = NULL;
		if (!fr || fr->type != SQ_JSON_STRING || !(st = fr->next) || st->type != SQ_JSON_STRING)
			continue;
		for (int i = 0; i < n && !p; i++)
			if (!strcmp(w[i].name, fr->string))
				p = &w[i];
		if (!p && n < WALL_PROCS) {
			p = &w[n++];
			memset(p, 0, sizeof(*p));
			snprintf(p->name, sizeof(p->name), "%s", fr->string);
		}
		if (!p)
			continue;
		if (!strcmp(st->string, "running")) {
			p->running += weight;
			for (inner = st->next; inner && inner->next; inner = inner->next)
				;
			if (inner && inner->type == SQ_JSON_STRING && weight > p->method_w) {
				p->method_w = weight;
				snprintf(p->method, sizeof(p->method), "%s", inner->string);
			}
		} else if (!strcmp(st->string, "ready")) {
			p->ready += weight;
		}
	}
	return n;
}

/* sqsched's row of a process named name (the first: names need not be unique). */
static const struct sq_jv *sched_row(const struct sq_evidence *e, const char *name)
{
	for (const struct sq_jv *p = sq_jv_first(sq_jv_get(sched_summary(e), "processes")); p; p = p->next) {
		const char *n = sq_jv_str(p, "name");
		if (n && !strcmp(n, name))
			return p;
	}
	return NULL;
}

/* A process that runs nearly all the time while another is ready and does not get to
 * run: green processes of one priority take turns only when the running one waits or
 * yields. One that sqsched saw switch often is taking turns, only long ones. */
void sqd_rule_no_yield(const struct sq_evidence *e, struct sq_finding *f)
{
	static struct wall_proc w[WALL_PROCS];
	double ticks;
	int n, hog = -1, starved = -1, score;
	const struct sq_jv *row;

	if (!sqd_need(e, SQD_WALL, f))
		return;
	n = wall_procs(e, w, &ticks);
	for (int i = 0; i < n; i++)
		if (hog < 0 || w[i].running > w[hog].running)
			hog = i;
	for (int i = 0; i < n; i++)
		if (i != hog && (starved < 0 || w[i].ready > w[starved].ready))
			starved = i;
	sqd_command(f, "sqprof -p %d --wall", e->pid);
	if (hog < 0 || starved < 0 || ticks <= 0) {
		sqd_found(f, 0, NULL, "no process kept another from running");
		return;
	}
	score = w[hog].running / ticks >= 0.8 ? sqd_ramp(w[starved].ready / ticks, 0.3, 0.8) : 0;
	row = e->src[SQD_SCHED].ok ? sched_row(e, w[hog].name) : NULL;
	if (row && sqd_num(row, "activations") >= 3)
		score = score * sqd_ramp(sqd_num(row, "max_run_ns") / 1e6, 50, 500) / 100;
	sqd_evidence(f, "{\"running_share\":%.3f,\"starved_ready_share\":%.3f,\"activations\":%.0f}",
		     w[hog].running / ticks, w[starved].ready / ticks, row ? sqd_num(row, "activations") : 0);
	sqd_found(f, score, sq_printable(w[hog].name),
		  "%s runs %.0f%% of the time without yielding, in %s, while %s waits to run %.0f%% of it",
		  sq_printable(w[hog].name), 100 * w[hog].running / ticks,
		  w[hog].method[0] ? sq_printable(w[hog].method) : "?", sq_printable(w[starved].name),
		  100 * w[starved].ready / ticks);
}

/* A Delay ends when its time is up and the process gets to run: it oversleeps by as
 * long as the processes before it run without yielding. */
void sqd_rule_delay(const struct sq_evidence *e, struct sq_finding *f)
{
	const struct sq_jv *top = NULL;
	double mean = 0;

	if (!sqd_need(e, SQD_SCHED, f))
		return;
	for (const struct sq_jv *p = sq_jv_first(sq_jv_get(sched_summary(e), "processes")); p; p = p->next) {
		double n = sqd_num(p, "delay_overshoots"), m = n >= 3 ? sqd_num(p, "delay_overshoot_ns") / n : 0;
		if (!sq_jv_get(p, "delay_overshoot_ns")) {
			sqd_no_evidence(f, "sqsched does not measure Delay overshoot (an older sqsched)");
			return;
		}
		if (m > mean) {
			mean = m;
			top = p;
		}
	}
	sqd_command(f, "sqsched -p %d -e", e->pid);
	sqd_evidence(f, "{\"mean_overshoot_ns\":%.0f}", mean);
	if (!top) {
		sqd_found(f, 0, NULL, "no process waited on a Delay three times or more");
		return;
	}
	sqd_found(f, sqd_ramp(mean / 1e6, 2, 10), sqd_name(top, "name"),
		  "%s's Delays end %.1f ms late on average (the latest %.1f ms), over %.0f waits",
		  sqd_name(top, "name"), mean / 1e6, sqd_num(top, "delay_overshoot_max_ns") / 1e6,
		  sqd_num(top, "delay_overshoots"));
}

// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_rules.c - the table of rules, what they share (sqdoctor_rule.h), and the rules
 * over sqdoctor's own counts: the storms (doesNotUnderstand:, exceptions) and the
 * recorders' own lost events. */
#include "sqdoctor_rule.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sqdoctor.h"
#include "sqoutput.h"

static const struct {
	const char *id, *title;
	void (*fn)(const struct sq_evidence *e, struct sq_finding *f);
} rules[SQD_NRULES] = {
	{ "gc-pause", "GC pressure", sqd_rule_gc_pause },
	{ "alloc-hotspot", "Allocation hot spot", sqd_rule_alloc_hot },
	{ "tenuring", "Tenuring", sqd_rule_tenuring },
	{ "semaphore", "Semaphore contention", sqd_rule_semaphore },
	{ "run-queue", "Run-queue latency", sqd_rule_runq },
	{ "no-yield", "Never yields", sqd_rule_no_yield },
	{ "delay-overshoot", "Delay overshoot", sqd_rule_delay },
	{ "syscalls", "Syscall-heavy method", sqd_rule_syscalls },
	{ "io-wait", "I/O wait", sqd_rule_io_wait },
	{ "exceptions", "Exception storm", sqd_rule_exceptions },
	{ "dnu", "doesNotUnderstand: storm", sqd_rule_dnu },
	{ "slow-route", "Slow route", sqd_rule_slow_route },
	{ "lost-events", "Lost events", sqd_rule_lost },
};

void sqd_apply_rules(const struct sq_evidence *e, struct sq_finding *out)
{
	for (int i = 0; i < SQD_NRULES; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].id = rules[i].id;
		out[i].title = rules[i].title;
		rules[i].fn(e, &out[i]);
		if (!out[i].evidence[0])
			snprintf(out[i].evidence, sizeof(out[i].evidence), "{}");
	}
}

int sqd_ramp(double x, double lo, double hi)
{
	if (!(x > lo))		/* NaN too */
		return 0;
	if (x >= hi)
		return 100;
	return (int)lround(100 * (x - lo) / (hi - lo));
}

int sqd_ramp_log(double x, double lo, double hi)
{
	return x > 0 ? sqd_ramp(log(x), log(lo), log(hi)) : 0;
}

double sqd_num(const struct sq_jv *v, const char *key)
{
	return sq_jv_num(v, key, 0);
}

double sqd_num2(const struct sq_jv *v, const char *key, const char *sub)
{
	return sq_jv_num(sq_jv_get(v, key), sub, 0);
}

const char *sqd_name(const struct sq_jv *v, const char *key)
{
	const char *s = sq_jv_str(v, key);

	return sq_printable(s ? s : "?");
}

void sqd_found(struct sq_finding *f, int score, const char *target, const char *fmt, ...)
{
	va_list ap;

	f->score = score < 0 ? 0 : score > 100 ? 100 : score;
	snprintf(f->target, sizeof(f->target), "%s", target ? target : "");
	va_start(ap, fmt);
	vsnprintf(f->text, sizeof(f->text), fmt, ap);
	va_end(ap);
}

void sqd_command(struct sq_finding *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->command, sizeof(f->command), fmt, ap);
	va_end(ap);
}

void sqd_evidence(struct sq_finding *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->evidence, sizeof(f->evidence), fmt, ap);
	va_end(ap);
}

void sqd_no_evidence(struct sq_finding *f, const char *why)
{
	f->score = -1;
	snprintf(f->text, sizeof(f->text), "no evidence: %s", why);
}

static const char *const source_tool[SQD_NSOURCES] = {
	"sqgc", "sqalloc", "sqsched", "sqreq", "sqio", "sqprof", "sqprof --wall",
};

bool sqd_need(const struct sq_evidence *e, enum sqd_source s, struct sq_finding *f)
{
	char why[400];

	if (e->src[s].ok)
		return true;
	snprintf(why, sizeof(why), "%s did not record (%s)", source_tool[s],
		 e->src[s].why[0] ? sq_printable(e->src[s].why) : "no output");
	sqd_no_evidence(f, why);
	return false;
}

const struct sq_jv *sqd_last(const struct sq_evidence *e, enum sqd_source s, const char *type)
{
	const struct sqd_lines *l = &e->src[s];

	for (int i = l->n - 1; i >= 0; i--) {
		const char *t = sq_jv_str(l->v[i], "type");
		if (!type || (t && !strcmp(t, type)))
			return l->v[i];
	}
	return NULL;
}

const struct sq_jv *sqd_top_alloc(const struct sq_evidence *e, double *share)
{
	const struct sq_jv *last = sqd_last(e, SQD_ALLOC, NULL), *top = NULL;
	double total = sqd_num2(last, "total", "bytes");

	for (const struct sq_jv *r = sq_jv_first(sq_jv_get(last, "rows")); r; r = r->next)
		if (!top || sqd_num(r, "bytes") > sqd_num(top, "bytes"))
			top = r;
	*share = top && total > 0 ? sqd_num(top, "bytes") / total : 0;
	return top;
}

/* ===================================================================== */
/* Storms                                                                */
/* ===================================================================== */

/* The storm rows of kind: their total, and the biggest row. */
static const struct sqd_storm *storm_top(const struct sq_evidence *e, int kind, __u64 *total, int *rows)
{
	const struct sqd_storm *top = NULL;

	*total = 0;
	*rows = 0;
	for (int i = 0; i < e->nstorms; i++) {
		const struct sqd_storm *s = &e->storms[i];
		if (s->kind != kind)
			continue;
		*total += s->count;
		(*rows)++;
		if (!top || s->count > top->count)
			top = s;
	}
	return top;
}

/* Exceptions signalled per second: a handful is control flow; thousands a second is a
 * program using them on its hot path (each signal walks the stack for a handler). */
void sqd_rule_exceptions(const struct sq_evidence *e, struct sq_finding *f)
{
	__u64 total;
	int rows;
	const struct sqd_storm *top = storm_top(e, SQDOCTOR_EXCEPTION, &total, &rows);
	double rate = e->seconds > 0 ? total / e->seconds : 0;
	char target[800];

	if (!e->have_exceptions) {
		sqd_no_evidence(f, "the VM has no squeak:exception__signal probe");
		return;
	}
	sqd_evidence(f, "{\"signals\":%llu,\"per_second\":%.1f,\"sites\":%d}", (unsigned long long)total,
		     rate, rows);
	sqd_command(f, "bpftrace bpftrace/exceptions.bt -p %d", e->pid);
	if (!top) {
		sqd_found(f, 0, NULL, "no exception was signalled");
		return;
	}
	snprintf(target, sizeof(target), "%s from %s", sq_printable(top->cls), sq_printable(top->sender));
	sqd_found(f, sqd_ramp_log(rate, 100, 2000), target,
		  "%.0f exceptions signalled a second; %.0f%% are %s", rate,
		  100.0 * top->count / total, target);
}

/* doesNotUnderstand: sends per second: each is a failed lookup, a Message built and a
 * second send; a storm of them is a protocol mismatch on a hot path. */
void sqd_rule_dnu(const struct sq_evidence *e, struct sq_finding *f)
{
	__u64 total;
	int rows;
	const struct sqd_storm *top = storm_top(e, SQDOCTOR_DNU, &total, &rows);
	double rate = e->seconds > 0 ? total / e->seconds : 0;
	char target[800];

	if (!e->have_dnu) {
		sqd_no_evidence(f, "the VM has no squeak:method__dnu probe");
		return;
	}
	sqd_evidence(f, "{\"sends\":%llu,\"per_second\":%.1f,\"pairs\":%d}", (unsigned long long)total,
		     rate, rows);
	sqd_command(f, "bpftrace bpftrace/dnu.bt -p %d", e->pid);
	if (!top) {
		sqd_found(f, 0, NULL, "no message was not understood");
		return;
	}
	snprintf(target, sizeof(target), "%s>>%s", sq_printable(top->cls), sq_printable(top->sender));
	sqd_found(f, sqd_ramp_log(rate, 50, 1000), target,
		  "%.0f messages a second not understood; %.0f%% are #%s sent to %s", rate,
		  100.0 * top->count / total, sq_printable(top->sender), sq_printable(top->cls));
}

/* ===================================================================== */
/* The recorders' own losses                                             */
/* ===================================================================== */

/* Every recorder counts what it could not keep (a full ring buffer or map, a stack the
 * walker refused): its figures are then low, and every rule that reads them too. */
void sqd_rule_lost(const struct sq_evidence *e, struct sq_finding *f)
{
	double total = (double)e->storms_lost, worst = (double)e->storms_lost;
	const char *who = "sqdoctor";
	char ev[512];
	int len = snprintf(ev, sizeof(ev), "{\"sqdoctor\":%llu", (unsigned long long)e->storms_lost);

	for (int s = 0; s < SQD_NSOURCES; s++) {
		const struct sq_jv *last = sqd_last(e, s, s == SQD_GC || s == SQD_SCHED ? "summary" : NULL);
		double lost = sqd_num(last, "lost");
		if (!e->src[s].ok)
			continue;
		total += lost;
		if (lost > worst) {
			worst = lost;
			who = source_tool[s];
		}
		if (len < (int)sizeof(ev) - 64)
			len += snprintf(ev + len, sizeof(ev) - len, ",\"%s\":%.0f", source_tool[s], lost);
	}
	if (len < (int)sizeof(ev) - 2)
		snprintf(ev + len, sizeof(ev) - len, "}");
	sqd_evidence(f, "%s", ev);
	sqd_command(f, "%s -p %d -v", who, e->pid);
	if (total <= 0) {
		sqd_found(f, 0, NULL, "no recorder lost an event");
		return;
	}
	sqd_found(f, 50 + sqd_ramp_log(total, 1, 100000) / 2, who,
		  "the recorders lost %.0f events (%s %.0f): their figures are low", total, who, worst);
}

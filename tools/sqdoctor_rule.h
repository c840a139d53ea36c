// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_rule.h - what the rule files share (sqdoctor_mem.c, sqdoctor_sched.c,
 * sqdoctor_io.c, sqdoctor_rules.c): the scores' ramps, the evidence's accessors and the
 * way a finding is written. Not part of sqdoctor_rules.h: only rules include it. */
#ifndef SQDOCTOR_RULE_H
#define SQDOCTOR_RULE_H

#include "sqdoctor_rules.h"

/* 0 at x <= lo, 100 at x >= hi, linear between (ramp_log: linear in log(x)). */
int sqd_ramp(double x, double lo, double hi);
int sqd_ramp_log(double x, double lo, double hi);

/* Numbers of a JSON object's member, and of a member's member ("runq", "total_ns"). */
double sqd_num(const struct sq_jv *v, const char *key);
double sqd_num2(const struct sq_jv *v, const char *key, const char *sub);
/* A name from the evidence, fit to print (sq_printable: escaped, bounded). */
const char *sqd_name(const struct sq_jv *v, const char *key);

/* The finding: f->score and the formatted parts; text and target are cut to fit. */
void sqd_found(struct sq_finding *f, int score, const char *target, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void sqd_command(struct sq_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sqd_evidence(struct sq_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* No evidence: why (which recorder is missing, or the VM lacks a probe). */
void sqd_no_evidence(struct sq_finding *f, const char *why);
/* The recorder s reported; else says so in f and answers false. */
bool sqd_need(const struct sq_evidence *e, enum sqd_source s, struct sq_finding *f);

/* The top row of sqalloc's by-method summary (by bytes), and its share of all bytes. */
const struct sq_jv *sqd_top_alloc(const struct sq_evidence *e, double *share);

/* The rules, one per family; each fills f (its id and title are set already). */
void sqd_rule_gc_pause(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_alloc_hot(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_tenuring(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_semaphore(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_runq(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_no_yield(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_delay(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_syscalls(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_io_wait(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_slow_route(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_exceptions(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_dnu(const struct sq_evidence *e, struct sq_finding *f);
void sqd_rule_lost(const struct sq_evidence *e, struct sq_finding *f);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sqmetrics.h - metrics in the Prometheus text exposition format (version 0.0.4), as
 * every Prometheus exporter writes them: each family once, its HELP and TYPE lines
 * before its samples, label values escaped, histograms as cumulative _bucket series
 * (le ascending, +Inf last) with _sum and _count, no timestamps (the scrape's time is
 * the samples'). The one writer behind sqstat's --listen and --prom. */
#ifndef SQMETRICS_H
#define SQMETRICS_H

#include <stdint.h>
#include <stdio.h>

/* The Content-Type of a response in this format. */
#define SQM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct sqm_label {
	const char *name;		/* [a-zA-Z_][a-zA-Z0-9_]*: ours, never escaped */
	const char *value;		/* anything: escaped, and made valid UTF-8 */
};

/* "# HELP name help" (escaped) and "# TYPE name type" (counter, gauge, histogram). */
void sqm_family(FILE *f, const char *name, const char *type, const char *help);

/* One sample: name{labels} value. */
void sqm_uint(FILE *f, const char *name, const struct sqm_label *labels, int nlabels, uint64_t value);
/* A duration counted in nanoseconds, as seconds (the base unit), an exact decimal. */
void sqm_seconds(FILE *f, const char *name, const struct sqm_label *labels, int nlabels, uint64_t ns);

/* A histogram whose bucket i holds the observations of at most 2^i microseconds
 * (i < nbuckets; slots[i] counts those in (2^(i-1), 2^i] us, slot 0 those up to 1 us),
 * the rest, in slots[nbuckets..nslots), only in +Inf; sum_ns their total. Writes
 * name_bucket{labels,le="..."} for every bucket, cumulative, then +Inf, name_sum (in
 * seconds) and name_count. The bounds are exact decimals: le="0.000128". */
void sqm_log2_us_histogram(FILE *f, const char *name, const struct sqm_label *labels, int nlabels,
			   const uint64_t *slots, int nslots, int nbuckets, uint64_t sum_ns);

#endif

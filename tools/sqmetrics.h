// SPDX-License-Identifier: BSD-2-Clause
/* sqmetrics.h - metrics in the two exposition formats a Prometheus scraper reads: the
 * Prometheus text format (version 0.0.4), which every scraper takes and is the default,
 * and OpenMetrics 1.0 text, which a scraper asks for (Accept) to get exemplars. Both as
 * every exporter writes them: each family once, its metadata lines before its samples,
 * label values escaped and made valid UTF-8, histograms as cumulative _bucket series (le
 * ascending, +Inf last) with _sum and _count, no timestamps on samples (the scrape's time
 * is theirs). Where the formats differ, the writer does what its format says:
 *
 *   text 0.0.4                         OpenMetrics 1.0
 *   # HELP name, # TYPE name           # TYPE, # UNIT (a name ending _seconds or _bytes), # HELP
 *   counter family name_total          counter family name, its sample name_total
 *   info as a gauge name_info          info family name, its sample name_info
 *   le="0.000001" (exact decimals)     le="1e-06" (canonical: Go's %g, as the spec asks)
 *   no exemplars                       exemplars on buckets: ... # {labels} value time
 *   ends after the last sample         ends "# EOF"
 *
 * The one writer behind sqstat's --listen and --prom. */
#ifndef SQMETRICS_H
#define SQMETRICS_H

#include <stdint.h>
#include <stdio.h>

/* The Content-Types of the two formats. */
#define SQM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define SQM_OPENMETRICS_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"

enum sqm_format {
	SQM_TEXT = 0,
	SQM_OPENMETRICS = 1,
};

/* Where the metrics go, and in which format. */
struct sqm {
	FILE *f;
	enum sqm_format format;
};

struct sqm_label {
	const char *name;		/* [a-zA-Z_][a-zA-Z0-9_]*: ours, never escaped */
	const char *value;		/* anything: escaped, and made valid UTF-8 */
};

/* A family's metadata. type is counter (name ends in _total), gauge, info (name ends in
 * _info) or histogram; name is the samples' name (a histogram's without its suffixes). */
void sqm_family(const struct sqm *m, const char *name, const char *type, const char *help);

/* One sample: name{labels} value. */
void sqm_uint(const struct sqm *m, const char *name, const struct sqm_label *labels, int nlabels, uint64_t value);
/* A duration counted in nanoseconds, as seconds (the base unit), an exact decimal. */
void sqm_seconds(const struct sqm *m, const char *name, const struct sqm_label *labels, int nlabels, uint64_t ns);

/* The most a bucket's exemplar's label names and values may hold together, in code
 * points (as written: a byte that is not UTF-8 is one, U+FFFD). */
#define SQM_EXEMPLAR_CHARS 128
#define SQM_EXEMPLAR_LABELS 2

/* An observation that a bucket holds, and where it came from (OpenMetrics only). */
struct sqm_exemplar {
	struct sqm_label labels[SQM_EXEMPLAR_LABELS];
	int nlabels;			/* 0: the bucket has none */
	uint64_t value_ns;		/* the observation, written as seconds */
	uint64_t time_ns;		/* when it was made, since the epoch */
};

/* A histogram whose bucket i holds the observations of at most 2^i microseconds
 * (i < nbuckets; slots[i] counts those in (2^(i-1), 2^i] us, slot 0 those up to 1 us),
 * the rest, in slots[nbuckets..nslots), only in +Inf; sum_ns their total. Writes
 * name_bucket{labels,le="..."} for every bucket, cumulative, then +Inf, name_sum (in
 * seconds) and name_count. ex (NULL: none) holds nbuckets + 1 exemplars, one per bucket
 * (+Inf last), each an observation within its bucket's own range, (2^(i-1), 2^i] us;
 * one whose labels are longer than SQM_EXEMPLAR_CHARS is left out. */
void sqm_log2_us_histogram(const struct sqm *m, const char *name, const struct sqm_label *labels, int nlabels,
			   const uint64_t *slots, int nslots, int nbuckets, uint64_t sum_ns,
			   const struct sqm_exemplar *ex);

/* The end of an exposition: "# EOF" in OpenMetrics, nothing in the text format. */
void sqm_end(const struct sqm *m);

/* The code points of a label value as the writer writes it. */
size_t sqm_chars(const char *value);

#endif

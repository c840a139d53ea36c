// SPDX-License-Identifier: BSD-2-Clause
/* sqmetrics.c - the Prometheus text and OpenMetrics exposition formats; see sqmetrics.h. */
#define _GNU_SOURCE
#include "sqmetrics.h"
#include "sqoutput.h"

#include <stdbool.h>
#include <string.h>

static bool om(const struct sqm *m)
{
	return m->format == SQM_OPENMETRICS;
}

/* Text in HELP (backslash, newline; in OpenMetrics the double quote too) or a label value
 * (also the double quote) escaped as the format says; a byte that is not valid UTF-8
 * becomes U+FFFD. */
static void escaped(FILE *f, const char *text, bool quote)
{
	for (const unsigned char *s = (const unsigned char *)text; *s;) {
		int n = sq_utf8_seq(s, strnlen((const char *)s, 4));
		if (!n) {
			fputs("\xef\xbf\xbd", f);
			s++;
		} else if (*s == '\\' || (quote && *s == '"')) {
			fputc('\\', f);
			fputc(*s++, f);
		} else if (*s == '\n') {
			fputs("\\n", f);
			s++;
		} else {
			fwrite(s, 1, n, f);
			s += n;
		}
	}
}

size_t sqm_chars(const char *value)
{
	size_t chars = 0;

	for (const unsigned char *s = (const unsigned char *)value; *s; chars++) {
		int n = sq_utf8_seq(s, strnlen((const char *)s, 4));
		s += n ? n : 1;		/* a stray byte: one U+FFFD */
	}
	return chars;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && strcmp(s + n - k, suffix) == 0;
}

/* The text format names a counter family by its samples (name_total) and has no info
 * type (an info family is a gauge named name_info); OpenMetrics names both families
 * without the suffix their samples carry, and gives the unit that ends a name. */
void sqm_family(const struct sqm *m, const char *name, const char *type, const char *help)
{
	static const char *const units[] = { "seconds", "bytes" };
	int len = (int)strlen(name);

	if (!om(m)) {
		fprintf(m->f, "# HELP %s ", name);
		escaped(m->f, help, false);
		fprintf(m->f, "\n# TYPE %s %s\n", name, strcmp(type, "info") ? type : "gauge");
		return;
	}
	if (!strcmp(type, "counter") && ends_with(name, "_total"))
		len -= 6;
	else if (!strcmp(type, "info") && ends_with(name, "_info"))
		len -= 5;
	fprintf(m->f, "# TYPE %.*s %s\n", len, name, type);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		int k = (int)strlen(units[i]);
		if (len > k + 1 && name[len - k - 1] == '_' && !strncmp(name + len - k, units[i], k) && strcmp(type, "info"))
			fprintf(m->f, "# UNIT %.*s %s\n", len, name, units[i]);
	}
	fprintf(m->f, "# HELP %.*s ", len, name);
	escaped(m->f, help, true);
	fputc('\n', m->f);
}

/* {a="x",b="y"} (nothing for no labels), and a last label of our own if le. */
static void label_set(FILE *f, const struct sqm_label *labels, int n, const char *le)
{
	if (!n && !le)
		return;
	fputc('{', f);
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s%s=\"", i ? "," : "", labels[i].name);
		escaped(f, labels[i].value, true);
		fputc('"', f);
	}
	if (le)
		fprintf(f, "%sle=\"%s\"", n ? "," : "", le);
	fputc('}', f);
}

static void series(FILE *f, const char *name, const char *suffix, const struct sqm_label *labels, int n,
		   const char *le)
{
	fprintf(f, "%s%s", name, suffix);
	label_set(f, labels, n, le);
}

void sqm_uint(const struct sqm *m, const char *name, const struct sqm_label *labels, int nlabels, uint64_t value)
{
	series(m->f, name, "", labels, nlabels, NULL);
	fprintf(m->f, " %llu\n", (unsigned long long)value);
}

/* ns as seconds, exactly, without trailing zeros: "0.012877047", "2". */
static void ns_as_seconds(char *buf, size_t len, uint64_t ns)
{
	int n = snprintf(buf, len, "%llu.%09llu", (unsigned long long)(ns / 1000000000ULL),
			 (unsigned long long)(ns % 1000000000ULL));

	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = 0;
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = 0;
}

void sqm_seconds(const struct sqm *m, const char *name, const struct sqm_label *labels, int nlabels, uint64_t ns)
{
	char buf[32];

	series(m->f, name, "", labels, nlabels, NULL);
	ns_as_seconds(buf, sizeof(buf), ns);
	fprintf(m->f, " %s\n", buf);
}

/* us microseconds as seconds, an exact decimal without trailing zeros: "0.000128", "2"
 * (the text format's le, as it has always been written). */
static void micros_as_seconds(char *buf, size_t len, uint64_t us)
{
	int n = snprintf(buf, len, "%llu.%06llu", (unsigned long long)(us / 1000000), (unsigned long long)(us % 1000000));

	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = 0;
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = 0;
}

/* us microseconds as seconds in OpenMetrics's canonical form for le: Go's %g of the
 * float64 (shortest digits; an exponent below 1e-4 and from 1e+06 on), with ".0" when
 * that has neither a point nor an exponent: "1e-06", "6.4e-05", "0.000128", "2.0". The
 * shortest digits of these values are their exact decimal's, at most 20 of them. */
static void canonical_seconds(char *buf, size_t len, uint64_t us)
{
	char d[24], zeros[24] = "";
	int n = snprintf(d, sizeof(d), "%llu", (unsigned long long)us), dp = n - 6, exp = dp - 1;

	if (!us) {
		snprintf(buf, len, "0.0");
		return;
	}
	while (n > 1 && d[n - 1] == '0')
		d[--n] = 0;
	if (exp < -4 || exp >= 6) {
		snprintf(buf, len, "%c%s%se%c%02d", d[0], n > 1 ? "." : "", d + 1, exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	} else if (dp <= 0) {	/* 0.000ddd: -dp zeros after the point */
		memset(zeros, '0', (size_t)-dp);
		snprintf(buf, len, "0.%s%s", zeros, d);
	} else if (dp >= n) {	/* ddd000.0 */
		memset(zeros, '0', (size_t)(dp - n));
		snprintf(buf, len, "%s%s.0", d, zeros);
	} else {
		snprintf(buf, len, "%.*s.%s", dp, d, d + dp);
	}
}

/* " # {labels} value time" of e in bucket [lo_us, hi_us] (hi_us 0: +Inf), if it has one
 * that fits: its value in the bucket's own range, its labels within the bound. */
static void exemplar(FILE *f, const struct sqm_exemplar *e, uint64_t lo_us, uint64_t hi_us)
{
	char value[32], time[32];
	size_t chars = 0;

	if (!e || e->nlabels <= 0 || e->nlabels > SQM_EXEMPLAR_LABELS)
		return;
	if ((lo_us && e->value_ns <= lo_us * 1000) || (hi_us && e->value_ns > hi_us * 1000))
		return;
	for (int i = 0; i < e->nlabels; i++)
		chars += strlen(e->labels[i].name) + sqm_chars(e->labels[i].value);
	if (chars > SQM_EXEMPLAR_CHARS)
		return;
	ns_as_seconds(value, sizeof(value), e->value_ns);
	ns_as_seconds(time, sizeof(time), e->time_ns);
	fputs(" # ", f);
	label_set(f, e->labels, e->nlabels, NULL);
	fprintf(f, " %s %s", value, time);
}

void sqm_log2_us_histogram(const struct sqm *m, const char *name, const struct sqm_label *labels, int nlabels,
			   const uint64_t *slots, int nslots, int nbuckets, uint64_t sum_ns,
			   const struct sqm_exemplar *ex)
{
	uint64_t cumulative = 0;
	char le[32], sum[32];
	int i;

	if (!om(m))
		ex = NULL;
	for (i = 0; i < nbuckets && i < nslots; i++) {
		cumulative += slots[i];
		if (om(m))
			canonical_seconds(le, sizeof(le), 1ULL << i);
		else
			micros_as_seconds(le, sizeof(le), 1ULL << i);
		series(m->f, name, "_bucket", labels, nlabels, le);
		fprintf(m->f, " %llu", (unsigned long long)cumulative);
		if (ex)
			exemplar(m->f, &ex[i], i ? 1ULL << (i - 1) : 0, 1ULL << i);
		fputc('\n', m->f);
	}
	for (int k = i; k < nslots; k++)
		cumulative += slots[k];
	series(m->f, name, "_bucket", labels, nlabels, "+Inf");
	fprintf(m->f, " %llu", (unsigned long long)cumulative);
	if (ex)
		exemplar(m->f, &ex[i], i ? 1ULL << (i - 1) : 0, 0);
	fputc('\n', m->f);
	series(m->f, name, "_sum", labels, nlabels, NULL);
	ns_as_seconds(sum, sizeof(sum), sum_ns);
	fprintf(m->f, " %s\n", sum);
	series(m->f, name, "_count", labels, nlabels, NULL);
	fprintf(m->f, " %llu\n", (unsigned long long)cumulative);
}

void sqm_end(const struct sqm *m)
{
	if (om(m))
		fputs("# EOF\n", m->f);
}

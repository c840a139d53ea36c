// SPDX-License-Identifier: BSD-2-Clause
/* sqmetrics.c - the Prometheus text exposition format; see sqmetrics.h. */
#define _GNU_SOURCE
#include "sqmetrics.h"
#include "sqoutput.h"

#include <stdbool.h>
#include <string.h>

/* Text in HELP (backslash, newline) or a label value (also the double quote) escaped as
 * the format says; a byte that is not valid UTF-8 becomes U+FFFD. */
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

void sqm_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s ", name);
	escaped(f, help, false);
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

/* name{a="x",b="y"} (no braces without labels), and a last label of our own if le. */
static void series(FILE *f, const char *name, const char *suffix, const struct sqm_label *labels, int n,
		   const char *le)
{
	fprintf(f, "%s%s", name, suffix);
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

void sqm_uint(FILE *f, const char *name, const struct sqm_label *labels, int nlabels, uint64_t value)
{
	series(f, name, "", labels, nlabels, NULL);
	fprintf(f, " %llu\n", (unsigned long long)value);
}

/* ns as seconds, exactly: "0.012877047". */
static void ns_as_seconds(FILE *f, uint64_t ns)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%llu.%09llu", (unsigned long long)(ns / 1000000000ULL),
			 (unsigned long long)(ns % 1000000000ULL));

	while (buf[n - 1] == '0')
		buf[--n] = 0;
	if (buf[n - 1] == '.')
		buf[--n] = 0;
	fprintf(f, " %s\n", buf);
}

void sqm_seconds(FILE *f, const char *name, const struct sqm_label *labels, int nlabels, uint64_t ns)
{
	series(f, name, "", labels, nlabels, NULL);
	ns_as_seconds(f, ns);
}

/* us microseconds as seconds, an exact decimal without trailing zeros: "0.000128", "2". */
static void micros_as_seconds(char *buf, size_t len, uint64_t us)
{
	int n = snprintf(buf, len, "%llu.%06llu", (unsigned long long)(us / 1000000), (unsigned long long)(us % 1000000));

	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = 0;
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = 0;
}

void sqm_log2_us_histogram(FILE *f, const char *name, const struct sqm_label *labels, int nlabels,
			   const uint64_t *slots, int nslots, int nbuckets, uint64_t sum_ns)
{
	uint64_t cumulative = 0;
	char le[32];

	for (int i = 0; i < nbuckets && i < nslots; i++) {
		cumulative += slots[i];
		micros_as_seconds(le, sizeof(le), 1ULL << i);
		series(f, name, "_bucket", labels, nlabels, le);
		fprintf(f, " %llu\n", (unsigned long long)cumulative);
	}
	for (int i = nbuckets; i < nslots; i++)
		cumulative += slots[i];
	series(f, name, "_bucket", labels, nlabels, "+Inf");
	fprintf(f, " %llu\n", (unsigned long long)cumulative);
	series(f, name, "_sum", labels, nlabels, NULL);
	ns_as_seconds(f, sum_ns);
	series(f, name, "_count", labels, nlabels, NULL);
	fprintf(f, " %llu\n", (unsigned long long)cumulative);
}

// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_html.c - the --html page (sqdoctor_html.h). Charts are horizontal bars (one
 * drawing routine for all of them) and a strip of GC pauses along the recording; each
 * shows at most MAX_BARS rows, and the flame graph at most FLAME_MAX bytes, so that the
 * page's size is bounded whatever the target did. */
#include "sqdoctor_html.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqdoctor_report.h"
#include "sqfile.h"
#include "sqoutput.h"

#define MAX_BARS 12
#define FLAME_MAX (1200u << 10)
#define STRIP_MAX_PAUSES 4000
#define LABEL_MAX 96

struct page {
	const struct sq_evidence *e;
	const struct sq_finding *f;
	const char *flamegraph;
};

/* Text for HTML (and SVG): printable, escaped, cut at max bytes. */
static void esc(FILE *out, const char *s, size_t max)
{
	const char *p = sq_printable(s ? s : "?");

	for (size_t i = 0; p[i] && i < max; i++) {
		switch (p[i]) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(p[i], out);
		}
	}
}

struct bar {
	char label[LABEL_MAX];
	double v[3];		/* stacked parts */
};

/* Horizontal bars, the longest first as given; parts are drawn in colors[0..nparts). */
static void bars(FILE *out, const char *title, const struct bar *b, int n, int nparts,
		 const char *const *legend, const char *unit)
{
	static const char *const colors[] = { "#d9534f", "#f0ad4e", "#5bc0de" };
	double max = 0;
	int h = 18;

	fprintf(out, "<h3>");
	esc(out, title, 200);
	fprintf(out, "</h3>\n");
	if (!n) {
		fprintf(out, "<p class=none>nothing recorded</p>\n");
		return;
	}
	for (int i = 0; i < n; i++) {
		double t = 0;
		for (int k = 0; k < nparts; k++)
			t += b[i].v[k];
		if (t > max)
			max = t;
	}
	fprintf(out, "<svg width=\"900\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\">\n", n * h + 22);
	for (int i = 0; i < n; i++) {
		double x = 300, t = 0;
		fprintf(out, "<text x=\"295\" y=\"%d\" text-anchor=\"end\">", i * h + 13);
		esc(out, b[i].label, 60);
		fprintf(out, "</text>");
		for (int k = 0; k < nparts; k++) {
			double w = max > 0 ? 500 * b[i].v[k] / max : 0;
			fprintf(out, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", x, i * h + 2,
				w, h - 4, colors[k]);
			x += w;
			t += b[i].v[k];
		}
		fprintf(out, "<text x=\"%.1f\" y=\"%d\">%.3g %s</text>\n", x + 5, i * h + 13, t, unit);
	}
	if (legend)
		for (int k = 0; k < nparts; k++)
			fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
				"<text x=\"%d\" y=\"%d\">%s</text>", 300 + 120 * k, n * h + 8, colors[k],
				315 + 120 * k, n * h + 18, legend[k]);
	fprintf(out, "</svg>\n");
}

/* The rows of a recorder's array, as bars of one or two of their numbers. */
static int rows_to_bars(const struct sq_jv *rows, const char *label, const char *label2, const char *k0,
			const char *k1, double scale, struct bar *b)
{
	int n = 0;

	for (const struct sq_jv *r = sq_jv_first(rows); r; r = r->next) {
		struct bar cand = { .v = { sq_jv_num(r, k0, 0) * scale, k1 ? sq_jv_num(r, k1, 0) * scale : 0 } };
		int at;
		snprintf(cand.label, sizeof(cand.label), "%s%s%s", sq_jv_str(r, label) ? sq_jv_str(r, label) : "?",
			 label2 && sq_jv_str(r, label2) ? " " : "", label2 && sq_jv_str(r, label2) ? sq_jv_str(r, label2) : "");
		if (cand.v[0] + cand.v[1] <= 0)
			continue;
		/* keep the MAX_BARS largest, in order */
		for (at = n; at > 0 && b[at - 1].v[0] + b[at - 1].v[1] < cand.v[0] + cand.v[1]; at--)
			;
		if (at >= MAX_BARS)
			continue;
		memmove(&b[at + 1], &b[at], (n < MAX_BARS ? n - at : MAX_BARS - 1 - at) * sizeof(*b));
		b[at] = cand;
		if (n < MAX_BARS)
			n++;
	}
	return n;
}

/* Each collection as a mark along the recording, its height the log of its pause. */
static void gc_strip(FILE *out, const struct sq_evidence *e)
{
	const struct sqd_lines *l = &e->src[SQD_GC];
	double window = (double)(e->end_ns - e->begin_ns);
	int drawn = 0;

	fprintf(out, "<h3>GC pauses along the recording (young blue, full red; height: log of the pause)</h3>\n"
		"<svg width=\"900\" height=\"70\" xmlns=\"http://www.w3.org/2000/svg\">"
		"<line x1=\"0\" y1=\"60\" x2=\"900\" y2=\"60\" stroke=\"#999\"/>\n");
	for (int i = 0; i < l->n && drawn < STRIP_MAX_PAUSES && window > 0; i++) {
		const struct sq_jv *v = l->v[i];
		const char *kind = sq_jv_str(v, "kind");
		double end = sq_jv_num(v, "end_ns", 0), pause = sq_jv_num(v, "pause_ns", 0), hgt;
		if (!kind || end < e->begin_ns || end > e->end_ns || pause <= 0)
			continue;
		/* 1 us is 0, 100 ms is the full height */
		hgt = pause > 1000 ? 10 * __builtin_log10(pause / 1000) : 1;
		hgt = hgt > 55 ? 55 : hgt < 1 ? 1 : hgt;
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"1.5\" height=\"%.1f\" fill=\"%s\"/>",
			900 * (end - e->begin_ns) / window, 60 - hgt, hgt, strcmp(kind, "full") ? "#337ab7" : "#d9534f");
		drawn++;
	}
	fprintf(out, "</svg>\n");
}

/* Pauses by length, in powers of two of microseconds. */
static void gc_hist(FILE *out, const struct sq_evidence *e)
{
	const struct sqd_lines *l = &e->src[SQD_GC];
	struct bar b[24] = { 0 };
	int top = -1, lo = 24;

	for (int i = 0; i < l->n; i++) {
		const char *kind = sq_jv_str(l->v[i], "kind");
		double end = sq_jv_num(l->v[i], "end_ns", 0), us = sq_jv_num(l->v[i], "pause_ns", 0) / 1000;
		int slot = 0;
		if (!kind || end < e->begin_ns || end > e->end_ns)
			continue;
		while (slot < 23 && us >= (double)(2ULL << slot))
			slot++;
		b[slot].v[strcmp(kind, "full") ? 0 : 1]++;
		top = slot > top ? slot : top;
		lo = slot < lo ? slot : lo;
	}
	for (int s = 0; s < 24; s++)
		snprintf(b[s].label, sizeof(b[s].label), "%llu-%llu us", s ? 1ULL << s : 0, (2ULL << s) - 1);
	{
		static const char *const legend[] = { "young", "full" };
		bars(out, "GC pauses by length", top >= 0 ? &b[lo] : b, top >= 0 ? top - lo + 1 : 0, 2, legend,
		     "collections");
	}
}

/* The green processes' states, from the wall samples: running, ready, waiting. */
static void wall_states(FILE *out, const struct sq_evidence *e)
{
	static const char *const legend[] = { "running", "ready", "waiting" };
	const struct sq_jv *last = sqd_last(e, SQD_WALL, NULL);
	struct bar all[64];
	int n = 0;

	for (const struct sq_jv *s = sq_jv_first(sq_jv_get(last, "stacks")); s; s = s->next) {
		const struct sq_jv *name = sq_jv_first(sq_jv_get(s, "frames")), *state = name ? name->next : NULL;
		int i, part;
		if (!state || name->type != SQ_JSON_STRING || state->type != SQ_JSON_STRING)
			continue;
		part = !strcmp(state->string, "running") || !strcmp(state->string, "gc") ? 0 :
		       !strcmp(state->string, "ready") ? 1 : 2;
		for (i = 0; i < n && strcmp(all[i].label, name->string); i++)
			;
		if (i == n) {
			if (n == 64)
				continue;
			memset(&all[n], 0, sizeof(all[n]));
			snprintf(all[n].label, sizeof(all[n].label), "%s", name->string);
			n++;
		}
		all[i].v[part] += sq_jv_num(s, "samples", 0);
	}
	for (int i = 1; i < n; i++)	/* by samples, most first */
		for (int j = i; j > 0 && all[j].v[0] + all[j].v[1] + all[j].v[2] >
					 all[j - 1].v[0] + all[j - 1].v[1] + all[j - 1].v[2]; j--) {
			struct bar t = all[j];
			all[j] = all[j - 1];
			all[j - 1] = t;
		}
	bars(out, "Green processes by state (wall-clock samples)", all, n < MAX_BARS ? n : MAX_BARS, 3, legend,
	     "samples");
}

static void rules_table(FILE *out, const struct sq_finding *f)
{
	int order[SQD_NRULES];

	sqd_sort(f, order);
	fprintf(out, "<table><tr><th>score</th><th>rule</th><th>finding</th><th>to see more</th></tr>\n");
	for (int i = 0; i < SQD_NRULES; i++) {
		const struct sq_finding *r = &f[order[i]];
		const char *cls = r->score >= 75 ? "bad" : r->score >= 50 ? "warn" : "ok";
		if (r->score < 0)
			fprintf(out, "<tr class=none><td>-</td><td>");
		else
			fprintf(out, "<tr class=%s><td><span class=bar style=\"width:%dpx\"></span>%d</td><td>", cls,
				r->score, r->score);
		esc(out, r->title, 100);
		fprintf(out, "</td><td>");
		esc(out, r->text, SQD_TEXT_MAX);
		fprintf(out, "</td><td><code>");
		esc(out, r->score >= 0 ? r->command : "", 320);
		fprintf(out, "</code></td></tr>\n");
	}
	fprintf(out, "</table>\n");
}

/* sqprof's own SVG, inline (its script makes it clickable), without its XML prolog. */
static void flame(FILE *out, const char *path)
{
	FILE *in = path ? fopen(path, "r") : NULL;
	char *buf = NULL, *svg;
	size_t n = 0;

	fprintf(out, "<h3>CPU flame graph (sqprof)</h3>\n");
	if (in && (buf = malloc(FLAME_MAX + 1)))
		n = fread(buf, 1, FLAME_MAX + 1, in);
	if (in)
		fclose(in);
	if (!buf || !n || n > FLAME_MAX || (buf[n] = 0, !(svg = strstr(buf, "<svg")))) {
		fprintf(out, "<p class=none>%s</p>\n", n > FLAME_MAX ? "the flame graph is too large for the page: "
			"run sqprof --svg" : "no CPU samples");
		free(buf);
		return;
	}
	fwrite(svg, 1, n - (svg - buf), out);
	free(buf);
}

static int write_page(FILE *out, void *ctx)
{
	const struct page *pg = ctx;
	const struct sq_evidence *e = pg->e;
	struct bar b[MAX_BARS + 1];
	int n;

	fprintf(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>sqdoctor: PID %d</title>\n"
		"<style>body{font:14px sans-serif;margin:2em}table{border-collapse:collapse}"
		"td,th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}"
		"tr.bad td:first-child{color:#b00;font-weight:bold}tr.warn td:first-child{color:#a60}"
		"tr.none{color:#999}.bar{display:inline-block;height:8px;background:currentColor;margin-right:6px}"
		"svg text{font:12px sans-serif}.none{color:#999}</style></head><body>\n", e->pid);
	fprintf(out, "<h1>sqdoctor: PID %d</h1>\n<p><code>", e->pid);
	esc(out, e->cmdline, 256);
	fprintf(out, "</code>, %.1f s recorded</p>\n<h2>Rules</h2>\n", e->seconds);
	rules_table(out, pg->f);
	fprintf(out, "<h2>Evidence</h2>\n");
	gc_strip(out, e);
	gc_hist(out, e);
	wall_states(out, e);
	{
		/* sqsched has totals and counts: the mean, per process */
		int m = 0;
		for (const struct sq_jv *p = sq_jv_first(sq_jv_get(sqd_last(e, SQD_SCHED, "summary"), "processes"));
		     p && m < MAX_BARS; p = p->next) {
			double c = sq_jv_num(sq_jv_get(p, "runq"), "count", 0);
			double t = sq_jv_num(sq_jv_get(p, "runq"), "total_ns", 0);
			if (c < 1 || t <= 0)
				continue;
			memset(&b[m], 0, sizeof(b[m]));
			snprintf(b[m].label, sizeof(b[m].label), "%s", sq_jv_str(p, "name") ? sq_jv_str(p, "name") : "?");
			b[m++].v[0] = t / c / 1e6;
		}
		n = m;
	}
	bars(out, "Run-queue latency, mean per process", b, n, 1, NULL, "ms");
	{
		static const char *const legend[] = { "p50", "p99 beyond p50" };
		int m = 0;
		for (const struct sq_jv *r = sq_jv_first(sq_jv_get(sqd_last(e, SQD_REQ, "requests"), "routes"));
		     r && m < MAX_BARS; r = r->next) {
			double p50 = sq_jv_num(r, "p50_ms", 0), p99 = sq_jv_num(r, "p99_ms", 0);
			memset(&b[m], 0, sizeof(b[m]));
			snprintf(b[m].label, sizeof(b[m].label), "%s", sq_jv_str(r, "route") ? sq_jv_str(r, "route") : "?");
			b[m].v[0] = p50;
			b[m++].v[1] = p99 > p50 ? p99 - p50 : 0;
		}
		bars(out, "Routes: p50 and p99", b, m, 2, legend, "ms");
	}
	n = rows_to_bars(sq_jv_get(sqd_last(e, SQD_IO, "io"), "rows"), "method", "op", "wait_ns", NULL, 1e-6, b);
	bars(out, "I/O waits by method", b, n, 1, NULL, "ms");
	n = rows_to_bars(sq_jv_get(sqd_last(e, SQD_IO, "io"), "rows"), "method", "op", "calls", NULL, 1, b);
	bars(out, "I/O calls by method", b, n, 1, NULL, "calls");
	n = rows_to_bars(sq_jv_get(sqd_last(e, SQD_ALLOC, NULL), "rows"), "class", "method", "bytes", NULL, 1e-6, b);
	bars(out, "Allocation by class and method (sampled)", b, n, 1, NULL, "MB");
	flame(out, pg->flamegraph);
	fprintf(out, "</body></html>\n");
	return ferror(out) ? -EIO : 0;
}

int sqd_write_html(const char *path, const struct sq_evidence *e, const struct sq_finding *f,
		   const char *flamegraph)
{
	struct page pg = { e, f, flamegraph };

	return sq_file_replace(path, 0644, write_page, &pg);
}

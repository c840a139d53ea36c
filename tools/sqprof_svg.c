// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_svg.c - the flame-graph writer (the layout and look of Brendan Gregg's
 * flamegraph.pl: root at the bottom, children sorted by name, width by count); see
 * sqprof_svg.h. The SVG carries its own script and style: nothing is fetched. */
#define _GNU_SOURCE
#include "sqprof_svg.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define IMAGE_WIDTH 1200
#define XPAD 10			/* left and right margins */
#define FRAME_HEIGHT 16
#define TOP 60			/* title, subtitle, buttons */
#define BOTTOM 34		/* the details line */
#define FONT_SIZE 12
#define CHAR_WIDTH 7.0		/* average width of a character at FONT_SIZE, for labels */
#define MIN_WIDTH 0.1		/* narrower frames are not drawn (px) */

/* ===================================================================== */
/* The tree of frames                                                    */
/* ===================================================================== */

struct node {
	char *name;
	uint64_t value;
	struct node **kids;
	size_t nkids, cap;
};

static struct node *node_new(const char *name, size_t len)
{
	struct node *n = calloc(1, sizeof(*n));

	if (n && !(n->name = strndup(name, len))) {
		free(n);
		return NULL;
	}
	return n;
}

static void node_free(struct node *n)
{
	for (size_t i = 0; i < n->nkids; i++)
		node_free(n->kids[i]);
	free(n->kids);
	free(n->name);
	free(n);
}

static struct node *child(struct node *n, const char *name, size_t len)
{
	struct node *kid;

	for (size_t i = n->nkids; i-- > 0;)	/* merged input: the last child is the likely one */
		if (strncmp(n->kids[i]->name, name, len) == 0 && n->kids[i]->name[len] == 0)
			return n->kids[i];
	if (n->nkids == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 4;
		struct node **grown = realloc(n->kids, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		n->kids = grown;
		n->cap = cap;
	}
	kid = node_new(name, len);
	if (kid)
		n->kids[n->nkids++] = kid;
	return kid;
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct node *const *)a)->name, (*(struct node *const *)b)->name);
}

static int sort_tree(struct node *n, int depth)
{
	int deepest = depth;

	qsort(n->kids, n->nkids, sizeof(*n->kids), by_name);
	for (size_t i = 0; i < n->nkids; i++) {
		int d = sort_tree(n->kids[i], depth + 1);
		if (d > deepest)
			deepest = d;
	}
	return deepest;
}

static struct node *build_tree(const struct sqp_profile *p)
{
	struct node *root = node_new("all", 3);

	if (!root)
		return NULL;
	for (size_t i = 0; i < p->n; i++) {
		const char *s = p->stacks[i].frames, *end;
		struct node *n = root;

		root->value += p->stacks[i].weight;
		for (; *s; s = *end ? end + 1 : end) {
			end = strchrnul(s, ';');
			if (end == s)
				continue;
			n = child(n, s, end - s);
			if (!n) {
				node_free(root);
				return NULL;
			}
			n->value += p->stacks[i].weight;
		}
	}
	return root;
}

/* ===================================================================== */
/* Writing                                                               */
/* ===================================================================== */

/* Text for XML (content or attribute): escaped, control bytes and invalid UTF-8 (a name
 * the kernel cut mid-character) replaced by '?', at most max characters (0: all), and
 * ".." in place of the rest. */
static void xml_text(FILE *f, const char *s, size_t max)
{
	size_t len = strlen(s), shown = 0;

	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		size_t seq = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			     (c & 0xf8) == 0xf0 ? 4 : 0;
		bool valid = seq > 0 && i + seq <= len;

		for (size_t k = 1; valid && k < seq; k++)
			valid = ((unsigned char)s[i + k] & 0xc0) == 0x80;
		if (max && shown == max - 2 && len - i > 2) {	/* the rest will not fit */
			fputs("..", f);
			return;
		}
		if (!valid) {
			fputc('?', f);
			i++;
		} else if (seq > 1) {
			fwrite(s + i, 1, seq, f);
			i += seq;
		} else {
			switch (c) {
			case '&': fputs("&amp;", f); break;
			case '<': fputs("&lt;", f); break;
			case '>': fputs("&gt;", f); break;
			case '"': fputs("&quot;", f); break;
			case '\'': fputs("&apos;", f); break;
			default: fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
			}
			i++;
		}
		shown++;
	}
}

/* A colour for a frame, stable across runs (hashed from its name): red to orange for
 * Smalltalk methods, aqua for blocks, pale yellow for the VM's C functions, orange for the
 * kernel's, grey for the root and the markers ([truncated], [VM]). */
static void colour(const char *name, char *buf, size_t len)
{
	uint32_t h = 2166136261u;
	double v1, v2, v3;
	size_t n = strlen(name);

	for (const char *s = name; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	v1 = (h & 0xff) / 255.0;
	v2 = ((h >> 8) & 0xff) / 255.0;
	v3 = ((h >> 16) & 0xff) / 255.0;
	if ((name[0] == '[' && strncmp(name, "[] in ", 6) != 0) || strcmp(name, "all") == 0)
		snprintf(buf, len, "rgb(%d,%d,%d)", 180 + (int)(20 * v1), 180 + (int)(20 * v1),
			 190 + (int)(20 * v1));
	else if (n > 4 && strcmp(name + n - 4, "_[k]") == 0)
		snprintf(buf, len, "rgb(%d,%d,%d)", 220 + (int)(35 * v1), 120 + (int)(60 * v2), 40);
	else if (!strstr(name, ">>"))
		snprintf(buf, len, "rgb(%d,%d,%d)", 200 + (int)(55 * v1), 200 + (int)(55 * v1),
			 50 + (int)(40 * v2));
	else if (strncmp(name, "[] in ", 6) == 0)
		snprintf(buf, len, "rgb(%d,%d,%d)", 50 + (int)(60 * v1), 180 + (int)(60 * v2),
			 180 + (int)(60 * v3));
	else
		snprintf(buf, len, "rgb(%d,%d,%d)", 205 + (int)(50 * v3), (int)(170 * v1),
			 (int)(55 * v2));
}

struct layout {
	FILE *f;
	uint64_t total;
	double scale;			/* px per unit of count */
	int height;
	const char *unit;
};

static void write_frame(struct layout *l, const struct node *n, uint64_t x, int depth)
{
	double px = XPAD + x * l->scale, pw = n->value * l->scale;
	int y = l->height - BOTTOM - (depth + 1) * FRAME_HEIGHT;
	size_t chars = pw > 6 ? (size_t)((pw - 6) / CHAR_WIDTH) : 0;
	char fill[48];
	uint64_t kx = x;

	if (pw < MIN_WIDTH)
		return;
	colour(n->name, fill, sizeof(fill));
	fprintf(l->f, "<g class=\"f\" data-x=\"%llu\" data-w=\"%llu\" data-d=\"%d\" data-n=\"",
		(unsigned long long)x, (unsigned long long)n->value, depth);
	xml_text(l->f, n->name, 0);
	fprintf(l->f, "\"><title>");
	xml_text(l->f, n->name, 0);
	fprintf(l->f, " (%llu %s, %.2f%%)</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
		"height=\"%d\" rx=\"2\" fill=\"%s\"/><text x=\"%.1f\" y=\"%d\">",
		(unsigned long long)n->value, l->unit, l->total ? 100.0 * n->value / l->total : 0.0,
		px, y, pw, FRAME_HEIGHT - 1, fill, px + 3, y + FRAME_HEIGHT - 4);
	if (chars >= 3)
		xml_text(l->f, n->name, chars);
	fprintf(l->f, "</text></g>\n");
	for (size_t i = 0; i < n->nkids; i++) {
		write_frame(l, n->kids[i], kx, depth + 1);
		kx += n->kids[i]->value;
	}
}

/* The script: zoom (click), reset (Esc, "Reset Zoom"), search, details on hover. Frames
 * carry their position in counts (data-x, data-w) and depth (data-d); redraw() lays out
 * the visible range [zx, zx + zw) across the width. */
static const char script[] =
"\"use strict\";\n"
"var W = %d, XPAD = %d, CW = %.1f, TOTAL = %llu, UNIT = \"%s\";\n"
"var zx = 0, zw = TOTAL, zd = -1, frames = [], details, unzoom, matched;\n"
"function attr(g, n) { return +g.getAttribute(n); }\n"
"function label(name, w) {\n"
"  var chars = Math.floor((w - 6) / CW);\n"
"  if (chars < 3) return \"\";\n"
"  return name.length <= chars ? name : name.substring(0, chars - 2) + \"..\";\n"
"}\n"
"function redraw() {\n"
"  var scale = (W - 2 * XPAD) / zw;\n"
"  for (var i = 0; i < frames.length; i++) {\n"
"    var g = frames[i], x = attr(g, \"data-x\"), w = attr(g, \"data-w\"), d = attr(g, \"data-d\");\n"
"    var lo = Math.max(x, zx), hi = Math.min(x + w, zx + zw), pw = (hi - lo) * scale;\n"
"    if (hi <= lo || pw < 0.1) { g.style.display = \"none\"; continue; }\n"
"    g.style.display = \"\";\n"
"    g.style.opacity = d < zd ? 0.5 : 1;\n"
"    var r = g.querySelector(\"rect\"), t = g.querySelector(\"text\");\n"
"    r.setAttribute(\"x\", XPAD + (lo - zx) * scale);\n"
"    r.setAttribute(\"width\", pw);\n"
"    t.setAttribute(\"x\", XPAD + (lo - zx) * scale + 3);\n"
"    t.textContent = label(g.getAttribute(\"data-n\"), pw);\n"
"  }\n"
"  unzoom.style.opacity = zw < TOTAL ? 1 : 0;\n"
"}\n"
"function zoom(g) {\n"
"  zx = attr(g, \"data-x\"); zw = attr(g, \"data-w\"); zd = attr(g, \"data-d\");\n"
"  if (zw <= 0) { zx = 0; zw = TOTAL; zd = -1; }\n"
"  redraw();\n"
"}\n"
"function reset() { zx = 0; zw = TOTAL; zd = -1; redraw(); }\n"
"function search() {\n"
"  var term = prompt(\"Search for (a regular expression):\", \"\");\n"
"  var re, hits = [], sum = 0, last = -1;\n"
"  if (term === null) return;\n"
"  try { re = new RegExp(term); } catch (e) { alert(e); return; }\n"
"  for (var i = 0; i < frames.length; i++) {\n"
"    var g = frames[i], r = g.querySelector(\"rect\");\n"
"    if (!r.hasAttribute(\"data-fill\")) r.setAttribute(\"data-fill\", r.getAttribute(\"fill\"));\n"
"    var hit = term !== \"\" && re.test(g.getAttribute(\"data-n\"));\n"
"    r.setAttribute(\"fill\", hit ? \"rgb(230,0,230)\" : r.getAttribute(\"data-fill\"));\n"
"    if (hit) hits.push([attr(g, \"data-x\"), attr(g, \"data-w\")]);\n"
"  }\n"
"  hits.sort(function (a, b) { return a[0] - b[0]; });\n"
"  for (var k = 0; k < hits.length; k++) {   /* nested hits count once */\n"
"    var lo = Math.max(hits[k][0], last), hi = hits[k][0] + hits[k][1];\n"
"    if (hi > lo) { sum += hi - lo; last = hi; }\n"
"  }\n"
"  matched.textContent = term === \"\" ? \"\" :\n"
"    \"Matched: \" + (TOTAL ? (100 * sum / TOTAL).toFixed(2) : 0) + \"%%\";\n"
"}\n"
"(function init() {\n"
"  details = document.getElementById(\"details\");\n"
"  unzoom = document.getElementById(\"unzoom\");\n"
"  matched = document.getElementById(\"matched\");\n"
"  frames = Array.prototype.slice.call(document.querySelectorAll(\"g.f\"));\n"
"  frames.forEach(function (g) {\n"
"    var title = g.querySelector(\"title\").textContent;\n"
"    g.addEventListener(\"click\", function () { zoom(g); });\n"
"    g.addEventListener(\"mouseover\", function () { details.textContent = title; });\n"
"    g.addEventListener(\"mouseout\", function () { details.textContent = \" \"; });\n"
"  });\n"
"  unzoom.addEventListener(\"click\", reset);\n"
"  document.getElementById(\"search\").addEventListener(\"click\", search);\n"
"  document.addEventListener(\"keydown\", function (e) {\n"
"    if (e.key === \"Escape\") reset();\n"
"    if ((e.ctrlKey || e.metaKey) && e.key === \"f\") { e.preventDefault(); search(); }\n"
"  });\n"
"  redraw();\n"
"})();\n";

int sqp_write_svg(FILE *f, struct sqp_profile *p, const char *title, const char *subtitle,
		  bool bytes)
{
	struct layout l = { .f = f, .unit = bytes ? "bytes" : "samples" };
	struct node *root;
	int depth;

	sqp_profile_merge(p);
	root = build_tree(p);
	if (!root)
		return -ENOMEM;
	depth = sort_tree(root, 0);
	l.total = root->value;
	l.scale = l.total ? (double)(IMAGE_WIDTH - 2 * XPAD) / l.total : 0;
	l.height = TOP + (depth + 1) * FRAME_HEIGHT + BOTTOM;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n", IMAGE_WIDTH, l.height, IMAGE_WIDTH, l.height);
	fprintf(f, "<!-- Flame graph by sqprof (sqvm tools). Each box is a frame; its width is "
		"the %s that had it on the stack; the innermost frame is on top. Click a box to "
		"zoom, Esc to zoom out. -->\n", l.unit);
	fprintf(f, "<defs><linearGradient id=\"bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/><stop stop-color=\"#eeeeb0\" "
		"offset=\"95%%\"/></linearGradient></defs>\n");
	fprintf(f, "<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: rgb(0,0,0); }\n"
		"#title { font-size: 17px; text-anchor: middle; }\n"
		"#subtitle { text-anchor: middle; fill: rgb(90,90,90); }\n"
		"#unzoom, #search { cursor: pointer; }\n"
		"#search, #matched { text-anchor: end; }\n"
		"g.f { cursor: pointer; }\n"
		"g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
		"</style>\n", FONT_SIZE);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#bg)\"/>\n",
		IMAGE_WIDTH, l.height);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\">", IMAGE_WIDTH / 2);
	xml_text(f, title ? title : "Flame Graph", 0);
	fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"44\">", IMAGE_WIDTH / 2);
	xml_text(f, subtitle ? subtitle : "", 0);
	fprintf(f, "</text>\n<text id=\"unzoom\" x=\"%d\" y=\"24\" style=\"opacity: 0\">Reset Zoom"
		"</text>\n<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\"></text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n<g id=\"frames\">\n",
		XPAD, IMAGE_WIDTH - XPAD, IMAGE_WIDTH - XPAD, l.height - 12, XPAD, l.height - 12);
	write_frame(&l, root, 0, 0);
	fprintf(f, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n");
	fprintf(f, script, IMAGE_WIDTH, XPAD, CHAR_WIDTH, (unsigned long long)l.total, l.unit);
	fprintf(f, "]]></script>\n</svg>\n");
	node_free(root);
	fflush(f);
	return ferror(f) ? -EIO : 0;
}

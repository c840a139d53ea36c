// SPDX-License-Identifier: BSD-2-Clause
/* sqaccept.c - HTTP content negotiation; see sqaccept.h. A header is read in place, one
 * media range at a time, with no copies and no allocation: the server calls this with a
 * request head of at most 8 KiB, and anything in it may be hostile. */
#include "sqaccept.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#define MAX_PARAMS 8		/* a range's parameters we compare; a range with more is skipped */

/* A piece of a header: [s, s + n). */
struct span {
	const char *s;
	size_t n;
};

struct param {
	struct span name, value;
};

/* A media type or range: type/subtype and its parameters (a range's before q). */
struct media {
	struct span type, subtype;
	struct param params[MAX_PARAMS];
	int nparams;
	int q;			/* a range's weight in thousandths */
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static struct span trim(const char *s, const char *end)
{
	while (s < end && is_space(*s))
		s++;
	while (end > s && is_space(end[-1]))
		end--;
	return (struct span){ s, (size_t)(end - s) };
}

static bool span_eq(struct span a, struct span b)
{
	return a.n == b.n && strncasecmp(a.s, b.s, a.n) == 0;
}

static bool span_is(struct span a, const char *text)
{
	return span_eq(a, (struct span){ text, strlen(text) });
}

/* A parameter's value without its quotes; a quoted one with an escape (rare, and never
 * in the values offered here) is kept as it is, and so matches nothing. */
static struct span unquoted(struct span v)
{
	if (v.n >= 2 && v.s[0] == '"' && v.s[v.n - 1] == '"' && !memchr(v.s, '\\', v.n))
		return (struct span){ v.s + 1, v.n - 2 };
	return v;
}

/* q's value: "0", "1", "0.5", "1.000": thousandths, or -1. */
static int parse_q(struct span v)
{
	int q;

	if (!v.n || (v.s[0] != '0' && v.s[0] != '1') || (v.n > 1 && (v.s[1] != '.' || v.n > 5)))
		return -1;
	q = (v.s[0] - '0') * 1000;
	for (size_t k = 2, scale = 100; k < v.n; k++, scale /= 10) {
		if (v.s[k] < '0' || v.s[k] > '9')
			return -1;
		q += (v.s[k] - '0') * (int)scale;
	}
	return q <= 1000 ? q : -1;
}

/* One media type or range, [s, end): false if it cannot be read. A range's parameters
 * end at q (what follows it is accept-ext, which no offer has). */
static bool parse_media(const char *s, const char *end, bool range, struct media *m)
{
	const char *semi = memchr(s, ';', (size_t)(end - s)), *type_end = semi ? semi : end, *slash;
	struct span t = trim(s, type_end);

	*m = (struct media){ .q = 1000 };
	if (!(slash = memchr(t.s, '/', t.n)))
		return false;
	m->type = trim(t.s, slash);
	m->subtype = trim(slash + 1, t.s + t.n);
	if (!m->type.n || !m->subtype.n || (span_is(m->type, "*") && !span_is(m->subtype, "*")))
		return false;
	for (const char *p = semi; p && p < end;) {
		const char *next = memchr(p + 1, ';', (size_t)(end - p - 1)), *stop = next ? next : end;
		const char *eq = memchr(p + 1, '=', (size_t)(stop - p - 1));
		struct param pr;

		if (!eq)
			return false;
		pr = (struct param){ trim(p + 1, eq), unquoted(trim(eq + 1, stop)) };
		if (range && span_is(pr.name, "q")) {
			m->q = parse_q(pr.value);
			return m->q >= 0;
		}
		if (m->nparams == MAX_PARAMS)
			return false;
		m->params[m->nparams++] = pr;
		p = next;
	}
	return true;
}

/* How specific range r is if it matches offer o; -1 if it does not. */
static int match(const struct media *r, const struct media *o)
{
	int specific = 0;

	if (!span_is(r->type, "*")) {
		if (!span_eq(r->type, o->type))
			return -1;
		specific += 100;
	}
	if (!span_is(r->subtype, "*")) {
		if (!span_eq(r->subtype, o->subtype))
			return -1;
		specific += 100;
	}
	for (int i = 0; i < r->nparams; i++) {
		bool found = false;
		for (int k = 0; k < o->nparams && !found; k++)
			found = span_eq(r->params[i].name, o->params[k].name) && span_eq(r->params[i].value, o->params[k].value);
		if (!found)
			return -1;
	}
	return specific + r->nparams;
}

/* An offer's weight, and what breaks ties: its deciding range's specificity and place. */
struct weight {
	int q, specific, place;
};

int sq_accept_choose(const char *accept, const char *const *offers, int noffers)
{
	struct weight w[8];
	struct media offer[8], range;
	const char *s = accept, *end;
	int best = -1, place = 0;

	if (noffers > 8)
		noffers = 8;
	if (!accept || !trim(accept, accept + strlen(accept)).n)
		return noffers > 0 ? 0 : -1;
	for (int i = 0; i < noffers; i++) {
		w[i] = (struct weight){ .q = -1, .specific = -1 };
		if (!parse_media(offers[i], offers[i] + strlen(offers[i]), false, &offer[i]))
			return -1;
	}
	for (end = s; *s; s = *end ? end + 1 : end, place++) {
		/* a comma inside a quoted value does not end the range */
		bool quoted = false;
		for (end = s; *end && (quoted || *end != ','); end++)
			if (*end == '"')
				quoted = !quoted;
		if (!parse_media(s, end, true, &range))
			continue;
		for (int i = 0; i < noffers; i++) {
			int sp = match(&range, &offer[i]);
			if (sp > w[i].specific)
				w[i] = (struct weight){ range.q, sp, place };
		}
	}
	for (int i = 0; i < noffers; i++) {
		if (w[i].q <= 0)
			continue;
		if (best < 0 || w[i].q > w[best].q ||
		    (w[i].q == w[best].q && (w[i].specific > w[best].specific ||
					     (w[i].specific == w[best].specific && w[i].place < w[best].place))))
			best = i;
	}
	return best;
}

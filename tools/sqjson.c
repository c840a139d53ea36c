// SPDX-License-Identifier: BSD-2-Clause
/* sqjson.c - a recursive-descent JSON reader (sqjson.h). The recursion is bounded by
 * SQ_JSON_MAX_DEPTH, so hostile nesting cannot exhaust the stack; every allocation is
 * checked, and a failed parse frees what it built. */
#include "sqjson.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const char *s, *end, *start;
	char *err;
	size_t errlen;
	bool failed;
};

static void fail(struct parser *p, const char *why)
{
	if (p->failed)
		return;
	p->failed = true;
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "%s at byte %zu", why, (size_t)(p->s - p->start));
}

static void skip_ws(struct parser *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static bool literal(struct parser *p, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n)) {
		fail(p, "not a JSON value");
		return false;
	}
	p->s += n;
	return true;
}

static int hex4(const char *s)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string at p->s (its opening quote), decoded. The decoded text is never longer than
 * the escaped one, so one buffer of the escaped length holds it. */
static char *string(struct parser *p)
{
	const char *q = ++p->s;
	char *out, *o;

	while (q < p->end && *q != '"')
		q += *q == '\\' && q + 1 < p->end ? 2 : 1;
	if (q >= p->end) {
		fail(p, "unterminated string");
		return NULL;
	}
	out = o = malloc(q - p->s + 1);
	if (!out) {
		fail(p, "out of memory");
		return NULL;
	}
	while (p->s < q) {
		unsigned char c = (unsigned char)*p->s++;
		if (c < 0x20) {
			fail(p, "control character in a string");
			goto bad;
		}
		if (c != '\\') {
			*o++ = (char)c;
			continue;
		}
		c = (unsigned char)*p->s++;
		switch (c) {
		case '"': case '\\': case '/': *o++ = (char)c; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			int hi = q - p->s >= 4 ? hex4(p->s) : -1;
			uint32_t cp;
			if (hi < 0) {
				fail(p, "bad \\u escape");
				goto bad;
			}
			p->s += 4;
			cp = (uint32_t)hi;
			if (hi >= 0xd800 && hi < 0xdc00 && q - p->s >= 6 && p->s[0] == '\\' && p->s[1] == 'u') {
				int lo = hex4(p->s + 2);
				if (lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + (((uint32_t)hi - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
					p->s += 6;
				}
			}
			if (cp == 0 || (cp >= 0xd800 && cp < 0xe000))
				cp = '?';	/* a NUL or a lone surrogate: not a character to keep */
			/* \uXXXX is 6 bytes and at most 3 of UTF-8; a pair is 12 and 4 */
			o += put_utf8(o, cp);
			break;
		}
		default:
			fail(p, "bad escape in a string");
			goto bad;
		}
	}
	*o = 0;
	p->s = q + 1;
	return out;
bad:
	free(out);
	return NULL;
}

static bool number(struct parser *p, double *out)
{
	const char *q = p->s;
	char buf[64];

	if (q < p->end && *q == '-')
		q++;
	if (q >= p->end || *q < '0' || *q > '9')
		goto bad;
	if (*q == '0')
		q++;
	else
		while (q < p->end && *q >= '0' && *q <= '9')
			q++;
	if (q < p->end && *q == '.') {
		if (++q >= p->end || *q < '0' || *q > '9')
			goto bad;
		while (q < p->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < p->end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < p->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= p->end || *q < '0' || *q > '9')
			goto bad;
		while (q < p->end && *q >= '0' && *q <= '9')
			q++;
	}
	if ((size_t)(q - p->s) >= sizeof(buf)) {
		fail(p, "number too long");
		return false;
	}
	memcpy(buf, p->s, q - p->s);
	buf[q - p->s] = 0;
	*out = strtod(buf, NULL);
	p->s = q;
	return true;
bad:
	fail(p, "bad number");
	return false;
}

static struct sq_jv *value(struct parser *p, int depth);

/* The elements of an array, or the members of an object (close: ']' or '}'). */
static bool elements(struct parser *p, struct sq_jv *v, char close, int depth)
{
	struct sq_jv **tail = &v->child;

	p->s++;
	skip_ws(p);
	if (p->s < p->end && *p->s == close) {
		p->s++;
		return true;
	}
	for (;;) {
		char *key = NULL;
		struct sq_jv *e;

		skip_ws(p);
		if (close == '}') {
			if (p->s >= p->end || *p->s != '"') {
				fail(p, "expected a member name");
				return false;
			}
			if (!(key = string(p)))
				return false;
			skip_ws(p);
			if (p->s >= p->end || *p->s != ':') {
				free(key);
				fail(p, "expected ':'");
				return false;
			}
			p->s++;
		}
		e = value(p, depth + 1);
		if (!e) {
			free(key);
			return false;
		}
		e->key = key;
		*tail = e;
		tail = &e->next;
		skip_ws(p);
		if (p->s < p->end && *p->s == ',') {
			p->s++;
			continue;
		}
		if (p->s < p->end && *p->s == close) {
			p->s++;
			return true;
		}
		fail(p, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
		return false;
	}
}

static struct sq_jv *value(struct parser *p, int depth)
{
	struct sq_jv *v;
	bool ok = true;

	if (depth > SQ_JSON_MAX_DEPTH) {
		fail(p, "nested too deep");
		return NULL;
	}
	skip_ws(p);
	if (p->s >= p->end) {
		fail(p, "unexpected end");
		return NULL;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		fail(p, "out of memory");
		return NULL;
	}
	switch (*p->s) {
	case '{':
		v->type = SQ_JSON_OBJECT;
		ok = elements(p, v, '}', depth);
		break;
	case '[':
		v->type = SQ_JSON_ARRAY;
		ok = elements(p, v, ']', depth);
		break;
	case '"':
		v->type = SQ_JSON_STRING;
		ok = (v->string = string(p)) != NULL;
		break;
	case 't':
		v->type = SQ_JSON_TRUE;
		ok = literal(p, "true");
		break;
	case 'f':
		v->type = SQ_JSON_FALSE;
		ok = literal(p, "false");
		break;
	case 'n':
		v->type = SQ_JSON_NULL;
		ok = literal(p, "null");
		break;
	default:
		v->type = SQ_JSON_NUMBER;
		ok = number(p, &v->number);
	}
	if (!ok) {
		sq_jv_free(v);
		return NULL;
	}
	return v;
}

struct sq_jv *sq_jv_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct parser p = { .s = text, .end = text + len, .start = text, .err = err, .errlen = errlen };
	struct sq_jv *v = value(&p, 0);

	if (!v)
		return NULL;
	skip_ws(&p);
	if (p.s != p.end) {
		fail(&p, "text after the value");
		sq_jv_free(v);
		return NULL;
	}
	return v;
}

/* Iterative over siblings, recursive only into children: as deep as the parse allowed. */
void sq_jv_free(struct sq_jv *v)
{
	while (v) {
		struct sq_jv *next = v->next;
		sq_jv_free(v->child);
		free(v->string);
		free(v->key);
		free(v);
		v = next;
	}
}

const struct sq_jv *sq_jv_get(const struct sq_jv *v, const char *key)
{
	if (!v || v->type != SQ_JSON_OBJECT)
		return NULL;
	for (const struct sq_jv *m = v->child; m; m = m->next)
		if (m->key && !strcmp(m->key, key))
			return m;
	return NULL;
}

double sq_jv_num(const struct sq_jv *v, const char *key, double dflt)
{
	const struct sq_jv *m = sq_jv_get(v, key);

	return m && m->type == SQ_JSON_NUMBER ? m->number : dflt;
}

const char *sq_jv_str(const struct sq_jv *v, const char *key)
{
	const struct sq_jv *m = sq_jv_get(v, key);

	return m && m->type == SQ_JSON_STRING ? m->string : NULL;
}

bool sq_jv_true(const struct sq_jv *v, const char *key)
{
	const struct sq_jv *m = sq_jv_get(v, key);

	return m && m->type == SQ_JSON_TRUE;
}

const struct sq_jv *sq_jv_first(const struct sq_jv *v)
{
	return v && (v->type == SQ_JSON_ARRAY || v->type == SQ_JSON_OBJECT) ? v->child : NULL;
}

// SPDX-License-Identifier: BSD-2-Clause
/* json_test.c - the tools' JSON reader (tools/sqjson.c) on exact cases: values, escapes
 * (surrogate pairs, a NUL, a lone surrogate), numbers, and the texts it must refuse,
 * each with the offset it names; nesting past SQ_JSON_MAX_DEPTH is refused, not a deep
 * recursion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqjson.h"

static int failed, passed;

static void check(int ok, const char *what)
{
	if (ok) {
		passed++;
	} else {
		failed++;
		printf("FAIL %s\n", what);
	}
}

static struct sq_jv *parse(const char *text, char *err)
{
	return sq_jv_parse(text, strlen(text), err, 128);
}

/* text must be refused with exactly this message */
static void refuse(const char *text, const char *why)
{
	char err[128] = "";
	struct sq_jv *v = parse(text, err);

	if (v || strcmp(err, why))
		printf("  %s: got \"%s\"\n", text, v ? "(parsed)" : err);
	check(!v && !strcmp(err, why), text);
	sq_jv_free(v);
}

int main(void)
{
	char err[128];
	struct sq_jv *v = parse(" {\"a\":[1,-2.5e3,true,false,null],\"b\":{\"c\":\"x\\\"\\\\\\/\\n\"},\"n\":0} ", err);
	const struct sq_jv *a, *e;
	char deep[400];

	check(v && v->type == SQ_JSON_OBJECT, "object");
	a = sq_jv_get(v, "a");
	e = sq_jv_first(a);
	check(e && e->type == SQ_JSON_NUMBER && e->number == 1, "a[0] = 1");
	check(e && e->next && e->next->number == -2500, "a[1] = -2500");
	check(e && e->next && e->next->next && e->next->next->type == SQ_JSON_TRUE, "a[2] true");
	check(!strcmp(sq_jv_str(sq_jv_get(v, "b"), "c"), "x\"\\/\n"), "escapes");
	check(sq_jv_num(v, "n", 7) == 0 && sq_jv_num(v, "missing", 7) == 7, "numbers and defaults");
	check(!sq_jv_str(v, "a") && !sq_jv_get(a, "x"), "wrong types answer nothing");
	sq_jv_free(v);

	v = parse("\"\\u00e9\\ud83d\\ude00\\u0000\\ud800x\"", err);
	check(v && !strcmp(v->string, "\xc3\xa9\xf0\x9f\x98\x80?" "?x"), "unicode: pair, NUL and lone surrogate");
	sq_jv_free(v);

	refuse("", "unexpected end at byte 0");
	refuse("{\"a\":1,}", "expected a member name at byte 7");
	refuse("[1 2]", "expected ',' or ']' at byte 3");
	refuse("\"abc", "unterminated string at byte 1");
	refuse("\"a\tb\"", "control character in a string at byte 3");
	refuse("01", "text after the value at byte 1");
	refuse("-", "bad number at byte 0");
	refuse("1.", "bad number at byte 0");
	refuse("nul", "not a JSON value at byte 0");
	refuse("\"\\x\"", "bad escape in a string at byte 3");
	refuse("\"\\u12\"", "bad \\u escape at byte 3");
	refuse("{\"a\" 1}", "expected ':' at byte 5");
	refuse("[1] x", "text after the value at byte 4");

	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = 0;
	refuse(deep, "nested too deep at byte 65");
	memset(deep, 0, sizeof(deep));
	memset(deep, '[', SQ_JSON_MAX_DEPTH + 1);
	memset(deep + SQ_JSON_MAX_DEPTH + 1, ']', SQ_JSON_MAX_DEPTH + 1);
	v = parse(deep, err);
	check(v != NULL, "nesting of exactly SQ_JSON_MAX_DEPTH + 1 arrays");
	sq_jv_free(v);

	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}

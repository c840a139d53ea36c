// SPDX-License-Identifier: BSD-2-Clause
/* sqjson_write.c - a JSON tree (sqjson.h) written back as JSON text: what sqflow --merge
 * copies of a browser's trace. Strings go through sq_json_str (escaped, well-formed
 * UTF-8 whatever they hold); numbers as integers when they are (a timestamp in µs, a
 * pid), else with the 17 digits that give the same double back. */
#include <math.h>

#include "sqjson.h"
#include "sqoutput.h"

static void write_number(FILE *f, double x)
{
	/* below 2^53 an integral double is an exact integer */
	if (x == floor(x) && fabs(x) < 9007199254740992.0)
		fprintf(f, "%.0f", x);
	else
		fprintf(f, "%.17g", x);
}

void sq_jv_write(FILE *f, const struct sq_jv *v)
{
	switch (v->type) {
	case SQ_JSON_NULL:
		fputs("null", f);
		break;
	case SQ_JSON_FALSE:
		fputs("false", f);
		break;
	case SQ_JSON_TRUE:
		fputs("true", f);
		break;
	case SQ_JSON_NUMBER:
		write_number(f, v->number);
		break;
	case SQ_JSON_STRING:
		sq_json_str(f, v->string);
		break;
	case SQ_JSON_ARRAY:
	case SQ_JSON_OBJECT:
		fputc(v->type == SQ_JSON_ARRAY ? '[' : '{', f);
		for (const struct sq_jv *e = v->child; e; e = e->next) {
			if (e != v->child)
				fputc(',', f);
			if (v->type == SQ_JSON_OBJECT) {
				sq_json_str(f, e->key ? e->key : "");
				fputc(':', f);
			}
			sq_jv_write(f, e);
		}
		fputc(v->type == SQ_JSON_ARRAY ? ']' : '}', f);
		break;
	}
}

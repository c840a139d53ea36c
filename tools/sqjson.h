// SPDX-License-Identifier: BSD-2-Clause
/* sqjson.h - reading JSON (RFC 8259) into a tree, and writing a tree back: what sqdoctor
 * reads back from the family's own -j output, and what a tool reads from another program
 * (a browser's trace, which sqflow --merge copies into its own).
 * The text is untrusted: its size, its nesting (at most SQ_JSON_MAX_DEPTH) and every
 * string's length are bounded; a parse either answers the whole tree or says where the
 * text stopped being JSON. */
#ifndef SQJSON_H
#define SQJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define SQ_JSON_MAX_DEPTH 64

enum sq_jv_type {
	SQ_JSON_NULL,
	SQ_JSON_FALSE,
	SQ_JSON_TRUE,
	SQ_JSON_NUMBER,
	SQ_JSON_STRING,
	SQ_JSON_ARRAY,
	SQ_JSON_OBJECT,
};

struct sq_jv {
	enum sq_jv_type type;
	double number;		/* NUMBER */
	char *string;		/* STRING: decoded UTF-8, NUL-terminated (a \u0000 is cut to "?") */
	char *key;		/* a member of an OBJECT: its name (decoded as a string) */
	struct sq_jv *child;	/* ARRAY, OBJECT: the first element or member */
	struct sq_jv *next;	/* the next element or member of the parent */
};

/* The tree of text[0..len) (one value, white space around it allowed), or NULL with the
 * reason and byte offset in err. Free it with sq_jv_free. */
struct sq_jv *sq_jv_parse(const char *text, size_t len, char *err, size_t errlen);
void sq_jv_free(struct sq_jv *v);

/* The member key of object v (NULL if v is not an object or has none). */
const struct sq_jv *sq_jv_get(const struct sq_jv *v, const char *key);
/* Member key's number (dflt if absent or not a number), string (NULL), boolean. */
double sq_jv_num(const struct sq_jv *v, const char *key, double dflt);
const char *sq_jv_str(const struct sq_jv *v, const char *key);
bool sq_jv_true(const struct sq_jv *v, const char *key);
/* The elements of array (or members of object) v: for (e = sq_jv_first(v); e; e = e->next). */
const struct sq_jv *sq_jv_first(const struct sq_jv *v);

/* v as JSON text on f, on one line (sqjson_write.c). */
void sq_jv_write(FILE *f, const struct sq_jv *v);

#endif

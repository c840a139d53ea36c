// SPDX-License-Identifier: BSD-2-Clause
/* sqintern.h - a string-interning table, for the tools that number what they export
 * (sqcalls --mse's classes, methods and invocations; sqprof's frames, methods and pprof
 * strings): each distinct string gets the next index, 0, 1, 2, ... in the order it was
 * first seen, and the table keeps a copy of it under that index. Open addressing on
 * FNV-1a, kept at most half full, grown by doubling. It has no bound of its own: what
 * its callers put in is bounded where they read it (a folded stack at most 64 KiB, a
 * name at most 4,096 bytes: docs/TOOLS.md, Threat model), and out of memory is an answer. */
#ifndef SQINTERN_H
#define SQINTERN_H

#include <stddef.h>

/* A zeroed struct is an empty table. */
struct sq_intern {
	char **names;		/* by index: NUL-terminated copies, owned */
	size_t *lens;		/* by index: their lengths */
	size_t n, cap;		/* names held, room for */
	size_t *slots;		/* open addressing: an index plus one, 0 empty */
	size_t nslots;		/* a power of two */
};

/* The index of the string s[0..len), added if new; (size_t)-1 when out of memory. A
 * string's copy stays where it is until sq_intern_free (the names array may move). */
size_t sq_intern(struct sq_intern *t, const char *s, size_t len);

/* Frees the copies and the table, and leaves it empty. */
void sq_intern_free(struct sq_intern *t);

#endif

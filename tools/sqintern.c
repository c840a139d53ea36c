// SPDX-License-Identifier: BSD-2-Clause
/* sqintern.c - the tools' string-interning table; see sqintern.h. */
#include "sqintern.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a */
static size_t hash(const char *s, size_t len)
{
	size_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

/* Twice the slots (1,024 at first), every index placed again; -1 when out of memory. */
static int grow_slots(struct sq_intern *t)
{
	size_t ns = t->nslots ? 2 * t->nslots : 1024, i;
	size_t *slots = calloc(ns, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t k = 0; k < t->n; k++) {
		for (i = hash(t->names[k], t->lens[k]) & (ns - 1); slots[i]; i = (i + 1) & (ns - 1))
			;
		slots[i] = k + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = ns;
	return 0;
}

/* Room for twice the names (256 at first); -1 when out of memory. */
static int grow_names(struct sq_intern *t)
{
	size_t cap = t->cap ? 2 * t->cap : 256;
	char **names = realloc(t->names, cap * sizeof(*names));
	size_t *lens;

	if (!names)
		return -1;
	t->names = names;
	if (!(lens = realloc(t->lens, cap * sizeof(*lens))))
		return -1;
	t->lens = lens;
	t->cap = cap;
	return 0;
}

size_t sq_intern(struct sq_intern *t, const char *s, size_t len)
{
	size_t i;
	char *copy;

	if ((t->n + 1) * 2 > t->nslots && grow_slots(t))
		return (size_t)-1;
	for (i = hash(s, len) & (t->nslots - 1); t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
		size_t k = t->slots[i] - 1;
		if (t->lens[k] == len && memcmp(t->names[k], s, len) == 0)
			return k;
	}
	if ((t->n == t->cap && grow_names(t)) || !(copy = malloc(len + 1)))
		return (size_t)-1;
	memcpy(copy, s, len);
	copy[len] = 0;
	t->names[t->n] = copy;
	t->lens[t->n] = len;
	t->slots[i] = t->n + 1;
	return t->n++;
}

void sq_intern_free(struct sq_intern *t)
{
	for (size_t k = 0; k < t->n; k++)
		free(t->names[k]);
	free(t->names);
	free(t->lens);
	free(t->slots);
	*t = (struct sq_intern){ 0 };
}

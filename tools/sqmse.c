// SPDX-License-Identifier: BSD-2-Clause
/* sqmse.c - traced calls as a FAMIX 3 model in MSE; see sqmse.h. */
#define _GNU_SOURCE
#include "sqmse.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct mclass {
	char *name;
};

struct mmethod {
	size_t cls;			/* index in classes */
	char *selector;
	bool class_side;
	uint64_t calls, total_ns, self_ns;
};

struct minvocation {
	size_t sender, callee;		/* indices in methods */
	uint64_t calls;
};

/* Index by key: open addressing, keys owned, value an index into one of the arrays. */
struct index {
	char **keys;
	size_t *vals;
	size_t cap, n;
};

struct sqmse {
	struct mclass *classes;
	struct mmethod *methods;
	struct minvocation *invocations;
	size_t nclasses, nmethods, ninvocations, cap_classes, cap_methods, cap_invocations;
	struct index index;
};

/* ===================================================================== */
/* The index                                                             */
/* ===================================================================== */

static size_t hash(const char *s)
{
	size_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int index_grow(struct index *x)
{
	struct index bigger = { calloc(x->cap ? 2 * x->cap : 256, sizeof(char *)),
				calloc(x->cap ? 2 * x->cap : 256, sizeof(size_t)), x->cap ? 2 * x->cap : 256, x->n };

	if (!bigger.keys || !bigger.vals) {
		free(bigger.keys);
		free(bigger.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->cap; i++) {
		size_t j;
		if (!x->keys[i])
			continue;
		for (j = hash(x->keys[i]) & (bigger.cap - 1); bigger.keys[j]; j = (j + 1) & (bigger.cap - 1))
			;
		bigger.keys[j] = x->keys[i];
		bigger.vals[j] = x->vals[i];
	}
	free(x->keys);
	free(x->vals);
	*x = bigger;
	return 0;
}

/* The slot of key: found (*found) or where it goes; NULL when out of memory. */
static size_t *index_slot(struct index *x, const char *key, bool *found)
{
	size_t j;

	if ((x->n + 1) * 2 > x->cap && index_grow(x))
		return NULL;
	for (j = hash(key) & (x->cap - 1); x->keys[j]; j = (j + 1) & (x->cap - 1))
		if (strcmp(x->keys[j], key) == 0) {
			*found = true;
			return &x->vals[j];
		}
	if (!(x->keys[j] = strdup(key)))
		return NULL;
	x->n++;
	*found = false;
	return &x->vals[j];
}

/* ===================================================================== */
/* The model                                                             */
/* ===================================================================== */

struct sqmse *sqmse_new(void)
{
	return calloc(1, sizeof(struct sqmse));
}

/* Room for one more element in *arr (n in use, *cap allocated). */
static int room(void **arr, size_t n, size_t *cap, size_t size)
{
	void *grown;

	if (n < *cap)
		return 0;
	if (!(grown = realloc(*arr, (*cap ? 2 * *cap : 64) * size)))
		return -ENOMEM;
	*arr = grown;
	*cap = *cap ? 2 * *cap : 64;
	return 0;
}

/* The class named name, added if new; (size_t)-1 when out of memory. */
static size_t class_of(struct sqmse *m, const char *name)
{
	char key[600];
	bool found;
	size_t *v;

	snprintf(key, sizeof(key), "C %s", name);
	if (!(v = index_slot(&m->index, key, &found)))
		return (size_t)-1;
	if (found)
		return *v;
	if (room((void **)&m->classes, m->nclasses, &m->cap_classes, sizeof(*m->classes)) ||
	    !(m->classes[m->nclasses].name = strdup(name)))
		return (size_t)-1;
	return *v = m->nclasses++;
}

/* The method a printName names (a block's: its home method's), added if new; *block
 * says whether it was a block. (size_t)-1: out of memory, or not a method's name. */
static size_t method_of(struct sqmse *m, const char *name, bool *block)
{
	const char *sep, *cls;
	char key[1024], klass[512];
	size_t *v, ci, len;
	bool found, class_side;

	for (*block = false; !strncmp(name, "[] in ", 6); name += 6)
		*block = true;
	if (!(sep = strstr(name, ">>")) || sep == name || !sep[2] || (len = (size_t)(sep - name)) >= sizeof(klass))
		return (size_t)-1;
	memcpy(klass, name, len);
	klass[len] = 0;
	class_side = len > 6 && !strcmp(klass + len - 6, " class");
	if (class_side)
		klass[len - 6] = 0;
	cls = klass;
	/* the class first: adding it may grow the index, and move the method's slot */
	if ((ci = class_of(m, cls)) == (size_t)-1)
		return (size_t)-1;
	snprintf(key, sizeof(key), "M %s", name);
	if (!(v = index_slot(&m->index, key, &found)))
		return (size_t)-1;
	if (found)
		return *v;
	if (room((void **)&m->methods, m->nmethods, &m->cap_methods, sizeof(*m->methods)))
		return (size_t)-1;
	m->methods[m->nmethods] = (struct mmethod){ .cls = ci, .selector = strdup(sep + 2), .class_side = class_side };
	if (!m->methods[m->nmethods].selector)
		return (size_t)-1;
	return *v = m->nmethods++;
}

int sqmse_method(struct sqmse *m, const char *name, uint64_t calls, uint64_t total_ns, uint64_t self_ns)
{
	bool block;
	size_t i = method_of(m, name, &block);

	if (i == (size_t)-1)
		return strstr(name, ">>") ? -ENOMEM : -EINVAL;
	if (!block) {		/* a block's runs are its method's code running, not calls */
		m->methods[i].calls += calls;
		m->methods[i].total_ns += total_ns;
		m->methods[i].self_ns += self_ns;
	}
	return 0;
}

int sqmse_invocation(struct sqmse *m, const char *caller, const char *callee, uint64_t calls)
{
	bool caller_block, callee_block, found;
	size_t s = method_of(m, caller, &caller_block), c = method_of(m, callee, &callee_block), *v;
	char key[64];

	if (s == (size_t)-1 || c == (size_t)-1)
		return strstr(caller, ">>") && strstr(callee, ">>") ? -ENOMEM : -EINVAL;
	if (callee_block)
		return 0;	/* value: running a block is no invocation */
	snprintf(key, sizeof(key), "I %zu %zu", s, c);
	if (!(v = index_slot(&m->index, key, &found)))
		return -ENOMEM;
	if (!found) {
		if (room((void **)&m->invocations, m->ninvocations, &m->cap_invocations, sizeof(*m->invocations)))
			return -ENOMEM;
		m->invocations[m->ninvocations] = (struct minvocation){ .sender = s, .callee = c };
		*v = m->ninvocations++;
	}
	m->invocations[*v].calls += calls;
	return 0;
}

/* ===================================================================== */
/* MSE                                                                   */
/* ===================================================================== */

/* A string: in quotes, a quote inside doubled (MSE's STRING is ('...')+). */
static void mse_string(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

/* Ids: the namespace 1, then the classes, the methods, the invocations in order. */
#define CLASS_ID(i) (2 + (i))
#define METHOD_ID(m, i) (2 + (m)->nclasses + (i))
#define INVOCATION_ID(m, i) (2 + (m)->nclasses + (m)->nmethods + (i))

static void write_entities(struct sqmse *m, FILE *f)
{
	fprintf(f, "(\n(FAMIX.Namespace (id: 1) (name 'Smalltalk'))");
	for (size_t i = 0; i < m->nclasses; i++) {
		fprintf(f, "\n(FAMIX.Class (id: %zu) (name ", CLASS_ID(i));
		mse_string(f, m->classes[i].name);
		fprintf(f, ") (container (ref: 1)))");
	}
	for (size_t i = 0; i < m->nmethods; i++) {
		const struct mmethod *me = &m->methods[i];
		fprintf(f, "\n(FAMIX.Method (id: %zu) (name ", METHOD_ID(m, i));
		mse_string(f, me->selector);
		fprintf(f, ") (signature ");
		mse_string(f, me->selector);
		fprintf(f, ")%s (parentType (ref: %zu)))", me->class_side ? " (hasClassScope true)" : "", CLASS_ID(me->cls));
	}
	for (size_t i = 0; i < m->ninvocations; i++) {
		const struct minvocation *in = &m->invocations[i];
		fprintf(f, "\n(FAMIX.Invocation (id: %zu) (sender (ref: %zu)) (candidates (ref: %zu)) (signature ",
			INVOCATION_ID(m, i), METHOD_ID(m, in->sender), METHOD_ID(m, in->callee));
		mse_string(f, m->methods[in->callee].selector);
		fprintf(f, "))");
	}
}

/* The counts, as comments on the methods and invocations they belong to. */
static void write_counts(struct sqmse *m, FILE *f)
{
	for (size_t i = 0; i < m->nmethods; i++) {
		const struct mmethod *me = &m->methods[i];
		fprintf(f, "\n(FAMIX.Comment (content 'sqcalls: %llu calls, %.3f ms in all, %.3f ms in itself') "
			"(container (ref: %zu)))", (unsigned long long)me->calls, me->total_ns / 1e6, me->self_ns / 1e6,
			METHOD_ID(m, i));
	}
	for (size_t i = 0; i < m->ninvocations; i++)
		fprintf(f, "\n(FAMIX.Comment (content 'sqcalls: %llu calls') (container (ref: %zu)))",
			(unsigned long long)m->invocations[i].calls, INVOCATION_ID(m, i));
	fprintf(f, ")\n");
}

int sqmse_write(struct sqmse *m, FILE *f, const char *title)
{
	fputc('"', f);
	for (const char *s = title; *s; s++)
		fputc(*s == '"' ? '\'' : *s, f);	/* a comment ends at the next double quote */
	fprintf(f, "\"\n");
	write_entities(m, f);
	write_counts(m, f);
	return ferror(f) ? -EIO : 0;
}

void sqmse_free(struct sqmse *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->index.cap; i++)
		free(m->index.keys[i]);
	free(m->index.keys);
	free(m->index.vals);
	for (size_t i = 0; i < m->nclasses; i++)
		free(m->classes[i].name);
	for (size_t i = 0; i < m->nmethods; i++)
		free(m->methods[i].selector);
	free(m->classes);
	free(m->methods);
	free(m->invocations);
	free(m);
}

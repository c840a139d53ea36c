// SPDX-License-Identifier: BSD-2-Clause
/* sqmse.c - traced calls as a FAMIX 3 model in MSE; see sqmse.h. */
#define _GNU_SOURCE
#include "sqmse.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sqintern.h"

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

/* A method's key is its printName, at most this many bytes of it (as sqmse's keys have
 * always been cut): two names alike that far are one method. */
#define METHOD_KEY_MAX 1021

/* Each kind numbered by a table of its keys (sqintern.h): a class by its name, a method
 * by its printName, an invocation by "SENDER CALLEE"; methods[i] and invocations[i]
 * belong to key i of theirs. */
struct sqmse {
	struct sq_intern classes, method_keys, invocation_keys;
	struct mmethod *methods;
	struct minvocation *invocations;
	size_t cap_methods, cap_invocations;
};

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
	return sq_intern(&m->classes, name, strlen(name));
}

/* The method a printName names (a block's: its home method's), added if new; *block
 * says whether it was a block. (size_t)-1: out of memory, or not a method's name. */
static size_t method_of(struct sqmse *m, const char *name, bool *block)
{
	const char *sep;
	char klass[512];
	size_t ci, len, known = m->method_keys.n, k;
	bool class_side;

	for (*block = false; !strncmp(name, "[] in ", 6); name += 6)
		*block = true;
	if (!(sep = strstr(name, ">>")) || sep == name || !sep[2] || (len = (size_t)(sep - name)) >= sizeof(klass))
		return (size_t)-1;
	memcpy(klass, name, len);
	klass[len] = 0;
	class_side = len > 6 && !strcmp(klass + len - 6, " class");
	if (class_side)
		klass[len - 6] = 0;
	if ((ci = class_of(m, klass)) == (size_t)-1 ||
	    room((void **)&m->methods, known, &m->cap_methods, sizeof(*m->methods)) ||
	    (k = sq_intern(&m->method_keys, name, strnlen(name, METHOD_KEY_MAX))) == (size_t)-1)
		return (size_t)-1;
	if (k < known)
		return k;
	m->methods[k] = (struct mmethod){ .cls = ci, .selector = strdup(sep + 2), .class_side = class_side };
	return m->methods[k].selector ? k : (size_t)-1;
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
	bool caller_block, callee_block;
	size_t s = method_of(m, caller, &caller_block), c = method_of(m, callee, &callee_block), known, k;
	char key[64];

	if (s == (size_t)-1 || c == (size_t)-1)
		return strstr(caller, ">>") && strstr(callee, ">>") ? -ENOMEM : -EINVAL;
	if (callee_block)
		return 0;	/* value: running a block is no invocation */
	known = m->invocation_keys.n;
	snprintf(key, sizeof(key), "%zu %zu", s, c);
	if (room((void **)&m->invocations, known, &m->cap_invocations, sizeof(*m->invocations)) ||
	    (k = sq_intern(&m->invocation_keys, key, strlen(key))) == (size_t)-1)
		return -ENOMEM;
	if (k == known)
		m->invocations[k] = (struct minvocation){ .sender = s, .callee = c };
	m->invocations[k].calls += calls;
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
#define METHOD_ID(m, i) (2 + (m)->classes.n + (i))
#define INVOCATION_ID(m, i) (2 + (m)->classes.n + (m)->method_keys.n + (i))

static void write_entities(struct sqmse *m, FILE *f)
{
	fprintf(f, "(\n(FAMIX.Namespace (id: 1) (name 'Smalltalk'))");
	for (size_t i = 0; i < m->classes.n; i++) {
		fprintf(f, "\n(FAMIX.Class (id: %zu) (name ", CLASS_ID(i));
		mse_string(f, m->classes.names[i]);
		fprintf(f, ") (container (ref: 1)))");
	}
	for (size_t i = 0; i < m->method_keys.n; i++) {
		const struct mmethod *me = &m->methods[i];
		fprintf(f, "\n(FAMIX.Method (id: %zu) (name ", METHOD_ID(m, i));
		mse_string(f, me->selector);
		fprintf(f, ") (signature ");
		mse_string(f, me->selector);
		fprintf(f, ")%s (parentType (ref: %zu)))", me->class_side ? " (hasClassScope true)" : "", CLASS_ID(me->cls));
	}
	for (size_t i = 0; i < m->invocation_keys.n; i++) {
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
	for (size_t i = 0; i < m->method_keys.n; i++) {
		const struct mmethod *me = &m->methods[i];
		fprintf(f, "\n(FAMIX.Comment (content 'sqcalls: %llu calls, %.3f ms in all, %.3f ms in itself') "
			"(container (ref: %zu)))", (unsigned long long)me->calls, me->total_ns / 1e6, me->self_ns / 1e6,
			METHOD_ID(m, i));
	}
	for (size_t i = 0; i < m->invocation_keys.n; i++)
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
	for (size_t i = 0; i < m->method_keys.n; i++)
		free(m->methods[i].selector);
	sq_intern_free(&m->classes);
	sq_intern_free(&m->method_keys);
	sq_intern_free(&m->invocation_keys);
	free(m->methods);
	free(m->invocations);
	free(m);
}

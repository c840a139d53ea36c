// SPDX-License-Identifier: BSD-2-Clause
/* sqmse.h - traced calls as a FAMIX 3 model in MSE, the file format Moose imports
 * (Fame's MSE: http://www.moosetechnology.org/docs/mse): a FAMIX.Namespace 'Smalltalk',
 * a FAMIX.Class per class whose methods ran, a FAMIX.Method per method (class-side ones
 * with hasClassScope true, in their class), a FAMIX.Invocation per calling method and
 * called method (sender, candidates, signature: the selector), and the counts in
 * FAMIX.Comments on the methods and invocations ("sqcalls: 50 calls, ..."): FAMIX has no
 * property for them, and Moose refuses unknown properties. A block belongs to its
 * method, as in Moose's models of Smalltalk: what a block calls, its method calls; a
 * block being run is no invocation. */
#ifndef SQMSE_H
#define SQMSE_H

#include <stdint.h>
#include <stdio.h>

struct sqmse;

struct sqmse *sqmse_new(void);

/* A method that ran: calls returned while traced, inclusive and self time. name is a
 * printName: "Class>>selector", "Class class>>selector", "[] in Class>>selector". Adds
 * to what the same name had. -ENOMEM, or -EINVAL for a name of another shape. */
int sqmse_method(struct sqmse *m, const char *name, uint64_t calls, uint64_t total_ns, uint64_t self_ns);

/* calls calls from method caller to method callee (printNames). Adds up too. */
int sqmse_invocation(struct sqmse *m, const char *caller, const char *callee, uint64_t calls);

/* The model as MSE (UTF-8), after a comment line saying what it is (title). 0, or -EIO. */
int sqmse_write(struct sqmse *m, FILE *f, const char *title);

void sqmse_free(struct sqmse *m);

#endif

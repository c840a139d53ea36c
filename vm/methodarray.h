// SPDX-License-Identifier: BSD-2-Clause
/* methodarray.h - a class's method Array (Class>>methods): one Array per class, made
 * when first asked for, answered every time after; storing a Method into it changes
 * what the class answers to at once, as in SOM. */
#ifndef SQVM_METHODARRAY_H
#define SQVM_METHODARRAY_H

#include "object.h"

/* c's method Array: its Methods and Primitives in the order of the class file, until
 * the program stores into it. Allocates the first time (a young Array; c keeps it). */
Value methodarray_of(ClassInfo *c);

/* Stores v at index k (from 0, in bounds) of a method Array (HDR_METHOD_ARRAY): the
 * class then answers to the Methods the Array holds, and every send cache forgets what
 * it knew. A Method goes only into the class it was compiled in or a subclass (its code
 * reads that class's fields, its primitive expects its instances), a block's method
 * into none: NULL when stored, else why not (nothing stored). Any other object may be
 * stored: it is no method, so the class no longer answers to the one it replaced. */
const char *methodarray_store(Obj *array, size_t k, Value v);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* loader.h - the class path, class loading (from files or the embedded core library) and bootstrap. */
#ifndef SQVM_LOADER_H
#define SQVM_LOADER_H

#include "object.h"

void loader_bootstrap(void);
/* Finds and defines the class called name (System>>load:); NULL if there is none. */
ClassInfo *loader_load_class(const char *name);
/* Adds a class path entry (at the front when first). */
void loader_add_path(const char *dir, bool first);
/* Embedded core library source for a class name, or NULL. */
const char *loader_core_source(const char *name, size_t *len);

/* Nanoseconds spent parsing and compiling classes so far. */
extern uint64_t loader_compile_ns;

#endif

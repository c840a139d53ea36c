// SPDX-License-Identifier: BSD-2-Clause
/* globals.h - the global namespace: name -> value, addressed by a stable index. */
#ifndef SQVM_GLOBALS_H
#define SQVM_GLOBALS_H

#include "common.h"

typedef struct Global {
    Value name;     /* Symbol */
    Value value;
    bool defined;
} Global;

/* The Smalltalk namespace (what "system global: #Name" reads), indexed by
 * globals_index; the VM's own state is VM (object.h). */
extern Global *globals;

/* The index of name's entry, creating an undefined one (compiled code keeps the index). */
uint32_t globals_index(Value name);
void globals_define(Value name, Value value);
bool globals_lookup(Value name, Value *out);
void globals_init(void);

#endif

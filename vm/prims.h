// SPDX-License-Identifier: BSD-2-Clause
/* prims.h - the table of primitives, by class and selector. */
#ifndef SQVM_PRIMS_H
#define SQVM_PRIMS_H

#include "gc.h"
#include "method.h"

typedef struct PrimDef {
    const char *className;   /* "Integer" or "Integer class" for the class side */
    const char *selector;
    PrimFn fn;
} PrimDef;

/* Each prim_*.c file exports its table, ended by a NULL entry. */
extern const PrimDef prims_object[], prims_number[], prims_string[], prims_system[], prims_process[], prims_io[],
    prims_exception[];

/* System primitives keep the program's argument Array. */
void prims_system_init(Value args);
PrimFn prims_find(ClassInfo *holder, Value selector);
/* The C function of a declared primitive that sqvm does not implement. */
PrimResult prim_missing(Value *args, uint32_t nargs);
/* The "primitive" of quick methods (method.h); fails (runs the body) when traced. */
PrimResult prim_quick(Value *args, uint32_t nargs);
/* Applies a quick method to args (receiver, argument); answers the result. */
static inline Value quick_apply(const Method *m, Value *args)
{
    switch (m->quick) {
    case QUICK_FIELD: return as_obj(args[0])->slots[m->quickIndex];
    case QUICK_CONST: return m->quickValue;
    case QUICK_SETTER: {
        Obj *o = as_obj(args[0]);
        o->slots[m->quickIndex] = args[1];
        gc_write_barrier(o, args[1]);
        return args[0];
    }
    default: return args[0];
    }
}
/* Fails the running program with a message naming the primitive and its receiver:
 * signals an Error (prim_fail_as: of the Exception class className) with that text. */
PrimResult prim_fail(Value *args, const char *why);
PrimResult prim_fail_as(Value *args, const char *className, const char *why);

/* Arithmetic shared by the interpreter's fast paths and the primitives. */
bool num_binop(int op, Value a, Value b, Value *out);
enum { NUM_ADD, NUM_SUB, NUM_MUL, NUM_DIV, NUM_MOD, NUM_LT, NUM_GT, NUM_LE, NUM_GE, NUM_EQ, NUM_NE,
       NUM_AND, NUM_FDIV, NUM_REM, NUM_OR, NUM_XOR };

#endif

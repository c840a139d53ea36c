// SPDX-License-Identifier: BSD-2-Clause
/* symbol.h - interned symbols: permanent byte objects, so their bytes never move. */
#ifndef SQVM_SYMBOL_H
#define SQVM_SYMBOL_H

#include "object.h"

Value sym_intern(const char *bytes, size_t len);
Value sym_intern_cstr(const char *s);
static inline const char *sym_cstr(Value sym) { return str_bytes(sym); }
/* Arity of a selector: keyword parts, 1 for binary, 0 for unary. */
int sym_num_args(Value sym);

/* Selectors the VM sends by itself, interned once at start-up (sym_init):
 * SYM.plus is the Symbol #+. */
typedef struct WellKnownSymbols {
    Value doesNotUnderstand, escapedBlock, unknownGlobal, initialize;
    Value plus, minus, times, lt, gt, le, ge, eq, ne, mod, div, fdiv, sqrt, bitAnd, logicalAnd, logicalOr,
          at, atPut;
} WellKnownSymbols;
extern WellKnownSymbols SYM;
void sym_init(void);

#endif

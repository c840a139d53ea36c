// SPDX-License-Identifier: BSD-2-Clause
/* largeint.h - large Integer objects on the heap, and the bridge to bigint.c's arithmetic. */
#ifndef SQVM_LARGEINT_H
#define SQVM_LARGEINT_H

#include "bigint.h"
#include "object.h"

/* Heap layout (format FMT_WORDS, class Integer): slots[0] = digit count << 1 | negative,
 * then the 32-bit digits, little-endian, two per word. */

Value largeint_parse_perm(const char *s, size_t len);     /* decimal, optional '-' */
Value largeint_parse(const char *s, size_t len, int base, bool *ok);
/* Any integer Value (small or large) into b (b must be initialised). */
void largeint_to_big(Value v, BigInt *b);
/* The Value for b: a small integer when it fits. Frees nothing. */
Value largeint_from_big(const BigInt *b);
Value largeint_from_i64(int64_t v);
Value largeint_from_u64(uint64_t v);
bool is_integer(Value v);

#endif

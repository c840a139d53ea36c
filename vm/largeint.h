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
/* Any integer Value (small or large) read in place as a BigInt operand (big_view):
 * nothing is copied. small holds a small integer's digits and must outlive b; a large
 * one's digits are read from the heap, so b is valid until the next allocation. */
void largeint_view(Value v, BigInt *b, uint32_t small[2]);
/* The Value for b: a small integer when it fits. Frees nothing. */
Value largeint_from_big(const BigInt *b);
Value largeint_from_i64(int64_t v);
bool is_integer(Value v);

/* Before computing a result of at most `digits` digits (or a String of at most `chars`
 * characters): one that could not fit the --heap limit is the out-of-memory error, with
 * its backtrace, before any work or allocation. */
void largeint_check_digits(size_t digits);
void largeint_check_chars(size_t chars);
/* After a long operation (bigint.c stops when interrupted): if an interrupt is
 * pending, free r (when not NULL) and end the program as interrupt_raise does, naming `what`. */
void largeint_check_interrupt(BigInt *r, const char *what);

#endif

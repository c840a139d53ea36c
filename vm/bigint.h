// SPDX-License-Identifier: BSD-2-Clause
/* bigint.h - arbitrary-precision integers for sqvm's large Integer objects. */
#ifndef SQVM_BIGINT_H
#define SQVM_BIGINT_H

#include <signal.h>
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

/* Conventions:
   - Every BigInt passed as a result must have been initialized (big_init or any
     earlier big_* result); its old buffer is reused or freed.
   - Result parameters may alias inputs (big_add(&a, &a, &b) works).
   - Results are normalized: no leading zero digits; sign 0 iff the value is zero.
   - Allocation failure prints a message on stderr and calls abort(); an embedder that
     must fail cleanly checks a result's size before asking (the VM checks it against
     the heap limit: the sizes of sums, products, shifts and strings are known first).
   - Stopping: multiplication, division, square roots, comparison, printing and parsing
     poll *big_stop (when set) inside their loops. Once it is non-zero they return
     early with every result zero (big_to_string answers NULL, big_from_string false);
     the caller tests the flag afterwards. A flag set by a signal handler (Ctrl-C) or a
     timer thus ends a product of a billion digits within milliseconds. */
typedef struct BigInt {
    int sign;            /* -1, 0 or +1; zero has sign 0 and len 0 */
    size_t len;          /* number of 32-bit digits in use (no leading zero digits) */
    size_t cap;
    uint32_t *d;         /* little-endian base-2^32 magnitude */
} BigInt;

extern const volatile sig_atomic_t *big_stop;
#ifdef SQVM_FUZZ
/* Fuzz builds: called at every poll before *big_stop is read, with about how many digit
   operations were done since the last one, so that a budget counted in work stops an
   operation at the same place on every machine. */
extern void (*big_fuzz_poll)(size_t work);
#endif
extern size_t big_karatsuba_cutoff;       /* digits; the tests and --crossover change it */

void big_init(BigInt *b);                 /* zero, no allocation */
void big_free(BigInt *b);                 /* releases the buffer; b is zero afterwards */
/* A read-only BigInt over digits someone else owns (leading zero digits are not
   counted): an operand only, never a result, and never freed. Reading a heap large
   integer this way copies nothing. */
void big_view(BigInt *b, int sign, const uint32_t *digits, size_t len);
void big_from_i64(BigInt *b, int64_t v);
bool big_fits_i64(const BigInt *b);       /* true if value is in [INT64_MIN, INT64_MAX] */
int64_t big_to_i64(const BigInt *b);      /* only valid if big_fits_i64 */
bool big_fits_range(const BigInt *b, int64_t lo, int64_t hi); /* lo <= value <= hi */
void big_from_double(BigInt *b, double d);/* truncates toward zero; d finite (NaN/inf give 0) */
double big_to_double(const BigInt *b);    /* nearest (ties to even), may be +-inf */
void big_copy(BigInt *dst, const BigInt *src);
int big_cmp(const BigInt *a, const BigInt *b);  /* -1, 0, 1 */
void big_add(BigInt *r, const BigInt *a, const BigInt *b);
void big_sub(BigInt *r, const BigInt *a, const BigInt *b);
void big_mul(BigInt *r, const BigInt *a, const BigInt *b);   /* Karatsuba from big_karatsuba_cutoff digits */
/* Division: b != 0 (caller checks; a zero divisor aborts). floor: quotient rounds toward
   -inf, remainder has the sign of b (Smalltalk // and \\ ; SOM "/" and "%").
   trunc: quotient rounds toward zero, remainder has the sign of a (SOM rem:).
   q or r may be NULL; q and r must not be the same object. */
void big_divmod_floor(BigInt *q, BigInt *r, const BigInt *a, const BigInt *b);
void big_divmod_trunc(BigInt *q, BigInt *r, const BigInt *a, const BigInt *b);
/* Bitwise ops with infinite two's-complement semantics (like Python ints): */
void big_and(BigInt *r, const BigInt *a, const BigInt *b);
void big_or(BigInt *r, const BigInt *a, const BigInt *b);
void big_xor(BigInt *r, const BigInt *a, const BigInt *b);
void big_shl(BigInt *r, const BigInt *a, size_t bits);
void big_shr(BigInt *r, const BigInt *a, size_t bits);   /* arithmetic: floor(a / 2^bits) */
void big_neg(BigInt *r, const BigInt *a);
void big_abs(BigInt *r, const BigInt *a);
void big_sqrt_floor(BigInt *r, const BigInt *a);  /* a >= 0 (negative a gives 0) */
double big_sqrt_double(const BigInt *a);          /* correctly rounded sqrt, any size
                                                     (+inf beyond double range; NaN if a < 0) */
size_t big_bit_length(const BigInt *a);           /* of the magnitude; 0 for zero */
/* Text: returns a malloc'd NUL-terminated string, '-' prefix for negatives, base 2..36,
   uppercase letters like Smalltalk (255 printString: 16 -> 'FF'). NULL if base is invalid. */
char *big_to_string(const BigInt *a, int base);
/* An upper bound on strlen(big_to_string(a, base)), known before printing (0 if base
   is invalid). */
size_t big_string_length(const BigInt *a, int base);
/* Parse an optional '-' then digits in base 2..36 (letters either case); returns false
   (b left zero) on any invalid char, empty digits or invalid base. */
bool big_from_string(BigInt *b, const char *s, size_t len, int base);
uint64_t big_hash(const BigInt *a);               /* equal values hash equal */
/* Raw serialization for the VM's heap objects: number of 32-bit digits plus sign.
   Normalizes: leading zero digits dropped; sign < 0 means negative, otherwise positive
   (the result is zero, sign 0, when all digits are zero). digits may be NULL if len is 0. */
void big_from_digits(BigInt *b, int sign, const uint32_t *digits, size_t len);

#endif

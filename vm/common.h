// SPDX-License-Identifier: BSD-2-Clause
/* common.h - the value representation and the debug switches every VM file shares. */
#ifndef SQVM_COMMON_H
#define SQVM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SQVM_VERSION "0.1.0"

/* ---- Debug switches (default off; the Makefile turns them on per build) ---- */

/* SQVM_DEBUG: assertions and the switch-based dispatch loop. */
#ifdef SQVM_DEBUG
#include <assert.h>
#define ASSERT(c) assert(c)
#else
#define ASSERT(c) ((void)0)
#endif

/* Computed goto is the default; debug builds use the portable switch. */
#if defined(__GNUC__) && !defined(SQVM_DEBUG) && !defined(SQVM_SWITCH_DISPATCH)
#define SQVM_COMPUTED_GOTO 1
#else
#define SQVM_COMPUTED_GOTO 0
#endif

/* SQVM_GC_STRESS: collect at every safe point (see gc.c). */
/* SQVM_OPCODE_STATS: count dispatched opcode pairs (see interp.c, tests/bench/pairs.sh). */

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NORETURN __attribute__((noreturn))

/* ---- Values ----
 * A Value is one machine word; its low two bits are its tag:
 *   ..1  a small integer (63-bit, two's complement, shifted left once)
 *   .10  an immediate Double (see "Immediate Doubles" below)
 *   .00  a pointer to a heap object (objects are 8-byte aligned)
 * An aligned C pointer with bit 0 set also reads as a small integer, so the VM
 * can keep raw pointers (methods, frames) in object slots without the
 * collector following them. */
typedef uintptr_t Value;

#define SMALLINT_MAX ((int64_t)(INT64_MAX >> 1))
#define SMALLINT_MIN ((int64_t)(INT64_MIN >> 1))
#define VALUE_TAG_MASK 3u
#define FLOAT_TAG 2u

static inline bool is_int(Value v) { return (v & 1) != 0; }
static inline bool is_float(Value v) { return (v & VALUE_TAG_MASK) == FLOAT_TAG; }
/* A heap object (or 0, which no live slot holds): the only Values the collector follows. */
static inline bool is_ptr(Value v) { return (v & VALUE_TAG_MASK) == 0; }
static inline int64_t int_val(Value v) { return (int64_t)v >> 1; }
static inline Value int_value(int64_t i) { return ((Value)i << 1) | 1; }
static inline bool int_fits(int64_t i) { return i >= SMALLINT_MIN && i <= SMALLINT_MAX; }

/* SOM's Integer>>%: the modulo, with the divisor's sign (C's % takes the dividend's,
 * which is rem:). y != 0. (Integer>>/ truncates, as C's / does.) */
static inline int64_t int_floor_mod(int64_t x, int64_t y)
{
    int64_t r = x % y;
    return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;
}

/* Raw, aligned C pointers disguised as small integers. */
static inline Value ptr_value(const void *p) { return (Value)p | 1; }
static inline void *value_ptr(Value v) { return (void *)(v & ~(Value)1); }

/* ---- Immediate Doubles ----
 * As 64-bit Spur's SmallFloat64: a Double whose biased IEEE exponent lies in
 * 768..1279 (magnitudes from about 1.7e-77 to 2.3e77) lives in the Value
 * itself, so float arithmetic allocates nothing; the others (zero, denormals,
 * huge values, infinities, NaNs) are boxed in a heap object of class Double
 * (+0.0 and -0.0 in two permanent boxes, so they never allocate either).
 * Encoding: add 256 to the exponent field (1 << 60), which makes its top two
 * bits (61-62) exactly 10 for the exponents in range, then rotate left by
 * three: those two bits land in bits 0-1, where 10 is the tag, and the sign in
 * bit 2. So the encoder's range check is the tag test itself, and decoding is
 * two instructions (ror, sub). The mapping is exact both ways
 * (tests/unit/float_test.c). docs/ARCHITECTURE.md has the numbers behind the
 * choice. */
#define FLOAT_BIAS ((uint64_t)1 << 60)

static inline bool float_encode(double d, Value *out)
{
    uint64_t bits;
    memcpy(&bits, &d, 8);
    uint64_t t = bits + FLOAT_BIAS;
    Value v = (t << 3) | (t >> 61);
    if (UNLIKELY((v & VALUE_TAG_MASK) != FLOAT_TAG)) return false;
    *out = v;
    return true;
}


static inline double float_val(Value v)
{
    uint64_t bits = ((v >> 3) | (v << 61)) - FLOAT_BIAS;
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

/* ---- Counters for outside readers ----
 * Activations, allocations, process switches, ...: probes/debug_offsets.h's
 * SqVMCounters, which sqstat reads from the process's memory. Each is one
 * increment where the event happens anyway (the activation count is the frame
 * serial), so counting costs next to nothing and attaching costs nothing. */
#include "debug_offsets.h"
extern SqVMCounters vm_counters;

#endif

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

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NORETURN __attribute__((noreturn))

/* ---- Values ----
 * A Value is one machine word. Bit 0 set: a small integer (63-bit, two's
 * complement, shifted left once). Bit 0 clear: a pointer to a heap object
 * (objects are 8-byte aligned). An aligned C pointer with bit 0 set also reads
 * as a small integer, so the VM can keep raw pointers (methods, frames) in
 * object slots without the collector following them. */
typedef uintptr_t Value;

#define SMALLINT_MAX ((int64_t)(INT64_MAX >> 1))
#define SMALLINT_MIN ((int64_t)(INT64_MIN >> 1))

static inline bool is_int(Value v) { return (v & 1) != 0; }
static inline int64_t int_val(Value v) { return (int64_t)v >> 1; }
static inline Value int_value(int64_t i) { return ((Value)i << 1) | 1; }
static inline bool int_fits(int64_t i) { return i >= SMALLINT_MIN && i <= SMALLINT_MAX; }

/* Raw, aligned C pointers disguised as small integers. */
static inline Value ptr_value(const void *p) { return (Value)p | 1; }
static inline void *value_ptr(Value v) { return (void *)(v & ~(Value)1); }

#endif

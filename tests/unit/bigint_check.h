// SPDX-License-Identifier: BSD-2-Clause
/* bigint_check.h - what the bigint unit test files share: the check counters and
 * reporters (bigint_test.c), the random source, the reference product, and the tests
 * of bigint_scale_test.c. */
#ifndef BIGINT_CHECK_H
#define BIGINT_CHECK_H

#include "bigint.h"

extern int n_pass, n_fail;
void report(bool ok, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool valid(const BigInt *x);   /* normalized: no leading zero digit, sign 0 iff zero */
void check_eq_(int line, const BigInt *x, const BigInt *y, const char *what);
#define CHECK(c, ...) report((c), __LINE__, __VA_ARGS__)
#define CHECK_EQ(x, y, what) check_eq_(__LINE__, (x), (y), (what))

uint64_t xorshift(void);       /* fixed seed: every run checks the same values */
/* Independent reference multiplication (plain schoolbook on the public digit arrays). */
void ref_mul(BigInt *r, const BigInt *a, const BigInt *b);

/* bigint_scale_test.c */
void test_karatsuba(void);
void test_mul_against_schoolbook(void);
void test_bitops_reference(void);
void test_string_length(void);
void test_views(void);
void test_stop(void);
int bigint_crossover(void);    /* --crossover: CPU time of schoolbook and Karatsuba */

#endif

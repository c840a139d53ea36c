// SPDX-License-Identifier: BSD-2-Clause
/* bigint_scale_test.c - bigint.c on operands of thousands to millions of digits:
 * Karatsuba against the reference and the library's own schoolbook product, bitwise
 * operations against a two's-complement reference, the printed length known in
 * advance, operands read in place (big_view), stopping inside the long loops (big_stop),
 * and --crossover, the measurement behind big_karatsuba_cutoff. */
#include "bigint_check.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static const BigInt *I_one(void)
{
    static BigInt one;
    big_from_i64(&one, 1);
    return &one;
}

/* n random digits, the top one non-zero; the low `zeros` digits zero when asked. */
static void rand_digits(BigInt *b, size_t n, size_t zeros, int sign)
{
    uint32_t *d = malloc((n ? n : 1) * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = i < zeros ? 0 : (uint32_t)xorshift();
    if (n)
        d[n - 1] |= 1u << 31;
    big_from_digits(b, sign, d, n);
    free(d);
}

void ref_mul(BigInt *r, const BigInt *a, const BigInt *b)
{
    size_t n = a->len + b->len;
    uint32_t *t = calloc(n ? n : 1, sizeof *t);
    for (size_t i = 0; i < a->len; i++) {
        uint64_t c = 0;
        for (size_t j = 0; j < b->len; j++) {
            c += (uint64_t)a->d[i] * b->d[j] + t[i + j];
            t[i + j] = (uint32_t)c;
            c >>= 32;
        }
        t[i + b->len] = (uint32_t)c;
    }
    big_from_digits(r, a->sign * b->sign < 0 ? -1 : 1, t, n);
    free(t);
}

void test_karatsuba(void)
{
    static const size_t sizes[][2] = {{40, 40}, {41, 40}, {80, 79}, {100, 45}, {300, 41}, {300, 150},
                                      {257, 256}, {500, 500}, {1000, 3}, {81, 40}, {79, 40}, {600, 250}};
    BigInt a, b, r, e;
    big_init(&a);
    big_init(&b);
    big_init(&r);
    big_init(&e);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (int rep = 0; rep < 3; rep++) {
            uint32_t *da = malloc(sizes[i][0] * sizeof *da);
            for (size_t k = 0; k < sizes[i][0]; k++)     /* rep 2: all ones, worst-case carries */
                da[k] = rep == 2 ? 0xFFFFFFFFu : (k % 5 == 1 ? 0 : (uint32_t)xorshift());
            da[sizes[i][0] - 1] |= 1;
            big_from_digits(&a, 1, da, sizes[i][0]);
            free(da);
            uint32_t *dg = malloc(sizes[i][1] * sizeof *dg);
            for (size_t k = 0; k < sizes[i][1]; k++)
                dg[k] = rep == 2 ? 0xFFFFFFFFu : (uint32_t)xorshift();
            dg[sizes[i][1] - 1] |= 1;
            big_from_digits(&b, rep == 1 ? -1 : 1, dg, sizes[i][1]);
            free(dg);
            big_mul(&r, &a, &b);
            ref_mul(&e, &a, &b);
            char what[64];
            snprintf(what, sizeof what, "mul %zux%zu digits (rep %d)", a.len, b.len, rep);
            CHECK_EQ(&r, &e, what);
            big_mul(&r, &b, &a);
            CHECK_EQ(&r, &e, what);
            /* and division undoes it */
            BigInt q, m;
            big_init(&q);
            big_init(&m);
            big_divmod_floor(&q, &m, &e, &b);
            CHECK_EQ(&q, &a, "(a*b) // b == a");
            CHECK(m.sign == 0, "(a*b) \\\\ b == 0");
            big_free(&q);
            big_free(&m);
        }
    }
    /* squaring of an all-ones number: (2^(32n)-1)^2 */
    for (size_t n = 38; n <= 130; n += 23) {
        uint32_t *dg = malloc(n * sizeof *dg);
        for (size_t k = 0; k < n; k++)
            dg[k] = 0xFFFFFFFFu;
        big_from_digits(&a, 1, dg, n);
        free(dg);
        big_mul(&r, &a, &a);
        ref_mul(&e, &a, &a);
        CHECK_EQ(&r, &e, "all-ones square");
    }
    big_free(&a);
    big_free(&b);
    big_free(&r);
    big_free(&e);
}


/* Karatsuba (every cutoff from 4 digits up, so that deep recursions and odd splits
   happen at sizes the reference can check) against the library's schoolbook product
   (cutoff past any size) and the independent reference, balanced and unbalanced, with
   low zero digits (which big_mul skips). */
void test_mul_against_schoolbook(void)
{
    static const size_t sizes[][3] = {{4, 4, 0}, {7, 5, 0}, {33, 17, 0}, {64, 64, 0}, {65, 63, 3},
                                      {200, 7, 0}, {255, 128, 1}, {700, 650, 0}, {1024, 1024, 0},
                                      {1500, 701, 40}, {2048, 1000, 0}, {3001, 2999, 0}};
    static const size_t cutoffs[] = {4, 5, 8, 16, 40, 100};
    BigInt a, b, school, ref, r;
    big_init(&a);
    big_init(&b);
    big_init(&school);
    big_init(&ref);
    big_init(&r);
    size_t saved = big_karatsuba_cutoff;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        rand_digits(&a, sizes[i][0], sizes[i][2], 1);
        rand_digits(&b, sizes[i][1], sizes[i][2] / 2, i & 1 ? -1 : 1);
        big_karatsuba_cutoff = SIZE_MAX;
        big_mul(&school, &a, &b);
        ref_mul(&ref, &a, &b);
        CHECK_EQ(&school, &ref, "schoolbook product equals the reference");
        for (size_t c = 0; c < sizeof cutoffs / sizeof cutoffs[0]; c++) {
            big_karatsuba_cutoff = cutoffs[c];
            big_mul(&r, &a, &b);
            char what[80];
            snprintf(what, sizeof what, "Karatsuba %zux%zu digits, cutoff %zu", a.len, b.len, cutoffs[c]);
            CHECK_EQ(&r, &school, what);
            big_mul(&r, &b, &a);
            CHECK_EQ(&r, &school, what);
        }
        big_karatsuba_cutoff = saved;
        big_mul(&r, &a, &a);                 /* squaring (both operands alike) */
        ref_mul(&ref, &a, &a);
        CHECK_EQ(&r, &ref, "Karatsuba square");
    }
    /* powers of two: 2^k * 2^m by skipping the zero digits is 2^(k+m) */
    big_shl(&a, I_one(), 100000);
    big_shl(&b, I_one(), 70001);
    big_mul(&r, &a, &b);
    big_shl(&ref, I_one(), 170001);
    CHECK_EQ(&r, &ref, "2^100000 * 2^70001");
    big_free(&a);
    big_free(&b);
    big_free(&school);
    big_free(&ref);
    big_free(&r);
}

/* The operand as an explicit n-digit two's complement array (the way bigint.c did it
   before it read the operands in place). */
static uint32_t *twos(const BigInt *a, size_t n)
{
    uint32_t *t = calloc(n, sizeof *t);
    if (a->len)
        memcpy(t, a->d, a->len * sizeof *t);
    if (a->sign < 0) {
        uint64_t c = 1;
        for (size_t i = 0; i < n; i++) {
            c += (uint32_t)~t[i];
            t[i] = (uint32_t)c;
            c >>= 32;
        }
    }
    return t;
}

static void ref_bitop(BigInt *r, const BigInt *a, const BigInt *b, char op)
{
    size_t n = (a->len > b->len ? a->len : b->len) + 1;
    uint32_t *x = twos(a, n), *y = twos(b, n);
    for (size_t i = 0; i < n; i++)
        x[i] = op == '&' ? x[i] & y[i] : op == '|' ? x[i] | y[i] : x[i] ^ y[i];
    int sign = x[n - 1] >> 31 ? -1 : 1;
    if (sign < 0) {                          /* the magnitude of a negative result: ~x + 1 */
        uint64_t c = 1;
        for (size_t i = 0; i < n; i++) {
            c += (uint32_t)~x[i];
            x[i] = (uint32_t)c;
            c >>= 32;
        }
    }
    big_from_digits(r, sign, x, n);
    free(x);
    free(y);
}

/* and, or, xor of every sign combination and very different lengths. */
void test_bitops_reference(void)
{
    static const size_t lens[][2] = {{0, 3}, {1, 1}, {2, 9}, {9, 2}, {40, 1}, {1, 40}, {17, 17}, {300, 5}};
    BigInt a, b, r, e;
    big_init(&a);
    big_init(&b);
    big_init(&r);
    big_init(&e);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        for (int signs = 0; signs < 4; signs++)
            for (int rep = 0; rep < 4; rep++) {
                rand_digits(&a, lens[i][0], rep == 3 ? lens[i][0] / 2 : 0, signs & 1 ? -1 : 1);
                rand_digits(&b, lens[i][1], 0, signs & 2 ? -1 : 1);
                static const char ops[] = "&|^";
                for (int o = 0; o < 3; o++) {
                    if (ops[o] == '&')
                        big_and(&r, &a, &b);
                    else if (ops[o] == '|')
                        big_or(&r, &a, &b);
                    else
                        big_xor(&r, &a, &b);
                    ref_bitop(&e, &a, &b, ops[o]);
                    char what[80];
                    snprintf(what, sizeof what, "%c of %s%zu and %s%zu digits", ops[o], a.sign < 0 ? "-" : "",
                             a.len, b.sign < 0 ? "-" : "", b.len);
                    CHECK_EQ(&r, &e, what);
                }
            }
    big_free(&a);
    big_free(&b);
    big_free(&r);
    big_free(&e);
}

/* big_string_length bounds the printed length from above, and closely (the VM checks
   the String against the heap with it before printing). */
void test_string_length(void)
{
    BigInt a;
    big_init(&a);
    for (int it = 0; it < 400; it++) {
        size_t n = (size_t)(xorshift() % 40);
        rand_digits(&a, n, 0, it & 1 ? -1 : 1);
        if (it % 7 == 0)                     /* exact powers: the most digits for their bits */
            big_shl(&a, I_one(), (size_t)(xorshift() % 1000));
        int base = 2 + it % 35;
        char *s = big_to_string(&a, base);
        size_t len = strlen(s), bound = big_string_length(&a, base);
        CHECK(len <= bound && bound <= len + 3, "string length bound %zu for %zu characters in base %d", bound, len,
              base);
        free(s);
    }
    CHECK(big_string_length(&a, 1) == 0 && big_string_length(&a, 37) == 0, "no length for an invalid base");
    big_free(&a);
}

/* A view reads digits in place: leading zero digits are not counted, arithmetic on it
   equals arithmetic on a copy, and freeing it frees nothing. */
void test_views(void)
{
    uint32_t digits[6] = {7, 0, 0xFFFFFFFFu, 3, 0, 0};
    BigInt v, c, r, e;
    big_view(&v, -1, digits, 6);
    CHECK(v.len == 4 && v.sign == -1 && v.d == digits && v.cap == 0, "view of 6 digits, two of them leading zeros");
    big_init(&c);
    big_init(&r);
    big_init(&e);
    big_from_digits(&c, -1, digits, 6);
    big_mul(&r, &v, &v);
    big_mul(&e, &c, &c);
    CHECK_EQ(&r, &e, "view squared");
    big_divmod_floor(&r, NULL, &v, I_one());
    CHECK_EQ(&r, &c, "view // 1");
    big_and(&r, &v, &v);
    CHECK_EQ(&r, &c, "view & view");
    big_free(&v);
    CHECK(digits[0] == 7 && digits[3] == 3 && v.len == 0, "freeing a view leaves its digits alone");
    big_view(&v, 1, digits + 4, 2);
    CHECK(v.len == 0 && v.sign == 0, "a view of zero digits is zero");
    big_free(&c);
    big_free(&r);
    big_free(&e);
}

/* ---- stopping ---- */

static volatile sig_atomic_t stop_flag;

static void on_alarm(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* Sets the flag from a timer 20 ms into the operation that follows, as Ctrl-C would. */
static void stop_soon(void)
{
    stop_flag = 0;
    struct itimerval it = {{0, 0}, {0, 20000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Each operation below takes seconds to minutes when it runs to the end; a timer sets
   the flag 20 ms in, so a zero result shows that the loop itself noticed and stopped
   (the CPU time each took is printed, not asserted). Then, with the flag clear, the
   same calls give right answers again. */
void test_stop(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    big_stop = &stop_flag;
    BigInt a, b, q, r;
    big_init(&a);
    big_init(&b);
    big_init(&q);
    big_init(&r);
    rand_digits(&a, 400000, 0, 1);
    rand_digits(&b, 200000, 0, -1);
    double t0 = cpu_seconds();

    size_t saved = big_karatsuba_cutoff;
    big_karatsuba_cutoff = SIZE_MAX;         /* schoolbook: 8e10 digit products */
    stop_soon();
    big_mul(&q, &a, &b);
    CHECK(q.sign == 0 && q.len == 0, "schoolbook 400000 x 200000 digits stopped: zero");
    big_karatsuba_cutoff = saved;
    double t1 = cpu_seconds();
    rand_digits(&r, 4000000, 0, 1);          /* Karatsuba, 4M x 4M digits */
    stop_soon();
    big_mul(&q, &r, &r);
    CHECK(q.sign == 0 && q.len == 0, "Karatsuba 4M-digit square stopped: zero");
    double t2 = cpu_seconds();
    stop_soon();
    big_divmod_floor(&q, &r, &a, &b);
    CHECK(q.sign == 0 && r.sign == 0, "division of 400000 by 200000 digits stopped: both zero");
    double t3 = cpu_seconds();
    stop_soon();
    char *s = big_to_string(&a, 10);
    CHECK(s == NULL, "printing 400000 digits stopped: NULL");
    free(s);
    double t4 = cpu_seconds();
    size_t n = 3000000;
    char *text = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        text[i] = (char)('1' + i % 9);
    text[n] = 0;
    stop_soon();
    CHECK(!big_from_string(&q, text, n, 10) && q.sign == 0, "parsing 3M decimal digits stopped: false, zero");
    double t5 = cpu_seconds();
    stop_soon();
    big_sqrt_floor(&q, &a);
    CHECK(q.sign == 0, "square root of 400000 digits stopped: zero");
    double t6 = cpu_seconds();
    printf("stopped 20 ms in: schoolbook %.3f s, Karatsuba %.3f s, division %.3f s, printing %.3f s, "
           "parsing %.3f s, square root %.3f s (CPU)\n", t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5);

    /* flag set beforehand: everything stops at once; cleared: right answers */
    stop_flag = 1;
    big_mul(&q, &a, &a);
    CHECK(q.sign == 0, "product with the flag set: zero");
    CHECK(big_to_string(&b, 16) == NULL, "printing with the flag set: NULL");
    CHECK(!big_from_string(&q, text, 100, 10), "parsing with the flag set: false");
    stop_flag = 0;
    free(text);
    rand_digits(&a, 50, 0, 1);
    rand_digits(&b, 45, 0, 1);
    big_mul(&q, &a, &b);
    ref_mul(&r, &a, &b);
    CHECK_EQ(&q, &r, "with the flag clear again: the right product");
    big_stop = NULL;
    big_free(&a);
    big_free(&b);
    big_free(&q);
    big_free(&r);
}

/* ---- --crossover ---- */

/* CPU seconds per product of two n-digit numbers at the given cutoff, over >= 20 ms. */
static double time_mul_once(const BigInt *a, const BigInt *b, size_t cutoff)
{
    BigInt r;
    big_init(&r);
    size_t saved = big_karatsuba_cutoff;
    big_karatsuba_cutoff = cutoff;
    long reps = 0;
    double t0 = cpu_seconds(), t;
    do {
        for (int i = 0; i < 8; i++)
            big_mul(&r, a, b);
        reps += 8;
    } while ((t = cpu_seconds() - t0) < 0.02);
    big_karatsuba_cutoff = saved;
    big_free(&r);
    return t / (double)reps;
}

/* The two cutoffs timed in turn, 7 times each, keeping each one's fastest: the least
   disturbed by whatever else the machine runs. */
static void time_mul(size_t n, size_t cut1, size_t cut2, double *t1, double *t2)
{
    BigInt a, b;
    big_init(&a);
    big_init(&b);
    rand_digits(&a, n, 0, 1);
    rand_digits(&b, n, 0, 1);
    *t1 = *t2 = 1e9;
    for (int i = 0; i < 7; i++) {
        double x = time_mul_once(&a, &b, cut1), y = time_mul_once(&a, &b, cut2);
        if (x < *t1)
            *t1 = x;
        if (y < *t2)
            *t2 = y;
    }
    big_free(&a);
    big_free(&b);
}

/* One level of Karatsuba (cutoff n: the halves are done by schoolbook) against
   schoolbook, per size: the smallest size where one level wins is the cutoff worth
   having. Then whole products of 2000 digits at other cutoffs against the library's,
   and the whole recursion against schoolbook on large operands. */
int bigint_crossover(void)
{
    static const size_t sizes[] = {8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64, 96, 128, 256};
    printf("%8s %14s %14s %8s\n", "digits", "schoolbook us", "1 level us", "ratio");
    size_t crossover = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double s, k;
        time_mul(sizes[i], SIZE_MAX, sizes[i], &s, &k);
        printf("%8zu %14.3f %14.3f %8.2f\n", sizes[i], s * 1e6, k * 1e6, s / k);
        if (!crossover && k < s)
            crossover = sizes[i];
        if (k >= s)
            crossover = 0;                   /* the first size from which it keeps winning */
    }
    printf("one level of Karatsuba wins from %zu digits (big_karatsuba_cutoff is %zu)\n", crossover,
           big_karatsuba_cutoff);
    static const size_t cutoffs[] = {16, 24, 32, 40, 48, 64};
    printf("%8s %14s %14s %8s   (2000 x 2000 digits, against cutoff %zu)\n", "cutoff", "product us", "at cutoff us",
           "ratio", big_karatsuba_cutoff);
    for (size_t i = 0; i < sizeof cutoffs / sizeof cutoffs[0]; i++) {
        double c, d;
        time_mul(2000, cutoffs[i], big_karatsuba_cutoff, &c, &d);
        printf("%8zu %14.1f %14.1f %8.2f\n", cutoffs[i], c * 1e6, d * 1e6, d / c);
    }
    static const size_t large[] = {1000, 4000, 16000};
    printf("%8s %14s %14s %8s\n", "digits", "schoolbook ms", "Karatsuba ms", "ratio");
    for (size_t i = 0; i < sizeof large / sizeof large[0]; i++) {
        double s, k;
        time_mul(large[i], SIZE_MAX, big_karatsuba_cutoff, &s, &k);
        printf("%8zu %14.3f %14.3f %8.2f\n", large[i], s * 1e3, k * 1e3, s / k);
    }
    return 0;
}

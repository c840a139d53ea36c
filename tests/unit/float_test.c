// SPDX-License-Identifier: BSD-2-Clause
/* float_test.c - the immediate Double encoding (vm/common.h): every Double that
 * float_encode accepts decodes to the same bits, the accepted range is exactly
 * the documented one (biased exponents 768..1279), and the tag never
 * looks like a small integer or a pointer. */
#include "common.h"

#include <math.h>
#include <stdio.h>

static unsigned long checks, failures;

static void check(int ok, const char *what, uint64_t bits)
{
    checks++;
    if (!ok) {
        if (failures++ < 20) printf("FAIL %s: bits %016llx\n", what, (unsigned long long)bits);
    }
}

static void one(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, 8);
    unsigned exp = (unsigned)(bits >> 52) & 0x7ff;
    bool inRange = exp >= 768 && exp <= 1279;
    Value v;
    bool fits = float_encode(d, &v);
    check(fits == inRange, "accepted range", bits);
    if (!fits) return;
    check(is_float(v) && !is_int(v) && !is_ptr(v), "tag", bits);
    double back = float_val(v);
    uint64_t backBits;
    memcpy(&backBits, &back, 8);
    check(backBits == bits, "round trip", bits);
}

int main(void)
{
    /* every exponent, with mantissa and sign patterns at the edges */
    static const uint64_t mantissas[] = {0, 1, 2, 0x8000000000000ull, 0xfffffffffffffull, 0x5555555555555ull};
    for (uint64_t sign = 0; sign < 2; sign++)
        for (uint64_t exp = 0; exp < 2048; exp++)
            for (size_t m = 0; m < sizeof mantissas / sizeof mantissas[0]; m++)
                one(sign << 63 | exp << 52 | mantissas[m]);
    /* a million pseudo-random bit patterns (xorshift) */
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        one(x);
    }
    /* values programs use */
    static const double common[] = {1.0, -1.0, 0.5, 0.1, 3.141592653589793, 1e10, 1e-10, 1e76, 1e-76,
                                    2.718281828459045, 9007199254740993.0, -1e300, 1e-300};
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++) {
        uint64_t b;
        memcpy(&b, &common[i], 8);
        one(b);
    }
    Value v;
    check(!float_encode(INFINITY, &v) && !float_encode(NAN, &v) && !float_encode(5e-324, &v) &&
          !float_encode(0.0, &v) && !float_encode(-0.0, &v), "boxed specials", 0);
    printf("%lu checks, %lu failures\n", checks, failures);
    return failures != 0;
}

// SPDX-License-Identifier: BSD-2-Clause
/* bigint.c - arbitrary-precision signed integers (base 2^32 magnitudes) for sqvm's large Integers. */
#include "bigint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIGIT_BYTES sizeof(uint32_t)

/* Digits; below this schoolbook multiplication wins (measured: build/bigint_test
   --crossover, figures in tests/bench/README.md). A variable so that the tests can
   compare Karatsuba with the library's own schoolbook product at any size. */
size_t big_karatsuba_cutoff = 40;

const volatile sig_atomic_t *big_stop;
#ifdef SQVM_FUZZ
void (*big_fuzz_poll)(size_t work);
#endif

/* Has the embedder asked the long operations to stop? One load when it has not. */
static inline bool stopped(void)
{
    return big_stop && *big_stop;
}

/* The same, polled from a loop that did about `work` digit operations since its last
   poll (fuzz builds count them: a budget that ends at the same place everywhere). */
static inline bool stopping(size_t work)
{
#ifdef SQVM_FUZZ
    if (big_fuzz_poll)
        big_fuzz_poll(work);
#else
    (void)work;
#endif
    return stopped();
}

/* ---------------------------------------------------------------- memory */

/* Last-resort allocation failure: the VM handles OOM elsewhere, so just die loudly. */
static void oom(void)
{
    fputs("sqvm bigint: out of memory\n", stderr);
    abort();
}

static uint32_t *alloc_digits(size_t n)
{
    if (n > SIZE_MAX / DIGIT_BYTES)
        oom();
    uint32_t *p = malloc(n ? n * DIGIT_BYTES : 1);
    if (!p)
        oom();
    return p;
}

/* Grow b's buffer to hold at least n digits (contents preserved). */
static void reserve(BigInt *b, size_t n)
{
    if (n <= b->cap)
        return;
    if (n > SIZE_MAX / DIGIT_BYTES)
        oom();
    uint32_t *p = realloc(b->d, n * DIGIT_BYTES);
    if (!p)
        oom();
    b->d = p;
    b->cap = n;
}

/* Drop leading zero digits and make the sign 0 iff the value is zero. */
static void normalize(BigInt *b)
{
    while (b->len && b->d[b->len - 1] == 0)
        b->len--;
    if (!b->len)
        b->sign = 0;
}

/* Initialize t as a temporary with n zeroed digits in use. */
static void tmp_init(BigInt *t, size_t n)
{
    big_init(t);
    reserve(t, n);
    if (n)
        memset(t->d, 0, n * DIGIT_BYTES);
    t->len = n;
}

/* Hand src's buffer over to dst (freeing dst's old one); src becomes empty.
   This is how every operation writes a result computed in a temporary, so
   results may alias inputs. */
static void move_into(BigInt *dst, BigInt *src)
{
    if (dst == src)
        return;
    if (dst->cap)
        free(dst->d);
    *dst = *src;
    big_init(src);
}

static void set_zero(BigInt *b)
{
    b->len = 0;
    b->sign = 0;
}

/* b = sign * m (sign ignored when m is zero). */
static void set_u64(BigInt *b, uint64_t m, int sign)
{
    reserve(b, 2);
    b->d[0] = (uint32_t)m;
    b->d[1] = (uint32_t)(m >> 32);
    b->len = 2;
    b->sign = sign < 0 ? -1 : 1;
    normalize(b);
}

/* Low 64 bits of the magnitude. */
static uint64_t low_u64(const BigInt *b)
{
    uint64_t m = 0;
    if (b->len > 0)
        m = b->d[0];
    if (b->len > 1)
        m |= (uint64_t)b->d[1] << 32;
    return m;
}

/* Digit i of the magnitude, 0 beyond the top. */
static uint32_t digit_at(const BigInt *b, size_t i)
{
    return i < b->len ? b->d[i] : 0;
}

/* ------------------------------------------------------ raw digit arrays */

/* Compare magnitudes given as normalized digit arrays (no leading zeros). Two equal
   numbers of a billion digits take a while: it polls every 64Ki digits. */
static int mag_cmp(const uint32_t *a, size_t an, const uint32_t *b, size_t bn)
{
    if (an != bn)
        return an < bn ? -1 : 1;
    for (size_t i = an; i-- > 0;) {
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
        if (!(i & 0xFFFF) && stopping(0x10000))
            return 0;
    }
    return 0;
}

/* r[0..rn) += a[0..an) with an <= rn; returns the carry out of r. */
static uint32_t add_to(uint32_t *r, size_t rn, const uint32_t *a, size_t an)
{
    uint64_t c = 0;
    size_t i;
    for (i = 0; i < an; i++) {
        c += (uint64_t)r[i] + a[i];
        r[i] = (uint32_t)c;
        c >>= 32;
    }
    for (; c && i < rn; i++) {
        c += r[i];
        r[i] = (uint32_t)c;
        c >>= 32;
    }
    return (uint32_t)c;
}

/* r[0..rn) -= a[0..an) with an <= rn; returns the borrow (0 when r >= a). */
static uint32_t sub_from(uint32_t *r, size_t rn, const uint32_t *a, size_t an)
{
    uint64_t br = 0;
    size_t i;
    for (i = 0; i < an; i++) {
        uint64_t t = (uint64_t)r[i] - a[i] - br;
        r[i] = (uint32_t)t;
        br = t >> 63;
    }
    for (; br && i < rn; i++) {
        uint64_t t = (uint64_t)r[i] - br;
        r[i] = (uint32_t)t;
        br = t >> 63;
    }
    return (uint32_t)br;
}

/* r[0..n) = a[0..n) << s for s < 32 (r may equal a); returns the bits shifted out. */
static uint32_t shl_digits(uint32_t *r, const uint32_t *a, size_t n, unsigned s)
{
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = a[i];
        r[i] = (x << s) | c;
        c = s ? x >> (32 - s) : 0;
    }
    return c;
}

/* Two's complement negation of an n-digit array in place. */
static void negate_digits(uint32_t *t, size_t n)
{
    uint64_t c = 1;
    for (size_t i = 0; i < n; i++) {
        c += (uint32_t)~t[i];
        t[i] = (uint32_t)c;
        c >>= 32;
    }
}

/* Magnitude += 1 (sign untouched). */
static void mag_inc(BigInt *t)
{
    reserve(t, t->len + 1);
    t->d[t->len] = 0;
    for (size_t i = 0; ++t->d[i] == 0; i++)
        ;
    if (t->d[t->len])
        t->len++;
}

/* Magnitude = magnitude * m + add, for parsing. */
static void mag_mul_add_small(BigInt *t, uint32_t m, uint32_t add)
{
    uint64_t c = add;
    for (size_t i = 0; i < t->len; i++) {
        c += (uint64_t)t->d[i] * m;
        t->d[i] = (uint32_t)c;
        c >>= 32;
    }
    if (c) {
        reserve(t, t->len + 1);
        t->d[t->len++] = (uint32_t)c;
    }
}

/* Divide the n-digit magnitude a in place by d; returns the remainder. Inlined where d
   is a constant (printing in base 10), so the compiler divides by multiplying. */
static inline __attribute__((always_inline)) uint32_t div_small_inplace(uint32_t *a, size_t n, uint32_t d)
{
    uint64_t rem = 0;
    for (size_t i = n; i-- > 0;) {
        rem = rem << 32 | a[i];
        a[i] = (uint32_t)(rem / d);
        rem %= d;
    }
    return (uint32_t)rem;
}

/* ---------------------------------------------------------- multiplication */

static void mag_mul(uint32_t *r, const uint32_t *a, size_t an, const uint32_t *b, size_t bn);

/* Schoolbook product r[0..an+bn) = a*b; quadratic but fastest for small operands. */
static void school_mul(uint32_t *r, const uint32_t *a, size_t an, const uint32_t *b, size_t bn)
{
    memset(r, 0, (an + bn) * DIGIT_BYTES);
    for (size_t i = 0; i < bn; i++) {
        uint64_t bi = b[i], c = 0;
        if (!bi)
            continue;
        if (stopping(an))
            return;
        for (size_t j = 0; j < an; j++) {
            c += bi * a[j] + r[i + j];
            r[i + j] = (uint32_t)c;
            c >>= 32;
        }
        r[i + an] = (uint32_t)c;
    }
}

/* Very unbalanced product: cut a into bn-digit slices so each sub-product is balanced. */
static void mul_unbalanced(uint32_t *r, const uint32_t *a, size_t an, const uint32_t *b, size_t bn)
{
    uint32_t *t = alloc_digits(2 * bn);
    memset(r, 0, (an + bn) * DIGIT_BYTES);
    for (size_t i = 0; i < an; i += bn) {
        size_t k = an - i < bn ? an - i : bn;
        if (k == bn)
            mag_mul(t, a + i, k, b, bn);
        else
            mag_mul(t, b, bn, a + i, k);
        add_to(r + i, an + bn - i, t, k + bn);
    }
    free(t);
}

/* Karatsuba: a*b = z2*B^2h + z1*B^h + z0 with z1 = (a0+a1)(b0+b1) - z0 - z2; needs bn > h. */
static void karatsuba(uint32_t *r, const uint32_t *a, size_t an, const uint32_t *b, size_t bn)
{
    size_t h = (an + 1) / 2, a1n = an - h, b1n = bn - h, zn = 2 * h + 2;
    mag_mul(r, a, h, b, h);                          /* z0 -> r[0..2h) */
    mag_mul(r + 2 * h, a + h, a1n, b + h, b1n);      /* z2 -> r[2h..an+bn) */
    uint32_t *buf = alloc_digits(2 * (h + 1) + zn);
    uint32_t *sa = buf, *sb = buf + h + 1, *z1 = buf + 2 * (h + 1);
    memcpy(sa, a, h * DIGIT_BYTES);
    sa[h] = add_to(sa, h, a + h, a1n);
    memcpy(sb, b, h * DIGIT_BYTES);
    sb[h] = add_to(sb, h, b + h, b1n);
    mag_mul(z1, sa, h + 1, sb, h + 1);
    sub_from(z1, zn, r, 2 * h);
    sub_from(z1, zn, r + 2 * h, an + bn - 2 * h);
    while (zn && !z1[zn - 1])
        zn--;
    add_to(r + h, an + bn - h, z1, zn);
    free(buf);
}

/* r[0..an+bn) = a*b for an >= bn >= 1; r must not overlap a or b. Once asked to
   stop, r is zero (defined digits, so the callers' sums stay well defined). */
static void mag_mul(uint32_t *r, const uint32_t *a, size_t an, const uint32_t *b, size_t bn)
{
    if (stopping(an + bn))
        memset(r, 0, (an + bn) * DIGIT_BYTES);
    else if (bn < big_karatsuba_cutoff || bn < 4)
        school_mul(r, a, an, b, bn);
    else if (bn <= (an + 1) / 2)
        mul_unbalanced(r, a, an, b, bn);
    else
        karatsuba(r, a, an, b, bn);
}

/* ---------------------------------------------------------------- division */

/* Knuth algorithm D (n >= 2 divisor digits): q[0..an-n] = a / b, r = a % b. */
static void knuth_div(uint32_t *q, BigInt *r, const uint32_t *a, size_t an,
                      const uint32_t *b, size_t n)
{
    unsigned s = (unsigned)__builtin_clz(b[n - 1]);
    uint32_t *vn = alloc_digits(n), *un = alloc_digits(an + 1);
    shl_digits(vn, b, n, s);
    un[an] = shl_digits(un, a, an, s);
    /* top two normalized divisor digits, computed from b (same values as vn[n-1], vn[n-2]) */
    uint64_t vtop = (uint32_t)(b[n - 1] << s | (s ? b[n - 2] >> (32 - s) : 0));
    uint64_t vnext = (uint32_t)(b[n - 2] << s | (s && n > 2 ? b[n - 3] >> (32 - s) : 0));
    for (size_t j = an - n + 1; j-- > 0;) {
        if (stopping(n))
            break;               /* q is zero from here down (the caller zeroed it) */
        uint64_t num = (uint64_t)un[j + n] << 32 | un[j + n - 1];
        uint64_t qhat = num / vtop, rhat = num % vtop;
        while (qhat >> 32 || qhat * vnext > (rhat << 32 | un[j + n - 2])) {
            qhat--;
            rhat += vtop;
            if (rhat >> 32)
                break;
        }
        uint64_t carry = 0, borrow = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t p = qhat * vn[i] + carry;
            carry = p >> 32;
            uint64_t t = (uint64_t)un[i + j] - (uint32_t)p - borrow;
            un[i + j] = (uint32_t)t;
            borrow = t >> 63;
        }
        uint64_t t = (uint64_t)un[j + n] - carry - borrow;
        un[j + n] = (uint32_t)t;
        if (t >> 63) {                     /* qhat was one too large: add back */
            qhat--;
            un[j + n] += add_to(un + j, n, vn, n);
        }
        q[j] = (uint32_t)qhat;
    }
    tmp_init(r, n);
    for (size_t i = 0; i < n; i++)
        r->d[i] = (un[i] >> s) | (s ? un[i + 1] << (32 - s) : 0);
    r->sign = 1;
    normalize(r);
    free(vn);
    free(un);
}

/* Magnitude division into fresh q, r (both >= 0): q = |a| / |b|, r = |a| % |b|. */
static void mag_divmod(BigInt *q, BigInt *r, const BigInt *a, const BigInt *b)
{
    big_init(q);
    big_init(r);
    if (b->len == 0) {
        fputs("sqvm bigint: division by zero\n", stderr);
        abort();
    }
    if (mag_cmp(a->d, a->len, b->d, b->len) < 0) {
        big_abs(r, a);
        return;
    }
    tmp_init(q, a->len - b->len + 1);
    if (b->len == 1) {
        memcpy(q->d, a->d, a->len * DIGIT_BYTES);
        set_u64(r, div_small_inplace(q->d, a->len, b->d[0]), 1);
    } else {
        knuth_div(q->d, r, a->d, a->len, b->d, b->len);
    }
    q->sign = 1;
    normalize(q);
}

/* Write a finished temporary to an optional result slot. */
static void store(BigInt *dst, BigInt *src)
{
    if (dst)
        move_into(dst, src);
    else
        big_free(src);
}

/* Truncating division: quotient toward zero, remainder takes a's sign. */
void big_divmod_trunc(BigInt *q, BigInt *r, const BigInt *a, const BigInt *b)
{
    int as = a->sign, bs = b->sign;
    BigInt tq, tr;
    mag_divmod(&tq, &tr, a, b);
    if (tq.len)
        tq.sign = as * bs;
    if (tr.len)
        tr.sign = as;
    if (stopped()) {
        set_zero(&tq);
        set_zero(&tr);
    }
    store(q, &tq);
    store(r, &tr);
}

/* Floor division: like trunc, but when signs differ and r != 0 the quotient moves one
   further from zero (|q| + 1) and the remainder becomes b - r (magnitude |b| - |r|). */
void big_divmod_floor(BigInt *q, BigInt *r, const BigInt *a, const BigInt *b)
{
    int as = a->sign, bs = b->sign;
    BigInt tq, tr;
    mag_divmod(&tq, &tr, a, b);
    if (tr.len && as != bs) {
        mag_inc(&tq);
        BigInt t;
        big_init(&t);
        big_abs(&t, b);
        sub_from(t.d, t.len, tr.d, tr.len);
        normalize(&t);
        move_into(&tr, &t);
    }
    if (tq.len)
        tq.sign = as * bs;
    if (tr.len)
        tr.sign = bs;
    if (stopped()) {
        set_zero(&tq);
        set_zero(&tr);
    }
    store(q, &tq);
    store(r, &tr);
}

/* --------------------------------------------------------------- basics */

void big_init(BigInt *b)
{
    b->sign = 0;
    b->len = 0;
    b->cap = 0;
    b->d = NULL;
}

void big_free(BigInt *b)
{
    if (b->cap)              /* a view (big_view) owns nothing */
        free(b->d);
    big_init(b);
}

void big_view(BigInt *b, int sign, const uint32_t *digits, size_t len)
{
    while (len && !digits[len - 1])
        len--;
    b->d = (uint32_t *)digits;  /* never written: a view is only ever an operand */
    b->len = len;
    b->cap = 0;
    b->sign = len ? (sign < 0 ? -1 : 1) : 0;
}

void big_from_i64(BigInt *b, int64_t v)
{
    set_u64(b, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0 ? -1 : 1);
}

bool big_fits_i64(const BigInt *b)
{
    if (b->len > 2)
        return false;
    uint64_t m = low_u64(b);
    return b->sign < 0 ? m <= (uint64_t)1 << 63 : m <= (uint64_t)INT64_MAX;
}

/* Avoids signed overflow for INT64_MIN, whose magnitude is 2^63. */
int64_t big_to_i64(const BigInt *b)
{
    uint64_t m = low_u64(b);
    if (b->sign >= 0)
        return (int64_t)m;
    return m == (uint64_t)1 << 63 ? INT64_MIN : -(int64_t)m;
}

bool big_fits_range(const BigInt *b, int64_t lo, int64_t hi)
{
    if (!big_fits_i64(b))
        return false;
    int64_t v = big_to_i64(b);
    return lo <= v && v <= hi;
}

/* Doubles >= 2^64 are mantissa * 2^k exactly, so build them with a shift. */
void big_from_double(BigInt *b, double d)
{
    if (!isfinite(d)) {
        set_zero(b);
        return;
    }
    double m = fabs(trunc(d));
    int sign = d < 0 ? -1 : 1;
    if (m < 18446744073709551616.0) {            /* 2^64 */
        set_u64(b, (uint64_t)m, sign);
        return;
    }
    int e;
    double f = frexp(m, &e);                     /* m = f * 2^e, f in [0.5, 1) */
    set_u64(b, (uint64_t)ldexp(f, 53), sign);
    big_shl(b, b, (size_t)(e - 53));
}

/* Round to nearest: the top 64 bits with a sticky bit for the rest convert exactly
   as the whole number would, because 64 > 53 + 2 leaves room for guard bits. */
double big_to_double(const BigInt *b)
{
    if (!b->len)
        return 0.0;
    size_t bl = big_bit_length(b);
    double r;
    if (bl <= 64) {
        r = (double)low_u64(b);
    } else if (bl > 1100) {
        r = HUGE_VAL;
    } else {
        size_t sh = bl - 64, w = sh / 32;
        unsigned off = sh % 32;
        uint64_t lo = digit_at(b, w) | (uint64_t)digit_at(b, w + 1) << 32;
        uint64_t top = lo >> off;
        if (off)
            top |= (uint64_t)digit_at(b, w + 2) << (64 - off);
        bool sticky = off && (b->d[w] & ((1u << off) - 1));
        for (size_t i = 0; i < w && !sticky; i++)
            sticky = b->d[i] != 0;
        r = ldexp((double)(top | sticky), (int)sh);
    }
    return b->sign < 0 ? -r : r;
}

void big_copy(BigInt *dst, const BigInt *src)
{
    if (dst == src)
        return;
    reserve(dst, src->len);
    if (src->len)
        memcpy(dst->d, src->d, src->len * DIGIT_BYTES);
    dst->len = src->len;
    dst->sign = src->sign;
}

int big_cmp(const BigInt *a, const BigInt *b)
{
    if (a->sign != b->sign)
        return a->sign < b->sign ? -1 : 1;
    int c = mag_cmp(a->d, a->len, b->d, b->len);
    return a->sign < 0 ? -c : c;
}

void big_neg(BigInt *r, const BigInt *a)
{
    big_copy(r, a);
    r->sign = -r->sign;
}

void big_abs(BigInt *r, const BigInt *a)
{
    big_copy(r, a);
    r->sign = r->len ? 1 : 0;
}

size_t big_bit_length(const BigInt *a)
{
    if (!a->len)
        return 0;
    return a->len * 32 - (size_t)__builtin_clz(a->d[a->len - 1]);
}

void big_from_digits(BigInt *b, int sign, const uint32_t *digits, size_t len)
{
    BigInt t;
    tmp_init(&t, len);
    if (len)
        memcpy(t.d, digits, len * DIGIT_BYTES);
    t.sign = sign < 0 ? -1 : 1;
    normalize(&t);
    move_into(b, &t);
}

/* ----------------------------------------------------------- arithmetic */

/* r = a + (b's magnitude with sign bsign); shared by add and sub. */
static void add_signed(BigInt *r, const BigInt *a, const BigInt *b, int bsign)
{
    if (!bsign) {
        big_copy(r, a);
        return;
    }
    if (!a->sign) {
        big_copy(r, b);
        r->sign = bsign;
        return;
    }
    const BigInt *x = a, *y = b;
    int xs = a->sign, ys = bsign;
    BigInt t;
    if (xs == ys) {
        if (x->len < y->len) {
            x = b;
            y = a;
        }
        tmp_init(&t, x->len + 1);
        memcpy(t.d, x->d, x->len * DIGIT_BYTES);
        t.d[x->len] = add_to(t.d, x->len, y->d, y->len);
        t.sign = xs;
    } else {
        int c = mag_cmp(x->d, x->len, y->d, y->len);
        if (c == 0) {
            set_zero(r);
            return;
        }
        if (c < 0) {
            x = b;
            y = a;
            xs = ys;
        }
        tmp_init(&t, x->len);
        memcpy(t.d, x->d, x->len * DIGIT_BYTES);
        sub_from(t.d, t.len, y->d, y->len);
        t.sign = xs;
    }
    normalize(&t);
    move_into(r, &t);
}

void big_add(BigInt *r, const BigInt *a, const BigInt *b)
{
    add_signed(r, a, b, b->sign);
}

void big_sub(BigInt *r, const BigInt *a, const BigInt *b)
{
    add_signed(r, a, b, -b->sign);
}

/* Low zero digits only shift the product (a power of two, a shifted value): they are
   skipped, so (1 << n) * (1 << m) costs what a shift does. */
static size_t low_zero_digits(const BigInt *a)
{
    size_t z = 0;
    while (z < a->len && !a->d[z])
        z++;
    return z;
}

void big_mul(BigInt *r, const BigInt *a, const BigInt *b)
{
    if (!a->sign || !b->sign) {
        set_zero(r);
        return;
    }
    size_t za = low_zero_digits(a), zb = low_zero_digits(b);
    const uint32_t *x = a->d + za, *y = b->d + zb;
    size_t xn = a->len - za, yn = b->len - zb;
    if (xn < yn) {
        const uint32_t *t = x;
        x = y;
        y = t;
        size_t tn = xn;
        xn = yn;
        yn = tn;
    }
    BigInt t;                    /* mag_mul writes all it covers: zero only the rest */
    big_init(&t);
    reserve(&t, a->len + b->len);
    t.len = a->len + b->len;
    memset(t.d, 0, (za + zb) * DIGIT_BYTES);
    mag_mul(t.d + za + zb, x, xn, y, yn);
    t.sign = a->sign * b->sign;
    normalize(&t);
    if (stopped())
        set_zero(&t);
    move_into(r, &t);
}

/* ---------------------------------------------------------------- bits */

/* Digit i of a in infinite two's complement, digits taken in order from 0: carry
   starts at 1 and carries the +1 of the negation (~m + 1) along. */
static inline uint32_t twos_digit(const BigInt *a, size_t i, uint64_t *carry)
{
    uint32_t d = digit_at(a, i);
    if (a->sign >= 0)
        return d;
    *carry += (uint32_t)~d;
    d = (uint32_t)*carry;
    *carry >>= 32;
    return d;
}

/* Take ownership of the n-digit two's complement array t and store its value in r. */
static void from_twos(BigInt *r, uint32_t *t, size_t n)
{
    BigInt x;
    big_init(&x);
    x.d = t;
    x.cap = x.len = n;
    x.sign = 1;
    if (t[n - 1] >> 31) {
        negate_digits(t, n);
        x.sign = -1;
    }
    normalize(&x);
    move_into(r, &x);
}

enum { OP_AND, OP_OR, OP_XOR };

/* One extra digit beyond the longer operand holds pure sign extension, so the
   finite arrays behave exactly like infinite two's complement. The operands are read
   digit by digit in place (a huge & 255 copies nothing), and an AND with a
   non-negative operand has no digit beyond that operand's. */
static void bitop(BigInt *r, const BigInt *a, const BigInt *b, int op)
{
    size_t n = (a->len > b->len ? a->len : b->len) + 1;
    if (op == OP_AND && a->sign >= 0 && a->len + 1 < n)
        n = a->len + 1;
    if (op == OP_AND && b->sign >= 0 && b->len + 1 < n)
        n = b->len + 1;
    uint32_t *t = alloc_digits(n);
    uint64_t ca = 1, cb = 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = twos_digit(a, i, &ca), y = twos_digit(b, i, &cb);
        t[i] = op == OP_AND ? x & y : op == OP_OR ? x | y : x ^ y;
    }
    from_twos(r, t, n);
}

void big_and(BigInt *r, const BigInt *a, const BigInt *b) { bitop(r, a, b, OP_AND); }
void big_or(BigInt *r, const BigInt *a, const BigInt *b) { bitop(r, a, b, OP_OR); }
void big_xor(BigInt *r, const BigInt *a, const BigInt *b) { bitop(r, a, b, OP_XOR); }

void big_shl(BigInt *r, const BigInt *a, size_t bits)
{
    if (!a->sign) {
        set_zero(r);
        return;
    }
    size_t w = bits / 32;
    if (w > SIZE_MAX / DIGIT_BYTES - a->len - 1)
        oom();
    BigInt t;
    tmp_init(&t, a->len + w + 1);
    t.d[a->len + w] = shl_digits(t.d + w, a->d, a->len, bits % 32);
    t.sign = a->sign;
    normalize(&t);
    move_into(r, &t);
}

/* Floor semantics: a negative value that loses nonzero bits rounds one further down. */
void big_shr(BigInt *r, const BigInt *a, size_t bits)
{
    size_t w = bits / 32;
    unsigned s = bits % 32;
    if (!a->sign || w >= a->len) {
        if (a->sign < 0)
            big_from_i64(r, -1);
        else
            set_zero(r);
        return;
    }
    bool lost = s && (a->d[w] & ((1u << s) - 1));
    for (size_t i = 0; i < w && !lost; i++)
        lost = a->d[i] != 0;
    BigInt t;
    tmp_init(&t, a->len - w);
    for (size_t i = 0; i < t.len; i++)
        t.d[i] = (a->d[i + w] >> s) | (s ? digit_at(a, i + w + 1) << (32 - s) : 0);
    t.sign = a->sign;
    normalize(&t);
    if (a->sign < 0 && lost) {
        mag_inc(&t);
        t.sign = -1;
    }
    move_into(r, &t);
}

/* ------------------------------------------------------------- roots */

/* Newton iteration from a starting point x >= floor(sqrt(a)); it decreases
   monotonically and stops at the floor. */
static void newton_sqrt(BigInt *x, const BigInt *a)
{
    BigInt y;
    big_init(&y);
    while (!stopping(a->len)) {
        big_divmod_trunc(&y, NULL, a, x);
        big_add(&y, &y, x);
        big_shr(&y, &y, 1);
        if (big_cmp(&y, x) >= 0)
            break;
        BigInt tmp = *x;
        *x = y;
        y = tmp;
    }
    big_free(&y);
}

/* Start from (isqrt(a >> 2k) + 1) << k with k ~ bits/4, an over-estimate already
   correct to half the bits, so only a couple of full-size Newton steps remain. */
void big_sqrt_floor(BigInt *r, const BigInt *a)
{
    if (a->sign <= 0) {
        set_zero(r);
        return;
    }
    size_t bl = big_bit_length(a);
    BigInt x;
    big_init(&x);
    if (bl <= 128) {
        big_from_i64(&x, 1);
        big_shl(&x, &x, (bl + 1) / 2);           /* 2^ceil(bl/2) > sqrt(a) */
    } else {
        size_t k = bl / 4;
        big_shr(&x, a, 2 * k);
        big_sqrt_floor(&x, &x);
        mag_inc(&x);
        big_shl(&x, &x, k);
    }
    newton_sqrt(&x, a);
    if (stopped())
        set_zero(&x);
    move_into(r, &x);
}

/* Correctly rounded: scale a by 4^-k to ~128 bits, take the ~64-bit integer root,
   mark inexactness in bit 0 (below the rounding position), convert, rescale by 2^k. */
double big_sqrt_double(const BigInt *a)
{
    if (a->sign <= 0)
        return a->sign < 0 ? NAN : 0.0;
    long e = (long)big_bit_length(a) - 128;
    long k = e >= 0 ? e / 2 : -((-e + 1) / 2);   /* floor(e / 2) */
    BigInt x, s, chk;
    big_init(&x);
    big_init(&s);
    big_init(&chk);
    if (k >= 0)
        big_shr(&x, a, (size_t)(2 * k));
    else
        big_shl(&x, a, (size_t)(-2 * k));
    big_sqrt_floor(&s, &x);
    big_mul(&chk, &s, &s);
    if (k > 0)
        big_shl(&chk, &chk, (size_t)(2 * k));
    if (big_cmp(&chk, k > 0 ? a : &x) != 0)
        s.d[0] |= 1;
    double r = stopped() ? 0.0 : ldexp(big_to_double(&s), k > 5000 ? 5000 : (int)k);
    big_free(&x);
    big_free(&s);
    big_free(&chk);
    return r;
}

/* ---------------------------------------------------------------- text */

static int digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 10;
    return -1;
}

/* Largest power of base that fits a digit, and its exponent (10^9 for base 10). */
static uint32_t chunk_power(int base, int *k)
{
    uint32_t p = (uint32_t)base;
    *k = 1;
    while ((uint64_t)p * (uint32_t)base <= UINT32_MAX) {
        p *= (uint32_t)base;
        (*k)++;
    }
    return p;
}

size_t big_string_length(const BigInt *a, int base)
{
    if (base < 2 || base > 36)
        return 0;
    /* a < 2^bits has at most floor(bits / log2(base)) + 1 digits; one more covers the
       rounding of the division, one the sign */
    return (size_t)((double)big_bit_length(a) / log2((double)base)) + 3;
}

/* Repeatedly divide a copy of the magnitude by base^k, emitting k digits per step
   from the end of the buffer backwards. Quadratic: it polls once per step. */
char *big_to_string(const BigInt *a, int base)
{
    static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    if (base < 2 || base > 36)
        return NULL;
    size_t size = big_string_length(a, base) + 1;   /* and the NUL */
    char *buf = malloc(size);
    if (!buf)
        oom();
    char *p = buf + size;
    *--p = '\0';
    if (!a->len)
        *--p = '0';
    int k;
    uint32_t chunk = chunk_power(base, &k);
    uint32_t *w = alloc_digits(a->len);
    size_t wn = a->len;
    if (wn)
        memcpy(w, a->d, wn * DIGIT_BYTES);
    while (wn) {
        if (stopping(wn)) {
            free(w);
            free(buf);
            return NULL;
        }
        uint32_t rem = base == 10 ? div_small_inplace(w, wn, 1000000000u) : div_small_inplace(w, wn, chunk);
        while (wn && !w[wn - 1])
            wn--;
        for (int i = 0; i < k && (wn || rem); i++) {
            *--p = digits[rem % (uint32_t)base];
            rem /= (uint32_t)base;
        }
    }
    free(w);
    if (a->sign < 0)
        *--p = '-';
    memmove(buf, p, (size_t)(buf + size - p));
    return buf;
}

/* Accumulate up to k digits in a machine word, then fold into the bignum with one
   multiply-add, so parsing is linear per chunk rather than per digit (quadratic in
   all: it polls once per chunk). */
bool big_from_string(BigInt *b, const char *s, size_t len, int base)
{
    set_zero(b);
    if (base < 2 || base > 36)
        return false;
    size_t i = 0;
    bool neg = len && s[0] == '-';
    if (neg)
        i = 1;
    if (i == len)
        return false;
    BigInt t;
    big_init(&t);
    reserve(&t, len * 6 / 32 + 2);            /* log2(36) < 6 bits per digit */
    uint32_t acc = 0, mult = 1;
    for (; i < len; i++) {
        int v = digit_value(s[i]);
        if (v < 0 || v >= base) {
            big_free(&t);
            return false;
        }
        acc = acc * (uint32_t)base + (uint32_t)v;
        mult *= (uint32_t)base;
        if ((uint64_t)mult * (uint32_t)base > UINT32_MAX) {
            if (stopping(t.len)) {
                big_free(&t);
                return false;
            }
            mag_mul_add_small(&t, mult, acc);
            acc = 0;
            mult = 1;
        }
    }
    if (mult > 1)
        mag_mul_add_small(&t, mult, acc);
    t.sign = neg ? -1 : 1;
    normalize(&t);
    move_into(b, &t);
    return true;
}

/* FNV-style mix of sign and digits with a splitmix64 finalizer; depends only on the
   normalized value, so equal values hash equal. */
uint64_t big_hash(const BigInt *a)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)(a->sign + 1);
    for (size_t i = 0; i < a->len; i++) {
        h ^= a->d[i];
        h *= 0x100000001B3ull;
        h ^= h >> 29;
    }
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 31;
    return h;
}

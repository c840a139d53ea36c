// SPDX-License-Identifier: BSD-2-Clause
/* prim_number.c - Integer (small and large) and Double primitives. */
#include "interp.h"
#include "largeint.h"
#include "prims.h"
#include "symbol.h"
#include "vm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define BINOP(fname, op, why)                                        \
    static PrimResult fname(Value *a, uint32_t n)                    \
    {                                                                \
        (void)n;                                                     \
        if (!num_binop(op, a[0], a[1], &a[0])) return prim_fail(a, why); \
        return PRIM_OK;                                              \
    }

BINOP(p_add, NUM_ADD, "+ needs a number")
BINOP(p_sub, NUM_SUB, "- needs a number")
BINOP(p_mul, NUM_MUL, "* needs a number")
/* An Integer divided by zero (0 or 0.0) is a ZeroDivide; other failures are Errors. */
static bool is_zero(Value v) { return v == int_value(0) || (is_double(v) && double_val(v) == 0.0); }
#define DIVOP(fname, op, why)                                        \
    static PrimResult fname(Value *a, uint32_t n)                    \
    {                                                                \
        (void)n;                                                     \
        if (num_binop(op, a[0], a[1], &a[0])) return PRIM_OK;        \
        if (is_integer(a[0]) && is_zero(a[1])) return prim_fail_as(a, "ZeroDivide", why); \
        return prim_fail(a, why);                                    \
    }

DIVOP(p_div, NUM_DIV, "/ needs a non-zero number")
/* Two immediate Doubles first (NBody divides them in its inner loop): neither is zero,
 * since 0.0 is boxed, and double_new boxes a quotient outside the immediate range. */
static PrimResult p_fdiv(Value *a, uint32_t n)
{
    (void)n;
    if (LIKELY(is_float(a[0]) && is_float(a[1]))) {
        a[0] = double_new(float_val(a[0]) / float_val(a[1]));
        return PRIM_OK;
    }
    if (!num_binop(NUM_FDIV, a[0], a[1], &a[0])) return prim_fail(a, "// needs a number");
    return PRIM_OK;
}
DIVOP(p_mod, NUM_MOD, "% needs a non-zero number")
DIVOP(p_rem, NUM_REM, "rem: needs a non-zero number")
BINOP(p_and, NUM_AND, "& needs an Integer")
BINOP(p_or, NUM_OR, "bitOr: needs an Integer")
BINOP(p_xor, NUM_XOR, "bitXor: needs an Integer")
BINOP(p_lt, NUM_LT, "< needs a number")
BINOP(p_gt, NUM_GT, "> needs a number")
BINOP(p_le, NUM_LE, "<= needs a number")
BINOP(p_ge, NUM_GE, ">= needs a number")
BINOP(p_eq, NUM_EQ, "= needs a number")
BINOP(p_ne, NUM_NE, "<> needs a number")

/* ---- Integer ---- */

static PrimResult with_big(Value *a, void (*f)(BigInt *, const BigInt *))
{
    BigInt x, r;
    uint32_t small[2];
    largeint_view(a[0], &x, small);
    big_init(&r);
    f(&r, &x);
    a[0] = largeint_from_big(&r);
    big_free(&r);
    return PRIM_OK;
}

static PrimResult p_int_abs(Value *a, uint32_t n)
{
    (void)n;
    if (is_int(a[0])) { a[0] = largeint_from_i64(llabs(int_val(a[0]))); return PRIM_OK; }
    return with_big(a, big_abs);
}

static PrimResult p_int_negated(Value *a, uint32_t n)
{
    (void)n;
    if (is_int(a[0])) { a[0] = largeint_from_i64(-int_val(a[0])); return PRIM_OK; }
    return with_big(a, big_neg);
}

/* sqrt of a small Integer is computed as SOM's VMs compute it: the Double square
 * root, answered as an Integer when it is integral (so 4611686018427387903 sqrt is
 * 2147483648, as in SOM-java and TruffleSOM), NaN for a negative receiver. A large
 * Integer's is an Integer for exact squares and a Double otherwise. */
static PrimResult p_int_sqrt(Value *a, uint32_t n)
{
    (void)n;
    if (is_int(a[0])) {
        double r = sqrt((double)int_val(a[0]));
        a[0] = r == rint(r) ? int_value((int64_t)r) : double_new(r);
        return PRIM_OK;
    }
    BigInt x, r, sq;
    uint32_t small[2];
    largeint_view(a[0], &x, small);
    if (x.sign < 0) { a[0] = double_new(NAN); return PRIM_OK; } /* as Double>>sqrt */
    big_init(&r); big_init(&sq);
    big_sqrt_floor(&r, &x);
    big_mul(&sq, &r, &r);
    bool exact = big_cmp(&sq, &x) == 0;
    big_free(&sq);
    double d = exact ? 0.0 : big_sqrt_double(&x);
    largeint_check_interrupt(&r, "Integer>>sqrt");
    a[0] = exact ? largeint_from_big(&r) : double_new(d);
    big_free(&r);
    return PRIM_OK;
}

/* Any small Integer: a left shift whose result could not fit the heap is the out of
 * memory error before it is made (shift), a long right shift answers 0 or -1. */
static bool shift_amount(Value v, int64_t *out)
{
    if (!is_int(v)) return false;
    *out = int_val(v);
    return true;
}

static PrimResult shift(Value *a, int64_t s)
{
    if (a[0] == int_value(0)) return PRIM_OK; /* 0 << (1 << 40) is 0, no memory needed */
    if (is_int(a[0]) && s >= 0 && s < 62) {
        int64_t x = int_val(a[0]);
        if (x == 0 || (x > 0 && x < (SMALLINT_MAX >> s)) || (x < 0 && x > (SMALLINT_MIN >> s))) {
            a[0] = int_value(x * ((int64_t)1 << s));
            return PRIM_OK;
        }
    }
    if (is_int(a[0]) && s <= 0) {
        a[0] = int_value(s <= -63 ? (int_val(a[0]) < 0 ? -1 : 0) : int_val(a[0]) >> -s);
        return PRIM_OK;
    }
    BigInt x, r;
    uint32_t small[2];
    largeint_view(a[0], &x, small);
    if (s > 0) largeint_check_digits(x.len + (size_t)s / 32 + 1);
    big_init(&r);
    if (s >= 0) big_shl(&r, &x, (size_t)s);
    else big_shr(&r, &x, (size_t)-s);
    a[0] = largeint_from_big(&r);
    big_free(&r);
    return PRIM_OK;
}

static PrimResult p_shl(Value *a, uint32_t n)
{
    (void)n;
    int64_t s;
    if (!shift_amount(a[1], &s)) return prim_fail(a, "<< needs a small Integer");
    return shift(a, s);
}

static PrimResult p_shr(Value *a, uint32_t n)
{
    (void)n;
    int64_t s;
    if (!shift_amount(a[1], &s)) return prim_fail(a, ">> needs a small Integer");
    return shift(a, -s);
}

/* >>> is Java's >>> on a long, as in SOM-java, TruffleSOM and SOM++: the 64-bit
 * two's-complement pattern shifted right by (s mod 64) bits, zeros coming in, read as a
 * signed 64-bit integer again. So -1 >>> 1 is 9223372036854775807 and -1 >>> 0 is -1.
 * A large receiver shifts as >> does (SOM's VMs do not define it). */
static PrimResult p_ushr(Value *a, uint32_t n)
{
    (void)n;
    int64_t s;
    if (!is_int(a[0])) return p_shr(a, n);
    if (!shift_amount(a[1], &s) || s < 0) return prim_fail(a, ">>> needs a non-negative small Integer");
    uint64_t x = (uint64_t)int_val(a[0]);
    a[0] = largeint_from_i64((int64_t)(x >> (s & 63)));
    return PRIM_OK;
}

static PrimResult to_string_base(Value *a, int base)
{
    if (is_int(a[0]) && base == 10) {
        char buf[32];
        int len = snprintf(buf, sizeof buf, "%lld", (long long)int_val(a[0]));
        a[0] = str_new(buf, (size_t)len);
        return PRIM_OK;
    }
    BigInt x;
    uint32_t small[2];
    largeint_view(a[0], &x, small);
    largeint_check_chars(big_string_length(&x, base)); /* the String must fit the heap */
    char *s = big_to_string(&x, base); /* quadratic: an interrupt ends it (NULL) */
    if (!s) {
        largeint_check_interrupt(NULL, method_print_name(interp_prim));
        vm_fatal("printing an Integer in base %d failed", base);
    }
    a[0] = str_from_cstr(s);
    free(s);
    return PRIM_OK;
}

static PrimResult p_int_asString(Value *a, uint32_t n) { (void)n; return to_string_base(a, 10); }

static PrimResult p_int_printBase(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1]) || int_val(a[1]) < 2 || int_val(a[1]) > 36) return prim_fail(a, "base must be 2..36");
    return to_string_base(a, (int)int_val(a[1]));
}

static PrimResult p_int_asDouble(Value *a, uint32_t n)
{
    (void)n;
    if (is_int(a[0])) { a[0] = double_new((double)int_val(a[0])); return PRIM_OK; }
    BigInt x;
    uint32_t small[2];
    largeint_view(a[0], &x, small);
    a[0] = double_new(big_to_double(&x));
    return PRIM_OK;
}

/* Integer>>== (reached through perform:; the compiler inlines ==): integers
 * are identical when they are equal, as in SOM. */
static PrimResult p_int_identical(Value *a, uint32_t n)
{
    (void)n;
    a[0] = bool_value(values_identical(a[0], a[1]));
    return PRIM_OK;
}

static PrimResult p_self(Value *a, uint32_t n) { (void)a; (void)n; return PRIM_OK; }

static PrimResult p_as32signed(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[0])) { /* the low 32 bits of the two's complement: -m ends in 0 - m's */
        BigInt x;
        uint32_t small[2];
        largeint_view(a[0], &x, small);
        uint32_t low = x.len ? x.d[0] : 0;
        a[0] = int_value((int32_t)(x.sign < 0 ? 0u - low : low));
        return PRIM_OK;
    }
    a[0] = int_value((int32_t)(uint32_t)(uint64_t)int_val(a[0]));
    return PRIM_OK;
}

static PrimResult p_as32unsigned(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[0])) {
        p_as32signed(a, n);
    }
    a[0] = int_value((uint32_t)(uint64_t)int_val(a[0]));
    return PRIM_OK;
}

static PrimResult p_int_hash(Value *a, uint32_t n)
{
    (void)n;
    if (is_int(a[0])) return PRIM_OK;
    BigInt x;
    uint32_t small[2];
    largeint_view(a[0], &x, small);
    a[0] = int_value((int64_t)(big_hash(&x) & 0x3fffffffffffffffull));
    return PRIM_OK;
}

/* A per-VM xorshift generator, so runs are repeatable. */
static uint64_t rngState = 88172645463325252ull;
static PrimResult p_atRandom(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[0]) || int_val(a[0]) < 1) return prim_fail(a, "atRandom needs a positive small Integer");
    rngState ^= rngState << 13; rngState ^= rngState >> 7; rngState ^= rngState << 17;
    a[0] = int_value(1 + (int64_t)(rngState % (uint64_t)int_val(a[0])));
    return PRIM_OK;
}

static PrimResult p_int_fromString(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1])) return prim_fail(a, "fromString: needs a String");
    /* an optional sign, then decimal digits (a leading + as Java's parseLong allows) */
    const char *s = str_bytes(a[1]);
    size_t len = str_len(a[1]);
    if (len > 1 && s[0] == '+' && s[1] >= '0' && s[1] <= '9') s++, len--;
    bool ok;
    Value v = largeint_parse(s, len, 10, &ok);
    a[0] = ok ? v : VM.nil;
    return PRIM_OK;
}

/* ---- Double ---- */

static bool dbl(Value v, double *d)
{
    if (is_double(v)) { *d = double_val(v); return true; }
    if (is_int(v)) { *d = (double)int_val(v); return true; }
    return false;
}

#define DOUBLE_FN(fname, expr)                                 \
    static PrimResult fname(Value *a, uint32_t n)              \
    {                                                          \
        (void)n;                                               \
        double x;                                              \
        if (!dbl(a[0], &x)) return prim_fail(a, "not a Double"); \
        a[0] = double_new(expr);                               \
        return PRIM_OK;                                        \
    }
DOUBLE_FN(p_d_sqrt, sqrt(x))
DOUBLE_FN(p_d_cos, cos(x))
DOUBLE_FN(p_d_sin, sin(x))
DOUBLE_FN(p_d_exp, exp(x))
DOUBLE_FN(p_d_log, log(x))

static PrimResult double_to_int(Value *a, double x)
{
    if (!isfinite(x)) return prim_fail(a, "not a finite Double");
    if (x > -9.0e18 && x < 9.0e18) { a[0] = largeint_from_i64((int64_t)x); return PRIM_OK; }
    BigInt b;
    big_init(&b);
    big_from_double(&b, x);
    a[0] = largeint_from_big(&b);
    big_free(&b);
    return PRIM_OK;
}

static PrimResult p_d_asInteger(Value *a, uint32_t n) { (void)n; return double_to_int(a, trunc(double_val(a[0]))); }

/* The nearest Integer, a half rounded up (Java's Math.round, as SOM's VMs do):
 * 1.5 round is 2 and -1.5 round is -1. */
static PrimResult p_d_round(Value *a, uint32_t n)
{
    (void)n;
    double x = double_val(a[0]), r = floor(x);
    if (x - r >= 0.5) r += 1;
    return double_to_int(a, r);
}

/* Double>>% is the remainder of the truncated division (sign of the receiver),
 * as in SOM: -3.0 % 2.0 is -1.0. (Integer>>% is the floored modulo.) */
static PrimResult p_d_mod(Value *a, uint32_t n)
{
    (void)n;
    double x, y;
    if (!dbl(a[0], &x) || !dbl(a[1], &y)) return prim_fail(a, "% needs a number");
    a[0] = double_new(fmod(x, y));
    return PRIM_OK;
}
static PrimResult p_d_floor(Value *a, uint32_t n) { (void)n; return double_to_int(a, floor(double_val(a[0]))); }
static PrimResult p_d_ceiling(Value *a, uint32_t n) { (void)n; return double_to_int(a, ceil(double_val(a[0]))); }

/* Doubles print as Java's Double.toString does since JDK 19 (JDK-4511638), which is
 * what SOM-java and TruffleSOM print: the decimal of the fewest significant digits,
 * but at least two, that reads back as the same Double, the closest one of that length
 * (%.*e rounds correctly); plain decimals from 1.0E-3 up to 1.0E7 ('0.001', '100.0',
 * '1234567.0'), and d.dddE<n> outside that range ('1.0E7', '1.5E-5', '4.9E-324').
 * Older JDKs sometimes print a digit more (9.999999999999999E22 for 1.0E23). */
static void format_double(double d, char *out, size_t size)
{
    if (isnan(d)) { snprintf(out, size, "NaN"); return; }
    if (isinf(d)) { snprintf(out, size, d > 0 ? "Infinity" : "-Infinity"); return; }
    if (d == 0) { snprintf(out, size, signbit(d) ? "-0.0" : "0.0"); return; }
    char sci[40];
    for (int prec = 2; prec <= 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, d);
        if (strtod(sci, NULL) == d) break;
    }
    /* sci is [-]D[.DDD]e[+-]X: collect the digits and the exponent */
    char digits[24];
    int k = 0, exp10;
    const char *p = sci;
    bool neg = *p == '-';
    if (neg) p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[k++] = *p;
    exp10 = atoi(p + 1);
    while (k > 1 && digits[k - 1] == '0') k--; /* %.*e pads with zeros */
    digits[k] = 0;
    char *o = out;
    size_t left = size;
#define PUT(...) do { int w_ = snprintf(o, left, __VA_ARGS__); o += w_; left -= (size_t)w_; } while (0)
    if (neg) PUT("-");
    if (exp10 >= -3 && exp10 < 7) {
        if (exp10 >= 0) {
            for (int i = 0; i <= exp10; i++) PUT("%c", i < k ? digits[i] : '0');
            PUT(".%s", exp10 + 1 < k ? digits + exp10 + 1 : "0");
        } else {
            PUT("0.");
            for (int i = 0; i < -exp10 - 1; i++) PUT("0");
            PUT("%s", digits);
        }
    } else {
        PUT("%c.%s", digits[0], k > 1 ? digits + 1 : "0");
        PUT("E%d", exp10);
    }
#undef PUT
}

static PrimResult p_d_asString(Value *a, uint32_t n)
{
    (void)n;
    char buf[48];
    format_double(double_val(a[0]), buf, sizeof buf);
    a[0] = str_from_cstr(buf);
    return PRIM_OK;
}

static PrimResult p_d_hash(Value *a, uint32_t n)
{
    (void)n;
    double d = double_val(a[0]);
    if (d == trunc(d) && fabs(d) < 4e18) { a[0] = int_value((int64_t)d); return PRIM_OK; }
    uint64_t bits;
    memcpy(&bits, &d, 8);
    a[0] = int_value((int64_t)((bits ^ (bits >> 31)) & 0x3fffffffffffffffull));
    return PRIM_OK;
}

static PrimResult p_d_fromString(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1])) return prim_fail(a, "fromString: needs a String");
    char *end;
    double d = strtod(str_bytes(a[1]), &end);
    a[0] = double_new(end == str_bytes(a[1]) || *end ? NAN : d); /* NaN for bad input, as in SOM */
    return PRIM_OK;
}

static PrimResult p_d_inf(Value *a, uint32_t n) { (void)n; a[0] = double_new(INFINITY); return PRIM_OK; }

const PrimDef prims_number[] = {
    {"Integer", "+", p_add}, {"Integer", "-", p_sub}, {"Integer", "*", p_mul}, {"Integer", "/", p_div},
    {"Integer", "//", p_fdiv}, {"Integer", "%", p_mod}, {"Integer", "rem:", p_rem},
    {"Integer", "&", p_and}, {"Integer", "bitOr:", p_or}, {"Integer", "bitXor:", p_xor},
    {"Integer", "<", p_lt}, {"Integer", ">", p_gt}, {"Integer", "<=", p_le}, {"Integer", ">=", p_ge},
    {"Integer", "=", p_eq}, {"Integer", "==", p_int_identical}, {"Integer", "<>", p_ne}, {"Integer", "~=", p_ne},
    {"Integer", "<<", p_shl}, {"Integer", ">>", p_shr}, {"Integer", ">>>", p_ushr},
    {"Integer", "abs", p_int_abs}, {"Integer", "negated", p_int_negated}, {"Integer", "sqrt", p_int_sqrt},
    {"Integer", "asString", p_int_asString}, {"Integer", "printString:", p_int_printBase},
    {"Integer", "asDouble", p_int_asDouble}, {"Integer", "asInteger", p_self},
    {"Integer", "as32BitSignedValue", p_as32signed}, {"Integer", "as32BitUnsignedValue", p_as32unsigned},
    {"Integer", "hashcode", p_int_hash}, {"Integer", "atRandom", p_atRandom},
    {"Integer class", "fromString:", p_int_fromString},
    {"Double", "+", p_add}, {"Double", "-", p_sub}, {"Double", "*", p_mul}, {"Double", "/", p_fdiv},
    {"Double", "//", p_fdiv}, {"Double", "%", p_d_mod}, {"Double", "<", p_lt}, {"Double", ">", p_gt},
    {"Double", "<=", p_le}, {"Double", ">=", p_ge}, {"Double", "=", p_eq}, {"Double", "<>", p_ne},
    {"Double", "~=", p_ne}, {"Double", "sqrt", p_d_sqrt}, {"Double", "cos", p_d_cos}, {"Double", "sin", p_d_sin},
    {"Double", "exp", p_d_exp}, {"Double", "log", p_d_log}, {"Double", "asInteger", p_d_asInteger},
    {"Double", "round", p_d_round}, {"Double", "floor", p_d_floor}, {"Double", "ceiling", p_d_ceiling},
    {"Double", "asString", p_d_asString}, {"Double", "hashcode", p_d_hash},
    {"Double class", "fromString:", p_d_fromString}, {"Double class", "PositiveInfinity", p_d_inf},
    {NULL, NULL, NULL},
};

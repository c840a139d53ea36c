// SPDX-License-Identifier: BSD-2-Clause
/* largeint.c - converts between heap large integers and bigint.c's BigInt. */
#include "largeint.h"
#include "vm.h"

static Value make(const BigInt *b, bool perm)
{
    size_t words = 1 + (b->len + 1) / 2;
    Obj *o = perm ? obj_new_perm(CLS_INTEGER, FMT_WORDS, words) : obj_new(CLS_INTEGER, FMT_WORDS, words);
    o->slots[0] = ((Value)b->len << 1) | (b->sign < 0);
    memcpy(&o->slots[1], b->d, b->len * sizeof(uint32_t));
    return obj_value(o);
}

static Value normalize(const BigInt *b, bool perm)
{
    if (big_fits_range(b, SMALLINT_MIN, SMALLINT_MAX)) return int_value(big_to_i64(b));
    return make(b, perm);
}

Value largeint_from_big(const BigInt *b) { return normalize(b, false); }

bool is_integer(Value v) { return is_int(v) || is_largeint(v); }

void largeint_to_big(Value v, BigInt *b)
{
    if (is_int(v)) { big_from_i64(b, int_val(v)); return; }
    Obj *o = as_obj(v);
    size_t len = (size_t)(o->slots[0] >> 1);
    big_from_digits(b, (o->slots[0] & 1) ? -1 : 1, (const uint32_t *)&o->slots[1], len);
}

Value largeint_parse(const char *s, size_t len, int base, bool *ok)
{
    BigInt b;
    big_init(&b);
    *ok = big_from_string(&b, s, len, base);
    Value v = *ok ? normalize(&b, false) : G.nil;
    big_free(&b);
    return v;
}

Value largeint_parse_perm(const char *s, size_t len)
{
    BigInt b;
    big_init(&b);
    if (!big_from_string(&b, s, len, 10)) vm_fatal("bad integer literal %.*s", (int)len, s);
    Value v = normalize(&b, true);
    big_free(&b);
    return v;
}

Value largeint_from_i64(int64_t v)
{
    if (int_fits(v)) return int_value(v);
    BigInt b;
    big_init(&b);
    big_from_i64(&b, v);
    Value r = make(&b, false);
    big_free(&b);
    return r;
}

Value largeint_from_u64(uint64_t v)
{
    if (v <= (uint64_t)SMALLINT_MAX) return int_value((int64_t)v);
    BigInt b, hi, lo;
    big_init(&b); big_init(&hi); big_init(&lo);
    big_from_i64(&hi, (int64_t)(v >> 32));
    big_shl(&hi, &hi, 32);
    big_from_i64(&lo, (int64_t)(v & 0xffffffffu));
    big_add(&b, &hi, &lo);
    Value r = make(&b, false);
    big_free(&b); big_free(&hi); big_free(&lo);
    return r;
}

bool largeint_words_equal(Value a, Value b)
{
    Value head = as_obj(a)->slots[0];
    return head == as_obj(b)->slots[0] &&
           memcmp(&as_obj(a)->slots[1], &as_obj(b)->slots[1], (size_t)(head >> 1) * sizeof(uint32_t)) == 0;
}

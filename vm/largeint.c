// SPDX-License-Identifier: BSD-2-Clause
/* largeint.c - large Integer objects: read in place as BigInt operands, made from results, and
 * the sizes of results checked against the heap before they are computed. */
#include "largeint.h"
#include "gc.h"
#include "interrupt.h"
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

void largeint_view(Value v, BigInt *b, uint32_t small[2])
{
    if (is_int(v)) {
        int64_t i = int_val(v);
        uint64_t m = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
        small[0] = (uint32_t)m;
        small[1] = (uint32_t)(m >> 32);
        big_view(b, i < 0 ? -1 : 1, small, 2);
        return;
    }
    Obj *o = as_obj(v);
    big_view(b, (o->slots[0] & 1) ? -1 : 1, (const uint32_t *)&o->slots[1], (size_t)(o->slots[0] >> 1));
}

/* An object of `bytes` (header included) larger than the heap may hold. */
static void check_bytes(size_t bytes)
{
    size_t max = gc_heap_limit();
    if (max && bytes > max) vm_object_too_large(bytes, max);
}

void largeint_check_digits(size_t digits)
{
#ifdef SQVM_FUZZ
    interrupt_fuzz_spend_work(digits); /* making and filling the result: work the budget counts */
#endif
    /* make(): a header word, the count word, two digits a word */
    check_bytes(digits > SIZE_MAX / 8 ? SIZE_MAX : 16 + (digits + 1) / 2 * 8);
}

void largeint_check_chars(size_t chars)
{
    check_bytes(chars > SIZE_MAX - 16 ? SIZE_MAX : 16 + chars);
}

void largeint_check_interrupt(BigInt *r, const char *what)
{
    if (!interrupt_pending) return;
    if (r) big_free(r);
    interrupt_raise(what);
}

Value largeint_parse(const char *s, size_t len, int base, bool *ok)
{
    BigInt b;
    big_init(&b);
    *ok = big_from_string(&b, s, len, base);
    largeint_check_interrupt(&b, "Integer class>>fromString:");
    Value v = *ok ? normalize(&b, false) : VM.nil;
    big_free(&b);
    return v;
}

Value largeint_parse_perm(const char *s, size_t len)
{
    BigInt b;
    big_init(&b);
    bool ok = big_from_string(&b, s, len, 10);
    largeint_check_interrupt(&b, "an integer literal");
    if (!ok) vm_fatal("bad integer literal %.*s", (int)len, s);
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

bool largeint_words_equal(Value a, Value b)
{
    Value head = as_obj(a)->slots[0];
    return head == as_obj(b)->slots[0] &&
           memcmp(&as_obj(a)->slots[1], &as_obj(b)->slots[1], (size_t)(head >> 1) * sizeof(uint32_t)) == 0;
}

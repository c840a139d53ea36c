/* prim_string.c - String and Symbol primitives (byte strings, 1-based). */
#include "largeint.h"
#include "prims.h"
#include "symbol.h"
#include "vm.h"

#include <ctype.h>
#include <stdlib.h>

static PrimResult p_concat(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1])) return prim_fail(a, "concatenate: needs a String");
    size_t la = str_len(a[0]), lb = str_len(a[1]);
    Value r = str_alloc(la + lb);
    memcpy(str_bytes(r), str_bytes(a[0]), la);
    memcpy(str_bytes(r) + la, str_bytes(a[1]), lb);
    str_bytes(r)[la + lb] = 0;
    a[0] = r;
    return PRIM_OK;
}

static PrimResult p_length(Value *a, uint32_t n) { (void)n; a[0] = int_value((int64_t)str_len(a[0])); return PRIM_OK; }

static PrimResult p_charAt(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1])) return prim_fail(a, "charAt: needs an Integer");
    uint64_t k = (uint64_t)int_val(a[1]) - 1;
    if (k >= str_len(a[0])) return prim_fail(a, "charAt: index out of bounds");
    a[0] = str_new(str_bytes(a[0]) + k, 1);
    return PRIM_OK;
}

static PrimResult p_substring(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1]) || !is_int(a[2])) return prim_fail(a, "primSubstringFrom:to: needs Integers");
    int64_t s = int_val(a[1]), e = int_val(a[2]), len = (int64_t)str_len(a[0]);
    if (s < 1 || e > len || e < s - 1) return prim_fail(a, "primSubstringFrom:to: out of bounds");
    a[0] = str_new(str_bytes(a[0]) + s - 1, (size_t)(e - s + 1));
    return PRIM_OK;
}

static PrimResult p_indexOf(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1])) return prim_fail(a, "indexOf: needs a String");
    size_t la = str_len(a[0]), lb = str_len(a[1]);
    const char *s = str_bytes(a[0]), *t = str_bytes(a[1]);
    int64_t found = 0;
    if (lb <= la)
        for (size_t i = 0; i + lb <= la; i++)
            if (memcmp(s + i, t, lb) == 0) { found = (int64_t)i + 1; break; }
    a[0] = int_value(found);
    return PRIM_OK;
}

/* Strings equal Strings with the same bytes; a Symbol is equal only to itself. */
static PrimResult p_eq(Value *a, uint32_t n)
{
    (void)n;
    Value x = a[0], y = a[1];
    bool eq = x == y;
    if (!eq && is_string_like(y) && obj_class_index(as_obj(x)) == CLS_STRING &&
        obj_class_index(as_obj(y)) == CLS_STRING)
        eq = str_len(x) == str_len(y) && memcmp(str_bytes(x), str_bytes(y), str_len(x)) == 0;
    a[0] = bool_value(eq);
    return PRIM_OK;
}

static PrimResult p_hash(Value *a, uint32_t n)
{
    (void)n;
    uint64_t h = 1469598103934665603ull;
    const char *s = str_bytes(a[0]);
    for (size_t i = 0, l = str_len(a[0]); i < l; i++) { h ^= (uint8_t)s[i]; h *= 1099511628211ull; }
    a[0] = int_value((int64_t)(h & 0x3fffffffffffffffull));
    return PRIM_OK;
}

static PrimResult all_chars(Value *a, int (*pred)(int))
{
    size_t l = str_len(a[0]);
    bool ok = l > 0;
    for (size_t i = 0; i < l && ok; i++) ok = pred((unsigned char)str_bytes(a[0])[i]) != 0;
    a[0] = bool_value(ok);
    return PRIM_OK;
}
static PrimResult p_isWhite(Value *a, uint32_t n) { (void)n; return all_chars(a, isspace); }
static PrimResult p_isLetters(Value *a, uint32_t n) { (void)n; return all_chars(a, isalpha); }
static PrimResult p_isDigits(Value *a, uint32_t n) { (void)n; return all_chars(a, isdigit); }

static PrimResult p_asString(Value *a, uint32_t n)
{
    (void)n;
    if (obj_class_index(as_obj(a[0])) != CLS_STRING) a[0] = str_new(str_bytes(a[0]), str_len(a[0]));
    return PRIM_OK;
}

static PrimResult p_asSymbol(Value *a, uint32_t n) { (void)n; a[0] = sym_intern(str_bytes(a[0]), str_len(a[0])); return PRIM_OK; }

static PrimResult p_asInteger(Value *a, uint32_t n)
{
    (void)n;
    bool ok;
    Value v = largeint_parse(str_bytes(a[0]), str_len(a[0]), 10, &ok);
    a[0] = ok ? v : G.nil;
    return PRIM_OK;
}

static PrimResult p_asDouble(Value *a, uint32_t n)
{
    (void)n;
    char *end;
    const char *s = str_bytes(a[0]);
    double d = strtod(s, &end);
    a[0] = (end == s || *end) ? G.nil : double_new(d);
    return PRIM_OK;
}

static PrimResult map_bytes(Value *a, int (*f)(int), bool reverse)
{
    size_t l = str_len(a[0]);
    Value r = str_alloc(l);
    char *d = str_bytes(r);
    const char *s = str_bytes(a[0]);
    for (size_t i = 0; i < l; i++) d[i] = reverse ? s[l - 1 - i] : (char)f((unsigned char)s[i]);
    a[0] = r;
    return PRIM_OK;
}
static int ident(int c) { return c; }
static PrimResult p_reverse(Value *a, uint32_t n) { (void)n; return map_bytes(a, ident, true); }
static PrimResult p_upper(Value *a, uint32_t n) { (void)n; return map_bytes(a, toupper, false); }
static PrimResult p_lower(Value *a, uint32_t n) { (void)n; return map_bytes(a, tolower, false); }

const PrimDef prims_string[] = {
    {"String", "concatenate:", p_concat}, {"String", "length", p_length}, {"String", "charAt:", p_charAt},
    {"String", "primSubstringFrom:to:", p_substring}, {"String", "indexOf:", p_indexOf},
    {"String", "=", p_eq}, {"String", "hashcode", p_hash}, {"String", "isWhiteSpace", p_isWhite},
    {"String", "isLetters", p_isLetters}, {"String", "isDigits", p_isDigits},
    {"String", "asString", p_asString}, {"String", "asSymbol", p_asSymbol},
    {"String", "asInteger", p_asInteger}, {"String", "asDouble", p_asDouble},
    {"String", "reverse", p_reverse}, {"String", "asUppercase", p_upper}, {"String", "asLowercase", p_lower},
    {"Symbol", "asString", p_asString},
    {NULL, NULL, NULL},
};

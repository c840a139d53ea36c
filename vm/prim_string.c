// SPDX-License-Identifier: BSD-2-Clause
/* prim_string.c - String and Symbol primitives: UTF-8 text, indexed by character from 1. */
#define _GNU_SOURCE /* memmem */
#include "interp.h"
#include "prims.h"
#include "symbol.h"
#include "vm.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

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

static PrimResult p_length(Value *a, uint32_t n) { (void)n; a[0] = int_value((int64_t)str_char_len(a[0])); return PRIM_OK; }

/* Characters start..end (1-based, inclusive) as a new String; false when out of range. */
static bool substring(Value s, int64_t start, int64_t end, Value *out)
{
    int64_t len = (int64_t)str_char_len(s);
    if (start < 1 || end > len || end < start - 1) return false;
    size_t from = str_char_offset(s, (size_t)(start - 1));
    size_t to = str_char_offset(s, (size_t)end);
    *out = str_new(str_bytes(s) + from, to - from);
    return true;
}

/* charAt: i answers the same as substringFrom: i to: i; out of range it sends
 * that message, so the error is the library's (and a subclass's error: runs). */
static PrimResult p_charAt(Value *a, uint32_t n)
{
    (void)n;
    if (is_int(a[1]) && substring(a[0], int_val(a[1]), int_val(a[1]), &a[0])) return PRIM_OK;
    a[2] = a[1];
    return interp_send(a, 2, sym_intern_cstr("substringFrom:to:"), NULL);
}

static PrimResult p_substring(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1]) || !is_int(a[2])) return prim_fail(a, "primSubstringFrom:to: needs Integers");
    if (!substring(a[0], int_val(a[1]), int_val(a[2]), &a[0]))
        return prim_fail(a, "primSubstringFrom:to: out of bounds");
    return PRIM_OK;
}

/* The 0-based character position of the first occurrence of t in s at or after
 * character `from`, or -1. An occurrence is what substringFrom:to: would answer: its
 * bytes start and end where characters of s do (counted by str_char_size, as every
 * primitive counts), so bytes of t inside one of s's characters are no match. Two
 * cursors that only move forward keep the search linear in s. */
static int64_t find_chars(Value s, Value t, size_t from)
{
    size_t ls = str_len(s), lt = str_len(t);
    const char *p = str_bytes(s), *tb = str_bytes(t);
    size_t i = str_char_offset(s, from), c = from, end = i;
    if (str_is_ascii(s)) {
        /* memmem, not a memcmp at every offset: an HTTP server looks for "\r\n\r\n"
         * in every request it reads */
        const char *at = memmem(p + i, ls - i, tb, lt);
        return at ? (int64_t)(at - p) : -1;
    }
    for (;;) {
        const char *at = memmem(p + i, ls - i, tb, lt);
        if (!at) return -1;
        size_t off = (size_t)(at - p);
        for (; i < off; c++) i += str_char_size(p + i, ls - i);
        if (end < i) end = i;
        while (end < off + lt) end += str_char_size(p + end, ls - end);
        if (i == off && end == off + lt) return (int64_t)c;
        if (i == off) { /* it ends inside a character: look from the next one */
            i += str_char_size(p + i, ls - i);
            c++;
        }
    }
}

static PrimResult p_indexOf_startingAt(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1]) || !is_int(a[2])) return prim_fail(a, "indexOf:startingAt: needs a String and an Integer");
    int64_t start = int_val(a[2]), len = (int64_t)str_char_len(a[0]);
    int64_t found = -1;
    if (start >= 1 && start <= len + 1) {
        int64_t at = find_chars(a[0], a[1], (size_t)(start - 1));
        if (at >= 0) found = at + 1;
    }
    a[0] = int_value(found);
    return PRIM_OK;
}

/* includes: aString at: index: does aString occur at character position index? */
static PrimResult p_includes_at(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1]) || !is_int(a[2])) return prim_fail(a, "includes:at: needs a String and an Integer");
    int64_t i = int_val(a[2]);
    bool yes = false;
    if (i >= 1 && i <= (int64_t)str_char_len(a[0]) + 1) {
        const char *p = str_bytes(a[0]);
        size_t at = str_char_offset(a[0], (size_t)(i - 1)), lt = str_len(a[1]), ls = str_len(a[0]), end = at;
        yes = at + lt <= ls && memcmp(p + at, str_bytes(a[1]), lt) == 0;
        /* and it ends where a character does, as indexOf:'s occurrences */
        while (yes && end < at + lt) end += str_char_size(p + end, ls - end);
        yes = yes && end == at + lt;
    }
    a[0] = bool_value(yes);
    return PRIM_OK;
}

/* A String or Symbol equals a String or Symbol with the same characters (as in SOM). */
static PrimResult p_eq(Value *a, uint32_t n)
{
    (void)n;
    Value x = a[0], y = a[1];
    bool eq = x == y;
    if (!eq && is_string_like(y))
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

/* The code point of the character at p, of size k (str_char_size); a byte that starts
 * no sequence stands for itself (as Latin-1). */
static wint_t char_code(const unsigned char *p, size_t k)
{
    static const unsigned char lead_bits[5] = {0, 0xff, 0x1f, 0x0f, 0x07};
    wint_t c = p[0] & lead_bits[k];
    for (size_t i = 1; i < k; i++) c = c << 6 | (p[i] & 0x3f);
    return c;
}

/* Every character satisfies pred (false for the empty string). Characters
 * beyond ASCII are split as every primitive splits them (str_char_size) and
 * classified by the C.UTF-8 locale that main sets for LC_CTYPE, so that
 * 'aOoöéÉíä' isLetters. */
static PrimResult all_chars(Value *a, int (*pred)(wint_t))
{
    const char *s = str_bytes(a[0]);
    size_t l = str_len(a[0]), i = 0;
    bool ok = l > 0;
    while (i < l && ok) {
        size_t k = str_char_size(s + i, l - i);
        ok = pred(char_code((const unsigned char *)s + i, k)) != 0;
        i += k;
    }
    a[0] = bool_value(ok);
    return PRIM_OK;
}
static int is_white(wint_t c) { return iswspace(c); }
static int is_letter(wint_t c) { return iswalpha(c); }
static int is_digit(wint_t c) { return c >= '0' && c <= '9'; }
static PrimResult p_isWhite(Value *a, uint32_t n) { (void)n; return all_chars(a, is_white); }
static PrimResult p_isLetters(Value *a, uint32_t n) { (void)n; return all_chars(a, is_letter); }
static PrimResult p_isDigits(Value *a, uint32_t n) { (void)n; return all_chars(a, is_digit); }

static PrimResult p_asString(Value *a, uint32_t n)
{
    (void)n;
    if (obj_class_index(as_obj(a[0])) != CLS_STRING) a[0] = str_new(str_bytes(a[0]), str_len(a[0]));
    return PRIM_OK;
}

static PrimResult p_asSymbol(Value *a, uint32_t n) { (void)n; a[0] = sym_intern(str_bytes(a[0]), str_len(a[0])); return PRIM_OK; }

static PrimResult p_asDouble(Value *a, uint32_t n)
{
    (void)n;
    char *end;
    const char *s = str_bytes(a[0]);
    double d = strtod(s, &end);
    a[0] = (end == s || *end) ? VM.nil : double_new(d);
    return PRIM_OK;
}

/* The characters in reverse order (a multi-byte character stays whole). */
static PrimResult p_reverse(Value *a, uint32_t n)
{
    (void)n;
    size_t l = str_len(a[0]), chars = str_char_len(a[0]);
    Value r = str_alloc(l);
    char *d = str_bytes(r) + l;
    for (size_t c = 0; c < chars; c++) {
        size_t from = str_char_offset(a[0], c), to = str_char_offset(a[0], c + 1);
        d -= to - from;
        memcpy(d, str_bytes(a[0]) + from, to - from);
    }
    a[0] = r;
    return PRIM_OK;
}

/* ASCII letters change case; other bytes are copied. */
static PrimResult map_bytes(Value *a, int (*f)(int))
{
    size_t l = str_len(a[0]);
    Value r = str_alloc(l);
    char *d = str_bytes(r);
    const char *s = str_bytes(a[0]);
    for (size_t i = 0; i < l; i++) d[i] = (unsigned char)s[i] < 0x80 ? (char)f((unsigned char)s[i]) : s[i];
    a[0] = r;
    return PRIM_OK;
}
/* Bytes, not characters: a protocol (HTTP's Content-Length) counts bytes, and a
 * byte count must not depend on how the bytes decode. */
static PrimResult p_byteLength(Value *a, uint32_t n) { (void)n; a[0] = int_value((int64_t)str_len(a[0])); return PRIM_OK; }

/* Bytes start..end (1-based, inclusive; end = start - 1 answers ''), which may cut a
 * character in two: a read from a socket does too. */
static PrimResult p_bytesFromTo(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1]) || !is_int(a[2])) return prim_fail(a, "bytesFrom:to: needs Integers");
    int64_t start = int_val(a[1]), end = int_val(a[2]), len = (int64_t)str_len(a[0]);
    if (start < 1 || end > len || end < start - 1) return prim_fail(a, "bytesFrom:to: out of bounds");
    a[0] = str_new(str_bytes(a[0]) + start - 1, (size_t)(end - start + 1));
    return PRIM_OK;
}

static PrimResult p_upper(Value *a, uint32_t n) { (void)n; return map_bytes(a, toupper); }
static PrimResult p_lower(Value *a, uint32_t n) { (void)n; return map_bytes(a, tolower); }

const PrimDef prims_string[] = {
    {"String", "concatenate:", p_concat}, {"String", "length", p_length}, {"String", "charAt:", p_charAt},
    {"String", "primSubstringFrom:to:", p_substring}, {"String", "indexOf:startingAt:", p_indexOf_startingAt},
    {"String", "includes:at:", p_includes_at},
    {"String", "=", p_eq}, {"String", "hashcode", p_hash}, {"String", "isWhiteSpace", p_isWhite},
    {"String", "isLetters", p_isLetters}, {"String", "isDigits", p_isDigits},
    {"String", "asString", p_asString}, {"String", "asSymbol", p_asSymbol}, {"String", "asDouble", p_asDouble},
    {"String", "reverse", p_reverse}, {"String", "asUppercase", p_upper}, {"String", "asLowercase", p_lower},
    {"String", "byteLength", p_byteLength}, {"String", "bytesFrom:to:", p_bytesFromTo},
    {"Symbol", "asString", p_asString},
    {NULL, NULL, NULL},
};

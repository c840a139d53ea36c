// SPDX-License-Identifier: BSD-2-Clause
/* symbol.c - the symbol table (open addressing over permanent Symbol objects). */
#include "symbol.h"
#include "vm.h"

#include <stdlib.h>

static Value *table;
static size_t tableCap, tableCount;
WellKnownSymbols SYM;

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) { h ^= (uint8_t)p[i]; h *= 1099511628211ull; }
    return h;
}

static void grow(void)
{
    size_t ncap = tableCap ? tableCap * 2 : 1024;
    Value *nt = vm_xcalloc(ncap, sizeof(Value));
    for (size_t i = 0; i < tableCap; i++) {
        Value s = table[i];
        if (!s) continue;
        size_t j = hash_bytes(str_bytes(s), str_len(s)) & (ncap - 1);
        while (nt[j]) j = (j + 1) & (ncap - 1);
        nt[j] = s;
    }
    free(table);
    table = nt;
    tableCap = ncap;
}

Value sym_intern(const char *bytes, size_t len)
{
    if ((tableCount + 1) * 2 > tableCap) grow();
    size_t j = hash_bytes(bytes, len) & (tableCap - 1);
    for (; table[j]; j = (j + 1) & (tableCap - 1)) {
        Value s = table[j];
        if (str_len(s) == len && memcmp(str_bytes(s), bytes, len) == 0) return s;
    }
    Value s = str_new_perm(bytes, len);
    as_obj(s)->hdr = (as_obj(s)->hdr & ~(uint64_t)HDR_CLASS_MASK) | CLS_SYMBOL;
    table[j] = s;
    tableCount++;
    return s;
}

Value sym_intern_cstr(const char *s) { return sym_intern(s, strlen(s)); }

int sym_num_args(Value sym)
{
    const char *s = str_bytes(sym);
    size_t n = str_len(sym);
    if (n == 0) return 0;
    if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return 1;
    int colons = 0;
    for (size_t i = 0; i < n; i++) colons += s[i] == ':';
    return colons;
}

void sym_init(void)
{
    SYM.doesNotUnderstand = sym_intern_cstr("doesNotUnderstand:arguments:");
    SYM.escapedBlock = sym_intern_cstr("escapedBlock:");
    SYM.unknownGlobal = sym_intern_cstr("unknownGlobal:");
    SYM.initialize = sym_intern_cstr("initialize:");
    SYM.plus = sym_intern_cstr("+");
    SYM.minus = sym_intern_cstr("-");
    SYM.times = sym_intern_cstr("*");
    SYM.lt = sym_intern_cstr("<");
    SYM.gt = sym_intern_cstr(">");
    SYM.le = sym_intern_cstr("<=");
    SYM.ge = sym_intern_cstr(">=");
    SYM.eq = sym_intern_cstr("=");
    SYM.ne = sym_intern_cstr("<>");
    SYM.mod = sym_intern_cstr("%");
    SYM.div = sym_intern_cstr("/");
    SYM.fdiv = sym_intern_cstr("//");
    SYM.sqrt = sym_intern_cstr("sqrt");
    SYM.bitAnd = sym_intern_cstr("&");
    SYM.logicalAnd = sym_intern_cstr("&&");
    SYM.logicalOr = sym_intern_cstr("||");
    SYM.at = sym_intern_cstr("at:");
    SYM.atPut = sym_intern_cstr("at:put:");
}

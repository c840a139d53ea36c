// SPDX-License-Identifier: BSD-2-Clause
/* globals.c - the global namespace (hash of symbol -> index into one growable table). */
#include "globals.h"
#include "gc.h"
#include "object.h"
#include "vm.h"

#include <stdlib.h>

Global *globals;
static uint32_t count, cap;
static uint32_t *hashIdx; /* open addressing: index+1, 0 = empty */
static uint32_t hashCap;

static uint32_t h(Value sym) { return (uint32_t)((sym >> 3) * 2654435761u); }

static void rehash(void)
{
    uint32_t ncap = hashCap ? hashCap * 2 : 512;
    free(hashIdx);
    hashIdx = vm_xcalloc(ncap, sizeof(uint32_t));
    hashCap = ncap;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t j = h(globals[i].name) & (hashCap - 1);
        while (hashIdx[j]) j = (j + 1) & (hashCap - 1);
        hashIdx[j] = i + 1;
    }
}

static void scan_roots(GCVisitFn visit)
{
    for (uint32_t i = 0; i < count; i++) visit(&globals[i].value);
}

void globals_init(void)
{
    rehash();
    gc_add_root_scanner(scan_roots, false);
}

uint32_t globals_index(Value name)
{
    uint32_t j = h(name) & (hashCap - 1);
    for (; hashIdx[j]; j = (j + 1) & (hashCap - 1))
        if (globals[hashIdx[j] - 1].name == name) return hashIdx[j] - 1;
    if (count == 65535) vm_fatal("too many globals");
    if (count == cap) {
        cap = cap ? cap * 2 : 256;
        globals = vm_xrealloc(globals, cap * sizeof(Global));
    }
    globals[count] = (Global){name, VM.nil, false};
    hashIdx[j] = ++count;
    if (count * 2 > hashCap) rehash();
    return count - 1;
}

void globals_define(Value name, Value value)
{
    uint32_t i = globals_index(name); /* may grow the table: index first */
    globals[i].value = value;
    globals[i].defined = true;
}

bool globals_lookup(Value name, Value *out)
{
    uint32_t i = globals_index(name);
    if (globals[i].defined) *out = globals[i].value;
    return globals[i].defined;
}

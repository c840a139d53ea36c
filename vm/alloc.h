// SPDX-License-Identifier: BSD-2-Clause
/* alloc.h - the one allocator: every heap object (the interpreter's blocks and contexts,
 * and everything obj_new makes) is born here. The fast path bumps eden's pointer and
 * writes the header; the exact allocation probe's gate follows (probes.h). The slow path
 * (object.c) takes what the fast path cannot: eden's limit reached, which is also where
 * the allocation sampler's next point stops the fast path, and the objects whose size
 * needs an overflow word. */
#ifndef SQVM_ALLOC_H
#define SQVM_ALLOC_H

#include "gc.h"
#include "object.h"
#include "probes.h"

/* The bytes an object of numSlots body slots takes: the header, at least one body
 * word (a forwarding pointer must fit), and the overflow word of a large count. */
static inline size_t obj_alloc_bytes(size_t numSlots)
{
    return (1 + (numSlots ? numSlots : 1) + (numSlots >= HDR_SLOTS_OVERFLOW)) * 8;
}

static inline uint64_t obj_header(uint32_t classIndex, unsigned format, size_t numSlots)
{
    return (uint64_t)classIndex | ((uint64_t)format << HDR_FMT_SHIFT) | ((uint64_t)numSlots << HDR_SLOTS_SHIFT);
}

/* Out of line (object.c): the allocation the fast path cannot make. It remembers a
 * pointer object born old (C code may fill it with young objects without a barrier)
 * and fires the sampler's probe when this allocation crossed its point. */
Obj *obj_alloc_slow(uint32_t classIndex, unsigned format, size_t numSlots);

/* Pointer slots are filled with nil; raw formats with zero. */
static inline void obj_fill_body(Obj *o, unsigned format, size_t numSlots)
{
    if (format == FMT_FIXED || format == FMT_INDEXABLE) {
        Value nil = VM.nil;
        for (size_t i = 0; i < numSlots; i++) o->slots[i] = nil;
        if (!numSlots) o->slots[0] = 0;
    } else {
        memset(o->slots, 0, (numSlots ? numSlots : 1) * 8);
    }
}

/* A new object of numSlots slots. filled: its slots are nil (pointer formats) or
 * zero (obj_new); else they are not initialised, and the caller fills every one
 * before the next safe point (the interpreter's blocks and contexts). The probe's
 * gate comes last, where only the object is live: the cold call costs the hot path
 * no saved registers. */
static inline Obj *obj_alloc(uint32_t classIndex, unsigned format, size_t numSlots, bool filled)
{
    size_t bytes = obj_alloc_bytes(numSlots);
    char *p = gc_top;
    Obj *o;
    vm_counters.allocations++;
    if (LIKELY((size_t)(gc_limit - p) >= bytes) && LIKELY(numSlots < HDR_SLOTS_OVERFLOW)) {
        gc_top = p + bytes;
        o = (Obj *)p;
        o->hdr = obj_header(classIndex, format, numSlots);
    } else {
        o = obj_alloc_slow(classIndex, format, numSlots);
    }
    if (filled) obj_fill_body(o, format, numSlots);
    SQ_IF_ALLOC_PROBE(probe_object_alloc(o));
    return o;
}

#endif

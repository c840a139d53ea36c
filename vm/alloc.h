// SPDX-License-Identifier: BSD-2-Clause
/* alloc.h - the allocation fast path of the interpreter's own small objects (blocks and
 * captured-variable contexts): a bump of eden's pointer and the header, with the slow
 * path, the write-barrier bookkeeping of an object born old, and the allocation
 * sampler out of line. Everything else allocates with obj_new (object.c). */
#ifndef SQVM_ALLOC_H
#define SQVM_ALLOC_H

#include "gc.h"
#include "object.h"
#include "probes.h"

/* For 1..1022 slots whose caller fills every slot before the next safe point (the
 * slots are not initialised). */
static inline Obj *obj_alloc_small(uint32_t classIndex, unsigned format, size_t numSlots)
{
    size_t bytes = (1 + numSlots) * 8;
    uint64_t hdr = (uint64_t)classIndex | ((uint64_t)format << HDR_FMT_SHIFT) | ((uint64_t)numSlots << HDR_SLOTS_SHIFT);
    char *p = gc_top;
    Obj *o;
    vm_counters.allocations++;
    if (LIKELY((size_t)(gc_limit - p) >= bytes)) {
        gc_top = p + bytes;
        o = (Obj *)p;
        o->hdr = hdr;
        return o;
    }
    o = gc_alloc_slow(bytes);
    o->hdr = hdr;
    if (!gc_is_young((Value)o) && format <= FMT_INDEXABLE) gc_remember(o);
    if (UNLIKELY(gc_sample_due)) probe_alloc_sample(o, bytes);
    return o;
}

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* gc.h - the object memory: young space with a copying scavenger, old space with mark-sweep,
 * a permanent space, the write barrier and collection statistics. */
#ifndef SQVM_GC_H
#define SQVM_GC_H

#include "common.h"

/* A root visitor updates one slot in place (the object may have moved). */
typedef void (*GCVisitFn)(Value *slot);
/* A root scanner calls visit on every root slot it owns. */
typedef void (*GCRootScanner)(GCVisitFn visit);

typedef enum { GC_YOUNG = 0, GC_FULL = 1 } GCKind;

/* The collector's flags in an object's header word (bits 26-31; object.h has the rest). */
#define GCF_FORWARDED (1ull << 26) /* body slot 0 holds the new address */
#define GCF_PERM (1ull << 27)      /* permanent space: never moves, never freed */
#define GCF_MARK (1ull << 28)      /* reached by the current full collection */
#define GCF_AGE_SHIFT 29           /* bits 29-30: scavenges survived (young objects) */
#define GCF_AGE_MASK (3ull << 29)
#define GCF_REMEMBERED (1ull << 31) /* in the remembered set (old and permanent objects) */

/* What one collection did: handed to the probe hooks and summed into GCStats. */
typedef struct GCEvent {
    GCKind kind;
    uint64_t seq;              /* 1, 2, 3... per kind */
    size_t youngBefore, youngAfter;   /* bytes in use in young space */
    size_t oldBefore, oldAfter;       /* bytes in use in old space (incl. large objects) */
    size_t survivedBytes;      /* copied into a survivor space */
    size_t tenuredBytes;       /* promoted into old space */
    size_t freedBytes;         /* reclaimed: young garbage plus (full) old garbage */
    size_t rememberedCount;    /* remembered-set size after the collection */
    uint64_t pauseNs;
} GCEvent;

typedef struct GCStats {
    uint64_t youngCount, fullCount;
    uint64_t youngPauseNs, fullPauseNs;
    uint64_t maxYoungPauseNs, maxFullPauseNs;
    uint64_t bytesAllocated;   /* young + direct old allocations since start */
    uint64_t bytesTenured;
    size_t oldBytes, oldPeak;  /* in use now; highest seen */
    size_t heapBytes;          /* memory held from the system (young + old) */
} GCStats;

extern GCStats gc_stats_data; /* read through gc_stats(); global for sqvm_debug_offsets */
extern char *gc_eden;         /* eden's start (it never moves) */
extern uint8_t gc_running;    /* nonzero while a collection runs (sqvm_debug_offsets) */

typedef struct GCConfig {
    size_t youngBytes;   /* eden size */
    size_t maxHeapBytes; /* ceiling on old space after a full collection */
    bool stress;         /* collect at every safe point */
    int fullEvery;       /* with stress: a full collection every N young ones (0 = never) */
    bool verify;         /* check the heap after every collection */
} GCConfig;

void gc_init(const GCConfig *cfg);
/* The --heap limit in bytes (0: none). */
size_t gc_heap_limit(void);
/* fullOnly scanners (method literals: permanent objects only) are skipped by scavenges. */
void gc_add_root_scanner(GCRootScanner scanner, bool fullOnly);
/* Weak references (io.c's table of open handles): once a collection has found every
 * live object, and before it frees the dead, the weak scanner calls alive on each weak
 * slot it owns; alive updates the slot (the object may have moved) and answers whether
 * the object survived. Not roots: the scanner decides what a dead referent means. */
typedef bool (*GCAliveFn)(Value *slot);
void gc_set_weak_scanner(void (*scanner)(GCAliveFn alive));

/* ---- Allocation ----
 * Allocation never collects: it only sets gc_pending, which the interpreter
 * polls at safe points (activations and backward jumps), where every live value is
 * in a frame, a global or a registered root. So C code never holds an object
 * across a collection, and needs no root protection. */
extern char *gc_top, *gc_limit;
void *gc_alloc_slow(size_t bytes);
void *gc_alloc_perm(size_t bytes);

static inline void *gc_alloc(size_t bytes)
{
    char *p = gc_top;
    if (LIKELY((size_t)(gc_limit - p) >= bytes)) {
        gc_top = p + bytes;
        return p;
    }
    return gc_alloc_slow(bytes);
}

/* ---- The write barrier ----
 * Storing a young object into an old (or permanent) one records the old one in
 * the remembered set, whose members are roots for the next scavenge. */
extern uintptr_t gc_young_start, gc_young_size;
void gc_remember(void *obj);

static inline bool gc_is_young(Value v)
{
    return is_ptr(v) && ((uintptr_t)v - gc_young_start) < gc_young_size;
}

static inline void gc_write_barrier(void *obj, Value v)
{
    if (UNLIKELY(gc_is_young(v)) && !gc_is_young((Value)obj) &&
        !(*(uint64_t *)obj & GCF_REMEMBERED))
        gc_remember(obj);
}

/* ---- Collections ---- */
void gc_collect(void);          /* what gc_pending asked for: young, or full when old space is due */
void gc_young_collect(void);
void gc_full_collect(void);
const GCStats *gc_stats(void);
void gc_print_stats(void);
uint32_t gc_next_hash(void);
void gc_verify(const char *when);

#endif

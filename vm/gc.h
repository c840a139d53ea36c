/* gc.h - the object memory: allocation, the permanent space and the copying collector. */
#ifndef SQVM_GC_H
#define SQVM_GC_H

#include "common.h"

/* A root visitor updates one slot in place (the object may have moved). */
typedef void (*GCVisitFn)(Value *slot);
/* A root scanner calls visit on every root slot it owns. */
typedef void (*GCRootScanner)(GCVisitFn visit);

typedef struct GCStats {
    uint64_t collections;
    uint64_t totalPauseNs, maxPauseNs;
    uint64_t bytesAllocated;     /* since start, collected heap only */
    uint64_t bytesSurvived;      /* copied, summed over collections */
    size_t liveBytes;            /* after the last collection */
    size_t heapBytes;            /* chunks currently held */
} GCStats;

typedef struct GCConfig {
    size_t youngBytes;   /* allocation budget between collections */
    size_t maxHeapBytes; /* ceiling on live data after a collection */
    bool stress;         /* collect at every safe point */
} GCConfig;

void gc_init(const GCConfig *cfg);
void gc_add_root_scanner(GCRootScanner scanner);

/* Allocation never collects: it only sets gc_pending, which the interpreter
 * polls at safe points (sends and backward jumps), where every live value is
 * in a frame, a global or a registered root. */
void *gc_alloc(size_t bytes);
void *gc_alloc_perm(size_t bytes);
extern bool gc_pending;

void gc_collect(void);
void gc_full_collect(void);
const GCStats *gc_stats(void);
void gc_print_stats(void);
uint32_t gc_next_hash(void);

#endif

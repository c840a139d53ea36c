// SPDX-License-Identifier: BSD-2-Clause
/* gc.c - generational memory: a copying scavenger for young objects, mark-sweep over
 * size-segregated pages for old ones, and a permanent space that is never collected.
 *
 * Young space is one contiguous mapping: [eden | survivor 0 | survivor 1]. Objects are
 * born in eden by bumping gc_top; a scavenge copies the live ones into the empty
 * survivor space, or into old space once they have survived TENURE_AGE scavenges (or
 * when the survivor space is full). Old objects live in 64 KiB pages of equal-sized
 * cells, one size class per page, or, above MAX_CELL bytes, in individually allocated
 * large objects. A full collection first tenures everything young, then marks from
 * the roots with an explicit stack and sweeps every page into per-class free lists.
 * Old objects never move; size segregation keeps fragmentation bounded (a freed cell
 * is reused by the next object of its class) and a page whose cells all die goes back
 * to the system. See docs/ARCHITECTURE.md. */
#include "gc.h"
#include "interrupt.h"
#include "object.h"
#include "probes.h"
#include "vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define TENURE_AGE 2
#define PAGE_BYTES (64u << 10)
#define MAX_CELL 8192u
#define MAX_SCANNERS 16
#define NUM_CLASSES 40

typedef struct Page {
    struct Page *next;
    uint32_t cellSize, sizeClass;
    char *cells, *end;
} Page;

typedef struct Large {
    struct Large *next;
    size_t bytes;
    uint64_t pad;            /* keeps the object 16-byte aligned after the 24-byte header */
    char data[];
} Large;

typedef struct Chunk {
    struct Chunk *next;
    char *top, *end;
    char data[];
} Chunk;

char *gc_top, *gc_limit;
uintptr_t gc_young_start, gc_young_size;

static struct {
    GCConfig cfg;
    GCRootScanner scanners[MAX_SCANNERS];
    bool fullOnly[MAX_SCANNERS];
    int numScanners;
    uint32_t hashSeed;
    /* young space */
    char *eden, *edenEnd, *softLimit;
    char *edenLimit;          /* softLimit, or edenEnd once a collection is pending */
    char *syncTop;            /* gc_top when the allocation sampler last saw it */
    char *surv[2];
    size_t survBytes;
    int from;                 /* surv[from] holds the survivors of the last scavenge */
    char *survTop;
    char *toTop, *toEnd;      /* during a scavenge: the to-survivor space */
    bool tenureAll;
    /* remembered set: old and permanent objects that may point into young space */
    Obj **rem;
    size_t nrem, caprem;
    /* objects promoted during a scavenge, still to be scanned */
    Obj **promoted;
    size_t npromoted, cappromoted;
    /* old space */
    Page *pages;
    Obj *freeList[NUM_CLASSES];
    uint32_t classSize[NUM_CLASSES];
    int numSizeClasses;
    Large *large;
    size_t oldBytes, fullThreshold;
    bool fullPending;
    uint64_t youngSinceFull;
    /* full collection mark stack */
    Obj **mark;
    size_t nmark, capmark;
    /* permanent space */
    Chunk *perm;
    size_t sizeBefore;
} heap;

/* The old-space size at which the next full collection is due: want (twice what survived
 * the last one), but at least 4 young spaces or 32 MiB, and at most --heap. */
static void set_full_threshold(size_t want)
{
    size_t floor = 4 * heap.cfg.youngBytes > (32u << 20) ? 4 * heap.cfg.youngBytes : (32u << 20);
    heap.fullThreshold = want > floor ? want : floor;
    if (heap.cfg.maxHeapBytes && heap.fullThreshold > heap.cfg.maxHeapBytes) heap.fullThreshold = heap.cfg.maxHeapBytes;
}

/* Global (not in heap) so that sqvm_debug_offsets can give outside readers their addresses. */
GCStats gc_stats_data;
char *gc_eden;

static void set_limit(uint64_t budget);

/* ---- Set-up ---- */

static void init_size_classes(void)
{
    /* 16..128 by 16, then four steps per doubling up to MAX_CELL */
    int n = 0;
    for (uint32_t s = 16; s <= 128; s += 16) heap.classSize[n++] = s;
    for (uint32_t base = 128; base < MAX_CELL; base *= 2)
        for (uint32_t k = 1; k <= 4; k++) heap.classSize[n++] = base + base * k / 4;
    heap.numSizeClasses = n;
}

void gc_init(const GCConfig *cfg)
{
    heap.cfg = *cfg;
    if (heap.cfg.youngBytes < (256u << 10)) heap.cfg.youngBytes = 256u << 10;
    heap.cfg.youngBytes = (heap.cfg.youngBytes + 4095) & ~(size_t)4095;
    heap.survBytes = ((heap.cfg.youngBytes / 4) + 4095) & ~(size_t)4095;
    size_t total = heap.cfg.youngBytes + 2 * heap.survBytes;
    /* Not populated up front: that zeroed all of it at every start (12 MiB: most of a
     * short script's start-up). Eden's pages are faulted in as the program first
     * allocates into them, outside any pause; a survivor space's as the first
     * collections copy into it, in those pauses, once (live bytes, not the space). */
    char *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) vm_out_of_memory("cannot map the young space");
    heap.eden = gc_eden = m;
    heap.edenEnd = m + heap.cfg.youngBytes;
    size_t reserve = heap.cfg.youngBytes / 8 < (64u << 10) ? heap.cfg.youngBytes / 8 : (64u << 10);
    heap.softLimit = heap.edenEnd - reserve;
    heap.surv[0] = heap.edenEnd;
    heap.surv[1] = heap.edenEnd + heap.survBytes;
    heap.from = 0;
    heap.survTop = heap.surv[0];
    gc_young_start = (uintptr_t)m;
    gc_young_size = total;
    gc_top = heap.syncTop = heap.eden;
    heap.edenLimit = heap.softLimit;
    gc_stats_data.heapBytes = total;
    heap.hashSeed = 2463534242u;
    init_size_classes();
    set_limit(probes_alloc_budget(0, 0));
    set_full_threshold(0);
}

void gc_add_root_scanner(GCRootScanner scanner, bool fullOnly)
{
    if (heap.numScanners == MAX_SCANNERS) vm_fatal("too many GC root scanners");
    heap.fullOnly[heap.numScanners] = fullOnly;
    heap.scanners[heap.numScanners++] = scanner;
}

/* xorshift32: cheap, well-spread identity hashes; never 0 (0 means "unassigned"). */
uint32_t gc_next_hash(void)
{
    uint32_t x = heap.hashSeed;
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    heap.hashSeed = x;
    x &= HDR_HASH_MASK;
    return x ? x : 1;
}

/* ---- Old space allocation ---- */

static int size_class(size_t bytes)
{
    int lo = 0, hi = heap.numSizeClasses - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (heap.classSize[mid] >= bytes) hi = mid; else lo = mid + 1;
    }
    return lo;
}

static void new_page(int sc)
{
    Page *p = malloc(sizeof(Page) + PAGE_BYTES + 16);
    if (!p) vm_out_of_memory("cannot allocate an old-space page");
    p->cellSize = heap.classSize[sc];
    p->sizeClass = (uint32_t)sc;
    p->cells = (char *)(((uintptr_t)(p + 1) + 15) & ~(uintptr_t)15);
    uint32_t ncells = PAGE_BYTES / p->cellSize;
    p->end = p->cells + (size_t)ncells * p->cellSize;
    /* thread the cells onto the free list, lowest address first */
    for (char *c = p->end - p->cellSize; c >= p->cells; c -= p->cellSize) {
        Obj *o = (Obj *)c;
        o->hdr = 0;
        o->slots[0] = (Value)heap.freeList[sc];
        heap.freeList[sc] = o;
    }
    p->next = heap.pages;
    heap.pages = p;
    gc_stats_data.heapBytes += PAGE_BYTES;
}

static void note_old_growth(size_t bytes)
{
    heap.oldBytes += bytes;
    if (heap.oldBytes > gc_stats_data.oldPeak) gc_stats_data.oldPeak = heap.oldBytes;
    if (heap.oldBytes > heap.fullThreshold && !heap.fullPending) {
        heap.fullPending = true;
        gc_pending = true;
    }
}

size_t gc_heap_limit(void) { return heap.cfg.maxHeapBytes; }

static void *old_alloc(size_t bytes)
{
    if (bytes > MAX_CELL) {
        /* Never ask malloc for more than the heap may hold: Array new: 10 ** 12 is a
         * Smalltalk error naming the limit, not a terabyte request. */
        if (heap.cfg.maxHeapBytes && bytes > heap.cfg.maxHeapBytes) vm_object_too_large(bytes, heap.cfg.maxHeapBytes);
        Large *l = malloc(sizeof(Large) + bytes);
        if (!l) vm_out_of_memory("cannot allocate a large object");
        l->bytes = bytes;
        l->next = heap.large;
        heap.large = l;
        gc_stats_data.heapBytes += bytes;
        note_old_growth(bytes);
        return l->data;
    }
    int sc = size_class(bytes);
    if (!heap.freeList[sc]) new_page(sc);
    Obj *o = heap.freeList[sc];
    heap.freeList[sc] = (Obj *)o->slots[0];
    note_old_growth(heap.classSize[sc]);
    return o;
}

/* ---- Allocation entry points ---- */

/* The fast path's limit: eden's, or sooner when the allocation sampler's budget ends
 * first (probes.h: the sampler wants to see the allocation that crosses its point). */
static void set_limit(uint64_t budget)
{
    char *lim = heap.cfg.stress ? gc_top : heap.edenLimit;
    if (budget < (uint64_t)(lim - gc_top)) lim = gc_top + budget;
    gc_limit = lim;
    heap.syncTop = gc_top;
}

/* The fast path's limit was reached: eden's soft limit (ask for a collection at the
 * next safe point and go on in the reserve), the sampler's budget, or a large
 * object. Past the reserve, and for large objects, allocate in old space, where
 * obj_alloc_slow remembers the new object. */
void *gc_alloc_slow(size_t bytes)
{
    uint64_t budget = probes_alloc_budget((uint64_t)(gc_top - heap.syncTop), bytes);
    if (heap.cfg.stress) gc_pending = true;
    char *p = gc_top;
    /* Young unless it is big against eden. An object over MAX_CELL that dies young (a
     * benchmark's scratch Array of 5000 slots) is then reclaimed by the scavenge, in eden's
     * pages that are already mapped, instead of a malloc and free whose fresh pages each
     * cost a fault (Sieve 600: 6,000 faults, a fifth of its CPU time, in the kernel). */
    if (bytes > heap.cfg.youngBytes / 8) {
#ifdef SQVM_FUZZ
        /* filling a large object is work the fuzz budget counts (about what 16 bytes
         * cost against a safe point), paid before it is done: a program that makes
         * huge objects ends at the same place on every machine */
        interrupt_fuzz_spend(bytes / 16);
#endif
        gc_stats_data.bytesAllocated += bytes;
        p = old_alloc(bytes);
    } else if ((size_t)(heap.edenLimit - gc_top) >= bytes) {
        gc_top += bytes;
    } else if ((size_t)(heap.edenEnd - gc_top) >= bytes) {
        gc_pending = true;
        heap.edenLimit = heap.edenEnd;
        gc_top += bytes;
    } else {
        gc_pending = true;
        gc_stats_data.bytesAllocated += bytes;
        p = old_alloc(bytes);
    }
    set_limit(budget);
    return p;
}

void *gc_alloc_perm(size_t bytes)
{
    Chunk *c = heap.perm;
    if (!c || (size_t)(c->end - c->top) < bytes) {
        size_t size = bytes > (1u << 20) ? bytes : (1u << 20);
        c = malloc(sizeof(Chunk) + size);
        if (!c) vm_out_of_memory("cannot allocate permanent space");
        c->top = c->data;
        c->end = c->data + size;
        c->next = heap.perm;
        heap.perm = c;
    }
    void *p = c->top;
    c->top += bytes;
    return p;
}

void gc_remember(void *obj)
{
    Obj *o = obj;
    if (o->hdr & GCF_REMEMBERED) return;
    if (heap.nrem == heap.caprem) {
        heap.caprem = heap.caprem ? heap.caprem * 2 : 1024;
        heap.rem = vm_xrealloc(heap.rem, heap.caprem * sizeof(Obj *));
    }
    o->hdr |= GCF_REMEMBERED;
    heap.rem[heap.nrem++] = o;
}

/* ---- Object walking ---- */

static inline size_t body_words(const Obj *o)
{
    size_t n = obj_num_slots(o);
    return n ? n : 1;
}

static inline size_t obj_total_bytes(const Obj *o)
{
    size_t words = 1 + body_words(o);
    if ((o->hdr >> HDR_SLOTS_SHIFT) == HDR_SLOTS_OVERFLOW) words++;
    return words * 8;
}

/* Objects laid end to end (young spaces, permanent chunks): the header of the
 * object whose first word is at p. */
static inline Obj *obj_at(char *p)
{
    uint64_t w = *(uint64_t *)p;
    if ((w >> HDR_SLOTS_SHIFT) == HDR_SLOTS_OVERFLOW) return (Obj *)(p + 8);
    return (Obj *)p;
}

static inline char *obj_start(Obj *o)
{
    return (o->hdr >> HDR_SLOTS_SHIFT) == HDR_SLOTS_OVERFLOW ? (char *)o - 8 : (char *)o;
}

static inline bool has_pointers(const Obj *o)
{
    unsigned f = obj_format(o);
    return f == FMT_FIXED || f == FMT_INDEXABLE;
}

/* ---- Scavenging (the incremental, young collection) ---- */

static void push_promoted(Obj *o)
{
    if (heap.npromoted == heap.cappromoted) {
        heap.cappromoted = heap.cappromoted ? heap.cappromoted * 2 : 1024;
        heap.promoted = vm_xrealloc(heap.promoted, heap.cappromoted * sizeof(Obj *));
    }
    heap.promoted[heap.npromoted++] = o;
}

static size_t evtSurvived, evtTenured;

static Obj *copy_young(Obj *o)
{
    if (o->hdr & GCF_FORWARDED) return (Obj *)o->slots[0];
    size_t bytes = obj_total_bytes(o);
    uint64_t age = (o->hdr & GCF_AGE_MASK) >> GCF_AGE_SHIFT;
    char *dst;
    bool tenure = heap.tenureAll || age + 1 >= TENURE_AGE || (size_t)(heap.toEnd - heap.toTop) < bytes;
    if (tenure) {
        dst = old_alloc(bytes);
        evtTenured += bytes;
    } else {
        dst = heap.toTop;
        heap.toTop += bytes;
        evtSurvived += bytes;
    }
    char *src = obj_start(o);
    memcpy(dst, src, bytes);
    Obj *n = (Obj *)(dst + ((char *)o - src));
    n->hdr &= ~(GCF_AGE_MASK | GCF_REMEMBERED);
    if (!tenure) n->hdr |= (age + 1) << GCF_AGE_SHIFT;
    else if (has_pointers(n)) push_promoted(n);
    o->hdr |= GCF_FORWARDED;
    o->slots[0] = (Value)n;
    return n;
}

static void visit_young(Value *slot)
{
    Value v = *slot;
    if (gc_is_young(v)) *slot = (Value)copy_young(as_obj(v));
}

/* Scans an old object's slots; answers whether it still points into young space. */
static bool scan_old_obj(Obj *o)
{
    bool young = false;
    size_t n = obj_num_slots(o);
    for (size_t i = 0; i < n; i++) {
        visit_young(&o->slots[i]);
        young |= gc_is_young(o->slots[i]);
    }
    return young;
}

static void scavenge(void)
{
    char *to = heap.surv[1 - heap.from];
    heap.toTop = to;
    heap.toEnd = to + heap.survBytes;
    heap.npromoted = 0;
    /* Roots: the registered scanners (stacks, globals, ...). */
    for (int i = 0; i < heap.numScanners; i++)
        if (!heap.fullOnly[i]) heap.scanners[i](visit_young);
    /* Roots: the remembered set, rebuilt as we go. */
    Obj **old = heap.rem;
    size_t nold = heap.nrem;
    heap.rem = NULL;
    heap.nrem = heap.caprem = 0;
    for (size_t i = 0; i < nold; i++) {
        Obj *o = old[i];
        o->hdr &= ~GCF_REMEMBERED;
        if (scan_old_obj(o)) gc_remember(o);
    }
    free(old);
    /* Cheney: scan the to-space and the promoted objects until both are done. */
    char *scan = to;
    for (;;) {
        bool progress = false;
        while (scan < heap.toTop) {
            Obj *o = obj_at(scan);
            if (has_pointers(o)) {
                size_t n = obj_num_slots(o);
                for (size_t i = 0; i < n; i++) visit_young(&o->slots[i]);
            }
            scan += obj_total_bytes(o);
            progress = true;
        }
        while (heap.npromoted) {
            Obj *o = heap.promoted[--heap.npromoted];
            if (scan_old_obj(o)) gc_remember(o);
            progress = true;
        }
        if (!progress) break;
    }
    heap.from = 1 - heap.from;
    heap.survTop = heap.toTop;
    gc_stats_data.bytesAllocated += (uint64_t)(gc_top - heap.eden);
    uint64_t budget = probes_alloc_budget((uint64_t)(gc_top - heap.syncTop), 0);
    gc_top = heap.eden;
    heap.edenLimit = heap.softLimit;
    set_limit(budget);
}

static size_t young_used(void)
{
    return (size_t)(gc_top - heap.eden) + (size_t)(heap.survTop - heap.surv[heap.from]);
}

/* ---- Marking and sweeping (the full collection) ---- */

static void push_mark(Obj *o)
{
    if (heap.nmark == heap.capmark) {
        heap.capmark = heap.capmark ? heap.capmark * 2 : 4096;
        heap.mark = vm_xrealloc(heap.mark, heap.capmark * sizeof(Obj *));
    }
    heap.mark[heap.nmark++] = o;
}

static void visit_mark(Value *slot)
{
    Value v = *slot;
    if (!is_ptr(v) || v == 0) return;
    Obj *o = as_obj(v);
    if (o->hdr & (GCF_MARK | GCF_PERM)) return;
    o->hdr |= GCF_MARK;
    if (has_pointers(o)) push_mark(o);
}

static void drain_marks(void)
{
    while (heap.nmark) {
        Obj *o = heap.mark[--heap.nmark];
        size_t n = obj_num_slots(o);
        for (size_t i = 0; i < n; i++) visit_mark(&o->slots[i]);
    }
}

static void mark_from_roots(void)
{
    for (int i = 0; i < heap.numScanners; i++) heap.scanners[i](visit_mark);
    /* Permanent objects are roots: scan every permanent pointer object. */
    for (Chunk *c = heap.perm; c; c = c->next)
        for (char *p = c->data; p < c->top;) {
            Obj *o = obj_at(p);
            if (has_pointers(o)) {
                size_t n = obj_num_slots(o);
                for (size_t i = 0; i < n; i++) visit_mark(&o->slots[i]);
                drain_marks();
            }
            p += obj_total_bytes(o);
        }
    drain_marks();
}

/* Rebuilds every free list; answers the bytes freed. */
static size_t sweep(void)
{
    size_t freed = 0, live = 0;
    for (int i = 0; i < heap.numSizeClasses; i++) heap.freeList[i] = NULL;
    Page **pp = &heap.pages;
    while (*pp) {
        Page *p = *pp;
        Obj *pageFree = NULL, *pageFreeTail = NULL;
        size_t pageLive = 0;
        for (char *c = p->end - p->cellSize; c >= p->cells; c -= p->cellSize) {
            Obj *o = (Obj *)c;
            if (o->hdr & GCF_MARK) {
                o->hdr &= ~GCF_MARK;
                pageLive++;
                continue;
            }
            if (o->hdr != 0) freed += p->cellSize;
            o->hdr = 0;
            o->slots[0] = (Value)pageFree;
            if (!pageFree) pageFreeTail = o;
            pageFree = o;
        }
        if (pageLive == 0) {
            *pp = p->next;
            gc_stats_data.heapBytes -= PAGE_BYTES;
            free(p);
            continue;
        }
        if (pageFree) {
            pageFreeTail->slots[0] = (Value)heap.freeList[p->sizeClass];
            heap.freeList[p->sizeClass] = pageFree;
        }
        live += pageLive * p->cellSize;
        pp = &p->next;
    }
    Large **lp = &heap.large;
    while (*lp) {
        Large *l = *lp;
        Obj *o = obj_at(l->data);
        if (o->hdr & GCF_MARK) {
            o->hdr &= ~GCF_MARK;
            live += l->bytes;
            lp = &l->next;
        } else {
            *lp = l->next;
            freed += l->bytes;
            gc_stats_data.heapBytes -= l->bytes;
            free(l);
        }
    }
    heap.oldBytes = live;
    return freed;
}

/* ---- Weak references ---- */

static void (*weakScanner)(GCAliveFn);

void gc_set_weak_scanner(void (*scanner)(GCAliveFn)) { weakScanner = scanner; }

/* After a scavenge: a young object lives if it was copied; old ones were not looked at. */
static bool alive_after_scavenge(Value *slot)
{
    Value v = *slot;
    if (!gc_is_young(v)) return true;
    if (!(as_obj(v)->hdr & GCF_FORWARDED)) return false;
    *slot = as_obj(v)->slots[0];
    return true;
}

/* After a full collection's marking (its scavenge moved every young survivor out). */
static bool alive_after_mark(Value *slot)
{
    return alive_after_scavenge(slot) && (as_obj(*slot)->hdr & (GCF_MARK | GCF_PERM));
}

/* ---- Collections ---- */

static void finish_event(GCEvent *e, uint64_t t0)
{
    e->pauseNs = vm_now_ns() - t0;
    e->youngAfter = young_used();
    e->oldAfter = heap.oldBytes;
    e->rememberedCount = heap.nrem;
    e->survivedBytes = evtSurvived;
    e->tenuredBytes = evtTenured;
    gc_stats_data.bytesTenured += evtTenured;
    gc_stats_data.oldBytes = heap.oldBytes;
    if (e->kind == GC_YOUNG) {
        gc_stats_data.youngCount++;
        gc_stats_data.youngPauseNs += e->pauseNs;
        if (e->pauseNs > gc_stats_data.maxYoungPauseNs) gc_stats_data.maxYoungPauseNs = e->pauseNs;
        e->seq = gc_stats_data.youngCount;
    } else {
        gc_stats_data.fullCount++;
        gc_stats_data.fullPauseNs += e->pauseNs;
        if (e->pauseNs > gc_stats_data.maxFullPauseNs) gc_stats_data.maxFullPauseNs = e->pauseNs;
        e->seq = gc_stats_data.fullCount;
    }
    if (SQ_GC_END_ENABLED(e->kind)) probe_gc_end(e);
}

/* Nonzero while a collection runs: the running process waits for it (sqvm_debug_offsets'
 * gc_running, for sqprof --wall's gc state). */
uint8_t gc_running;

/* Records point to process names that a collection moves: theirs, and a request's held
 * begin (so that the pause is charged to it), come before its probes. */
static void flush_records(void)
{
    probe_request_gc();
    record_flush_pending();
}

void gc_young_collect(void)
{
    flush_records();
    uint64_t t0 = vm_now_ns();
    gc_running = 1;
    GCEvent e = {.kind = GC_YOUNG, .youngBefore = young_used(), .oldBefore = heap.oldBytes};
    if (SQ_GC_BEGIN_ENABLED(GC_YOUNG)) probe_gc_begin(GC_YOUNG, gc_stats_data.youngCount + 1, young_used(), gc_stats_data.oldBytes);
    evtSurvived = evtTenured = 0;
    heap.tenureAll = false;
    scavenge();
    if (weakScanner) weakScanner(alive_after_scavenge);
    e.freedBytes = e.youngBefore - evtSurvived - evtTenured;
    finish_event(&e, t0);
    gc_running = 0;
    heap.youngSinceFull++;
    if (heap.cfg.verify) gc_verify("after a young collection");
}

void gc_full_collect(void)
{
    flush_records();
    uint64_t t0 = vm_now_ns();
    gc_running = 1;
    GCEvent e = {.kind = GC_FULL, .youngBefore = young_used(), .oldBefore = heap.oldBytes};
    if (SQ_GC_BEGIN_ENABLED(GC_FULL)) probe_gc_begin(GC_FULL, gc_stats_data.fullCount + 1, young_used(), gc_stats_data.oldBytes);
    evtSurvived = evtTenured = 0;
    heap.tenureAll = true;
    scavenge();
    heap.tenureAll = false;
    /* Young space is empty now, so nothing needs remembering. */
    for (size_t i = 0; i < heap.nrem; i++) heap.rem[i]->hdr &= ~GCF_REMEMBERED;
    heap.nrem = 0;
    mark_from_roots();
    if (weakScanner) weakScanner(alive_after_mark);
    size_t freed = sweep();
    e.freedBytes = (e.youngBefore - evtTenured) + freed;
    heap.fullPending = false;
    heap.youngSinceFull = 0;
    set_full_threshold(2 * heap.oldBytes);
    finish_event(&e, t0);
    gc_running = 0;
    if (heap.cfg.verify) gc_verify("after a full collection");
    if (heap.cfg.maxHeapBytes && heap.oldBytes > heap.cfg.maxHeapBytes) vm_heap_exhausted(heap.oldBytes, heap.cfg.maxHeapBytes);
}

void gc_collect(void)
{
    gc_pending = false;
    bool full = heap.fullPending ||
                (heap.cfg.stress && heap.cfg.fullEvery > 0 && heap.youngSinceFull + 1 >= (uint64_t)heap.cfg.fullEvery);
    if (full) gc_full_collect();
    else gc_young_collect();
    if (heap.fullPending) gc_full_collect();
}

const GCStats *gc_stats(void)
{
    gc_stats_data.oldBytes = heap.oldBytes;
    return &gc_stats_data;
}

void gc_print_stats(void)
{
    const GCStats *s = gc_stats();
    fprintf(stderr,
            "gc: young %llu (pause total %.3f ms, max %.3f ms), full %llu (pause total %.3f ms, max %.3f ms); "
            "allocated %llu bytes, tenured %llu bytes, old space %zu bytes (peak %zu), held %zu bytes\n",
            (unsigned long long)s->youngCount, s->youngPauseNs / 1e6, s->maxYoungPauseNs / 1e6,
            (unsigned long long)s->fullCount, s->fullPauseNs / 1e6, s->maxFullPauseNs / 1e6,
            (unsigned long long)(s->bytesAllocated + (uint64_t)(gc_top - heap.eden)),
            (unsigned long long)s->bytesTenured, s->oldBytes, s->oldPeak, s->heapBytes);
}


/* ---- Heap verification (debug; --gc-verify and the stress build) ---- */

static int verifyErrors;
static const char *verifyWhen;

static void verify_fail(const Obj *o, const char *what)
{
    if (verifyErrors++ < 10)
        fprintf(stderr, "gc verify (%s): object %p: %s\n", verifyWhen, (const void *)o, what);
}

static bool valid_header(const Obj *o)
{
    uint32_t ci = obj_class_index(o);
    if (o->hdr & GCF_FORWARDED) return false;
    return ci > 0 && ci < VM.numClasses && VM.classes[ci] != NULL;
}

static void verify_obj(Obj *o, bool old)
{
    if (!valid_header(o)) { verify_fail(o, "bad header"); return; }
    if (!has_pointers(o)) return;
    size_t n = obj_num_slots(o);
    bool young = false;
    for (size_t i = 0; i < n; i++) {
        Value v = o->slots[i];
        if (!is_ptr(v) || v == 0) continue;
        if (!valid_header(as_obj(v))) { verify_fail(o, "slot points to a bad object"); continue; }
        if (gc_is_young(v)) {
            char *p = (char *)v;
            bool inEden = p >= heap.eden && p < gc_top;
            bool inSurv = p >= heap.surv[heap.from] && p < heap.survTop;
            if (!inEden && !inSurv) verify_fail(o, "slot points into an unused young area");
            young = true;
        }
    }
    if (old && young && !(o->hdr & GCF_REMEMBERED)) verify_fail(o, "old object points to young but is not remembered");
}

void gc_verify(const char *when)
{
    verifyErrors = 0;
    verifyWhen = when;
    for (char *p = heap.eden; p < gc_top;) { Obj *o = obj_at(p); verify_obj(o, false); p += obj_total_bytes(o); }
    for (char *p = heap.surv[heap.from]; p < heap.survTop;) { Obj *o = obj_at(p); verify_obj(o, false); p += obj_total_bytes(o); }
    for (Page *pg = heap.pages; pg; pg = pg->next)
        for (char *c = pg->cells; c < pg->end; c += pg->cellSize)
            if (((Obj *)c)->hdr != 0) verify_obj((Obj *)c, true);
    for (Large *l = heap.large; l; l = l->next) verify_obj(obj_at(l->data), true);
    for (Chunk *c = heap.perm; c; c = c->next)
        for (char *p = c->data; p < c->top;) { Obj *o = obj_at(p); verify_obj(o, true); p += obj_total_bytes(o); }
    if (verifyErrors) vm_fatal("heap verification failed %s: %d errors", when, verifyErrors);
}

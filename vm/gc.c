/* gc.c - a chunked Cheney copying collector plus a permanent, never-moving space. */
#include "gc.h"
#include "object.h"
#include "vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Memory comes in chunks; a chunk bigger than CHUNK_BYTES holds one large object. */
typedef struct Chunk {
    struct Chunk *next;
    char *top, *end;
    char data[];
} Chunk;

#define CHUNK_BYTES (1u << 20)
#define MAX_SCANNERS 16

static struct {
    Chunk *young;        /* chunks of the collected heap, newest first */
    Chunk *perm;         /* permanent chunks, newest first */
    size_t sinceGC;      /* bytes allocated since the last collection */
    GCConfig cfg;
    GCStats stats;
    GCRootScanner scanners[MAX_SCANNERS];
    int numScanners;
    uint32_t hashSeed;
    /* collection state */
    Chunk *toChunks, *toTail;
} H;

bool gc_pending;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gc_init(const GCConfig *cfg)
{
    H.cfg = *cfg;
    if (H.cfg.youngBytes < (64u << 10)) H.cfg.youngBytes = 64u << 10;
    H.hashSeed = 2463534242u;
}

void gc_add_root_scanner(GCRootScanner scanner)
{
    if (H.numScanners == MAX_SCANNERS) vm_fatal("too many GC root scanners");
    H.scanners[H.numScanners++] = scanner;
}

/* xorshift32: cheap, well-spread identity hashes. */
uint32_t gc_next_hash(void)
{
    uint32_t x = H.hashSeed;
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    H.hashSeed = x;
    return x & HDR_HASH_MASK;
}

static Chunk *chunk_new(size_t bytes)
{
    size_t size = bytes > CHUNK_BYTES ? bytes : CHUNK_BYTES;
    Chunk *c = malloc(sizeof(Chunk) + size);
    if (!c) vm_out_of_memory("cannot allocate a heap chunk");
    c->next = NULL;
    c->top = c->data;
    c->end = c->data + size;
    H.stats.heapBytes += size;
    return c;
}

static void *chunk_bump(Chunk **list, size_t bytes)
{
    Chunk *c = *list;
    if (!c || (size_t)(c->end - c->top) < bytes) {
        c = chunk_new(bytes);
        c->next = *list;
        *list = c;
    }
    void *p = c->top;
    c->top += bytes;
    return p;
}

void *gc_alloc(size_t bytes)
{
    H.sinceGC += bytes;
    H.stats.bytesAllocated += bytes;
    if (H.sinceGC >= H.cfg.youngBytes || H.cfg.stress) gc_pending = true;
    return chunk_bump(&H.young, bytes);
}

void *gc_alloc_perm(size_t bytes)
{
    return chunk_bump(&H.perm, bytes);
}

/* ---- Walking a chunk: objects are laid end to end ---- */

static inline size_t body_words(const Obj *o)
{
    size_t n = obj_num_slots(o);
    return n ? n : 1;
}

/* Given the first word of an object, the header's address. */
static inline Obj *obj_at(char *p)
{
    uint64_t w = *(uint64_t *)p;
    if ((w >> HDR_SLOTS_SHIFT) == HDR_SLOTS_OVERFLOW) return (Obj *)(p + 8);
    return (Obj *)p;
}

static inline size_t obj_total_bytes(const Obj *o)
{
    size_t words = 1 + body_words(o);
    if ((o->hdr >> HDR_SLOTS_SHIFT) == HDR_SLOTS_OVERFLOW) words++;
    return words * 8;
}

static inline char *obj_start(Obj *o)
{
    return (o->hdr >> HDR_SLOTS_SHIFT) == HDR_SLOTS_OVERFLOW ? (char *)o - 8 : (char *)o;
}

/* ---- Copying ---- */

static void *to_alloc(size_t bytes)
{
    Chunk *c = H.toTail;
    if (!c || (size_t)(c->end - c->top) < bytes) {
        Chunk *n = chunk_new(bytes);
        if (c) c->next = n; else H.toChunks = n;
        H.toTail = n;
        c = n;
    }
    void *p = c->top;
    c->top += bytes;
    return p;
}

static Obj *copy_obj(Obj *o)
{
    if (o->hdr & GCF_FORWARDED) return (Obj *)o->slots[0];
    size_t bytes = obj_total_bytes(o);
    char *from = obj_start(o);
    char *to = to_alloc(bytes);
    memcpy(to, from, bytes);
    Obj *n = (Obj *)(to + ((char *)o - from));
    o->hdr |= GCF_FORWARDED;
    o->slots[0] = (Value)n;
    H.stats.bytesSurvived += bytes;
    return n;
}

static void visit_slot(Value *slot)
{
    Value v = *slot;
    if (is_int(v) || v == 0) return;
    Obj *o = as_obj(v);
    if (o->hdr & GCF_PERM) return;
    *slot = (Value)copy_obj(o);
}

static void scan_obj(Obj *o)
{
    unsigned f = obj_format(o);
    if (f != FMT_FIXED && f != FMT_INDEXABLE) return;
    size_t n = obj_num_slots(o);
    for (size_t i = 0; i < n; i++) visit_slot(&o->slots[i]);
}

static void scan_chunk_list(Chunk *c)
{
    for (; c; c = c->next)
        for (char *p = c->data; p < c->top;) {
            Obj *o = obj_at(p);
            scan_obj(o);
            p += obj_total_bytes(o);
        }
}

/* Cheney's scan: the to-space list grows while we scan it. */
static void scan_to_space(void)
{
    for (Chunk *c = H.toChunks; c; c = c->next)
        for (char *p = c->data; p < c->top;) {
            Obj *o = obj_at(p);
            scan_obj(o);
            p += obj_total_bytes(o);
        }
}

static void free_chunks(Chunk *c)
{
    while (c) {
        Chunk *n = c->next;
        H.stats.heapBytes -= (size_t)(c->end - c->data);
        free(c);
        c = n;
    }
}

void gc_collect(void)
{
    uint64_t t0 = now_ns();
    uint64_t survivedBefore = H.stats.bytesSurvived;
    vm_gc_begin_hook();
    H.toChunks = H.toTail = NULL;
    scan_chunk_list(H.perm);
    for (int i = 0; i < H.numScanners; i++) H.scanners[i](visit_slot);
    scan_to_space();
    free_chunks(H.young);
    H.young = NULL;
    /* The to-space becomes the heap; keep it newest-first for allocation. */
    Chunk *rev = NULL;
    for (Chunk *c = H.toChunks; c;) {
        Chunk *n = c->next;
        c->next = rev;
        rev = c;
        c = n;
    }
    H.young = rev;
    H.stats.liveBytes = (size_t)(H.stats.bytesSurvived - survivedBefore);
    H.sinceGC = 0;
    gc_pending = false;
    uint64_t pause = now_ns() - t0;
    H.stats.collections++;
    H.stats.totalPauseNs += pause;
    if (pause > H.stats.maxPauseNs) H.stats.maxPauseNs = pause;
    vm_gc_end_hook(pause);
    if (H.cfg.maxHeapBytes && H.stats.liveBytes > H.cfg.maxHeapBytes)
        vm_out_of_memory("live data exceeds the --heap limit");
}

void gc_full_collect(void) { gc_collect(); }

const GCStats *gc_stats(void) { return &H.stats; }

void gc_print_stats(void)
{
    const GCStats *s = &H.stats;
    fprintf(stderr,
            "gc: %llu collections, pause total %.3f ms, max %.3f ms; "
            "%llu bytes allocated, %llu bytes survived, %zu bytes live, %zu bytes held\n",
            (unsigned long long)s->collections, s->totalPauseNs / 1e6, s->maxPauseNs / 1e6,
            (unsigned long long)s->bytesAllocated, (unsigned long long)s->bytesSurvived,
            s->liveBytes, s->heapBytes);
}

// SPDX-License-Identifier: BSD-2-Clause
/* fakevm.c - a fake sqvm for the hostile tier (tests/hostile.sh): it carries the squeak
 * provider's USDT sites (the VM's own generated header, so semaphores and argument types
 * match) and an sqvm_debug_offsets block that lies, one lie per --mode:
 *   start-flood   fire vm__start 10,000 times (--count N, or --forever) in a loop
 *   bad-offsets   frame_ip 32 MiB past a 4 KiB stack, offsets past every bound, a size
 *                 that wraps
 *   loop-chain    a frame whose caller is itself; its method points into unmapped memory
 *   flip          a thread flips current_process between two processes under the reader
 *   names         class/method names with ESC [ 2J, BEL, C1 0x9b, invalid UTF-8, no NUL
 *   batches       every batch probe fired with a count of 2^32 - 1 over SQ_BATCH_MAX records
 *                 of every kind (and kinds that do not exist), whose names run into an
 *                 unmapped page with no NUL, whose Methods and frames point anywhere; and
 *                 a batch that runs past the end of its mapping; the same records in its
 *                 record ring, in slots whose counts run past the slot, whose names have
 *                 no NUL, whose seq is another batch's, under a head that leaps ahead
 *                 and back
 *   unnamed       sched__batch records of processes whose records name them (alpha, odd
 *                 ids) and of processes whose records hold no name (NULL, even ids),
 *                 each new after one that had a name (review finding 20: the row took the
 *                 name before it), in its record ring too (with alpha's name only)
 * Every other mode's record ring is empty (bad-offsets: it is in unmapped memory).
 * Every mode prints "ready PID" and then runs until killed (start-flood: until its count
 * is done, then it sleeps too, unless --exit). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "debug_offsets.h"
#include "event_batch.h"
#include "record_ring.h"
#include "squeak_probes.h"

__attribute__((section(".probes"), aligned(64))) struct squeak_semaphores squeak_semaphores = {0};

/* Writable, not const: each mode fills in its lie before the first probe fires. */
__attribute__((used, visibility("default"))) SqDebugOffsets sqvm_debug_offsets = {
    .magic = SQVM_DEBUG_MAGIC,
    .version = SQVM_DEBUG_VERSION,
    .size = sizeof(SqDebugOffsets),
};

/* A fake Process and Frame: plain words, laid out by the lying offsets below. */
static uint64_t process_a[16], process_b[16];
static uint64_t frame[16];
static uint64_t stack_mem[512]; /* 4096 bytes */
static void *current_process;
static uint32_t class_count = 3;
static char hostile_name[64] = "Evil\x1b[2J\x07\x9b\xff\xfe" "Class";
static char *class_row[3];
static void *class_table = class_row;

static SqRecordRing ring;

static void common_offsets(void)
{
    SqDebugOffsets *d = &sqvm_debug_offsets;
    ring.magic = SQ_RING_MAGIC;
    ring.slots = SQ_RING_SLOTS;
    ring.slot_size = sizeof(SqRingSlot);
    d->record_ring = (uint64_t)(uintptr_t)&ring;
    d->current_process = (uint64_t)(uintptr_t)&current_process;
    d->class_table = (uint64_t)(uintptr_t)&class_table;
    d->class_count = (uint64_t)(uintptr_t)&class_count;
    d->process_fp = 0;
    d->process_stack_base = 8;
    d->process_stack_limit = 16;
    d->frame_caller = 0;
    d->frame_method = 8;
    d->frame_ip = 16;
    d->frame_self = 24;
    d->frame_closure = 32;
    d->method_print_name = 0;
    d->class_name = 0;
    d->value_tag_mask = 3;
    d->value_int_mask = 1;
    d->value_float_tag = 2;
    process_a[0] = (uint64_t)(uintptr_t)frame;
    process_a[1] = (uint64_t)(uintptr_t)stack_mem;
    process_a[2] = (uint64_t)(uintptr_t)(stack_mem + 512);
    memcpy(process_b, process_a, sizeof process_a);
    current_process = process_a;
}

static void *flipper(void *arg)
{
    (void)arg;
    for (;;) {
        current_process = current_process == (void *)process_a ? (void *)process_b : (void *)process_a;
        process_b[0] = process_b[0] ? 0 : (uint64_t)0xdead0000;
    }
    return NULL;
}

/* The batches: a buffer of SQ_BATCH_MAX records, and the last records of a page whose
 * next page is unmapped (a batch that claims more than is mapped). */
static SqEventRecord *records, *edge;
static uint64_t fake_method[4];
static int unnamed;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* a page of name with no NUL, the page after it unmapped */
static char *name_to_the_edge(void)
{
    char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(p + 4096, 4096);
    memset(p, 'A', 4096);
    memcpy(p, "Evil\x1b]0;owned\x07\x9b\xc2\x9b\xff", 16);
    return p;
}

static void batch_lies(void)
{
    char *name = name_to_the_edge();
    char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(page + 4096, 4096);
    edge = (SqEventRecord *)(page + 4096) - 3;
    records = calloc(SQ_BATCH_MAX, sizeof(*records));
    fake_method[0] = (uint64_t)(uintptr_t)name; /* method_print_name is 0 */
    for (uint32_t i = 0; i < SQ_BATCH_MAX; i++) {
        SqEventRecord *r = &records[i];
        r->kind = i % 21 == 20 ? 0xffffffffu : i % 21; /* every kind, and two that are none */
        r->arg = i & 1 ? 0xffffffffu : i;
        for (int k = 0; k < SQ_EV_WORDS; k++)
            r->word[k] = k % 3 == 0 ? (uint64_t)(uintptr_t)name
                    : k % 3 == 1 ? (uint64_t)(uintptr_t)fake_method
                    : (i & 2) ? 0xffffffffffffffffull : (uint64_t)(uintptr_t)(page + 4096);
    }
    memcpy(edge, records, 3 * sizeof(*records));
}

/* The next slot of the ring: n records (up to SQ_BATCH_MAX copied), the names given. */
static SqRingSlot *ring_put(const SqEventRecord *r, uint32_t n, const SqRingName *names, uint32_t nnames)
{
    SqRingSlot *s = &ring.slot[ring.head % SQ_RING_SLOTS];
    s->seq = ring.head;
    s->flush_ns = now_ns();
    s->n = n;
    s->nnames = nnames;
    memcpy(s->rec, r, (n < SQ_BATCH_MAX ? n : SQ_BATCH_MAX) * sizeof(*r));
    memcpy(s->names, names, (nnames < SQ_RING_NAMES ? nnames : SQ_RING_NAMES) * sizeof(*names));
    __atomic_store_n(&ring.head, ring.head + 1, __ATOMIC_RELEASE);
    return s;
}

/* Slots that lie: counts past the slot, names without a NUL and full of controls, a seq
 * that is another batch's; and a head that leaps ahead by 2^63 and comes back. */
static void ring_lies(void)
{
    static uint64_t turn;
    SqRingName names[SQ_RING_NAMES];
    for (int i = 0; i < SQ_RING_NAMES; i++) {
        names[i].id = i & 1 ? (uint64_t)i : ~(uint64_t)0;
        memset(names[i].name, i & 1 ? 0x9b : '\x1b', sizeof(names[i].name)); /* no NUL */
        memcpy(names[i].name, "Evil\x1b[2J\x07", 9);
    }
    ring_put(records, SQ_BATCH_MAX, names, SQ_RING_NAMES);
    ring_put(records, 0xffffffffu, names, 0xffffffffu);
    ring_put(records, SQ_BATCH_MAX, names, SQ_RING_NAMES)->seq = 12345;
    if (++turn % 8 == 0) {
        uint64_t h = ring.head;
        __atomic_store_n(&ring.head, h + (1ull << 63), __ATOMIC_RELEASE);
        usleep(30000); /* a reader's poll sees it */
        __atomic_store_n(&ring.head, h, __ATOMIC_RELEASE);
    }
}

static void fire_batches(void)
{
    uint64_t t = now_ns();
    for (uint32_t i = 0; i < SQ_BATCH_MAX; i++)
        records[i].ts = t; /* newer than when any tool attached */
    SQUEAK_CALL_BATCH(records, 0xffffffffu);
    SQUEAK_ALLOC_BATCH(records, 0xffffffffu);
    SQUEAK_SCHED_BATCH(records, 0xffffffffu);
    SQUEAK_REQ_BATCH(records, 0xffffffffu);
    SQUEAK_IO_BATCH(records, 0xffffffffu);
    SQUEAK_SAMPLE_BATCH(records, 0xffffffffu);
    SQUEAK_CALL_BATCH(edge, SQ_BATCH_MAX);
    SQUEAK_ALLOC_BATCH(edge, SQ_BATCH_MAX);
    SQUEAK_REQ_BATCH(edge, SQ_BATCH_MAX);
    ring_lies();
}

/* Process 2n+1 named alpha is activated; then 2n+2, whose records hold no name, is made
 * ready (a process the tool had not seen) and activated: its row is made then. */
static void fire_unnamed(void)
{
    static uint64_t n;
    static char alpha[] = "alpha";
    SqEventRecord r[3] = {
        { .kind = SQ_EV_PROCESS_ACTIVATE, .process = { .id = 2 * n + 1, .name = (uint64_t)(uintptr_t)alpha } },
        { .kind = SQ_EV_PROCESS_READY, .process = { .id = 2 * n + 2 } },
        { .kind = SQ_EV_PROCESS_ACTIVATE, .process = { .id = 2 * n + 2 } },
    };
    for (int i = 0; i < 3; i++)
        r[i].ts = now_ns();
    SqRingName named = { .id = 2 * n + 1, .name = "alpha" };
    if (n < 100)
        n++;
    SQUEAK_SCHED_BATCH(r, 3);
    ring_put(r, 3, &named, 1);
}

static int usage(void)
{
    fprintf(stderr, "usage: fakevm --mode start-flood|bad-offsets|loop-chain|flip|names|batches|unnamed "
                    "[--count N] [--forever] [--exit]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *mode = NULL;
    long count = 10000;
    int forever = 0, exit_after = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
        else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = atol(argv[++i]);
        else if (!strcmp(argv[i], "--forever")) forever = 1;
        else if (!strcmp(argv[i], "--exit")) exit_after = 1;
        else return usage();
    }
    if (!mode) return usage();
    common_offsets();
    SqDebugOffsets *d = &sqvm_debug_offsets;
    if (!strcmp(mode, "start-flood")) {
        /* offsets stay sane: the flood itself is the abuse */
    } else if (!strcmp(mode, "bad-offsets")) {
        d->frame_ip = 32u << 20;          /* review finding 1: past a 4096-byte stack */
        d->frame_method = 0xfffffff8u;    /* wraps any base it is added to */
        d->process_fp = 0xfffffff0u;
        d->method_print_name = 0x7fffffffu;
        d->size = 0xffffffffu;            /* a size that wraps */
        void *gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(gone, 4096);
        d->record_ring = (uint64_t)(uintptr_t)gone; /* a ring in unmapped memory */
    } else if (!strcmp(mode, "loop-chain")) {
        frame[0] = (uint64_t)(uintptr_t)frame; /* caller: itself */
        void *gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(gone, 4096);
        frame[1] = (uint64_t)(uintptr_t)gone;  /* method: unmapped */
        frame[2] = (uint64_t)(uintptr_t)gone;
    } else if (!strcmp(mode, "flip")) {
        pthread_t t;
        pthread_create(&t, NULL, flipper, NULL);
    } else if (!strcmp(mode, "names")) {
        memset(hostile_name + strlen(hostile_name), 'A', sizeof hostile_name - strlen(hostile_name));
        for (int i = 0; i < 3; i++) class_row[i] = hostile_name; /* no terminator */
        frame[1] = (uint64_t)(uintptr_t)hostile_name;
    } else if (!strcmp(mode, "batches")) {
        batch_lies();
    } else if (!strcmp(mode, "unnamed")) {
        unnamed = 1;
    } else {
        return usage();
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    if (!strcmp(mode, "start-flood")) {
        for (long n = 0; forever || n < count; n++) {
            SQUEAK_VM_START("fake", &sqvm_debug_offsets);
            if (!forever && n % 1000 == 999) usleep(1000);
        }
        if (exit_after) return 0;
    }
    for (;;) {
        if (records)
            fire_batches();
        if (unnamed)
            fire_unnamed();
#define NAME hostile_name
#include "sites.h"
        usleep(10000);
    }
}

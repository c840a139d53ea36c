// SPDX-License-Identifier: BSD-2-Clause
/* batch.c - the event batch buffer and its flush, the batch probes' sites (compiled, as
 * probes.c, without a red zone: Makefile). */
#include "batch.h"
#include "probes.h"
#include "thread.h"
#include "vm.h"

#include <string.h>
#include <time.h>

#if SQVM_PROBES

SqBatch sq_batch;

void batch_flush(void)
{
    uint32_t n = sq_batch.n;
    sq_batch.n = 0;
    if (!n) return;
    /* in registers: USDT arguments cannot be RIP-relative for libbpf */
    uintptr_t rec = (uintptr_t)sq_batch.rec;
    __asm__ volatile("" : "+r"(rec), "+r"(n));
    if (SQ_ENABLED(ALLOC_BATCH)) SQUEAK_ALLOC_BATCH(rec, n);
    if (SQ_ENABLED(CALL_BATCH)) SQUEAK_CALL_BATCH(rec, n);
    if (SQ_ENABLED(SCHED_BATCH)) SQUEAK_SCHED_BATCH(rec, n);
    if (SQ_ENABLED(IO_BATCH)) SQUEAK_IO_BATCH(rec, n);
}

/* ---- The ticker ----
 * A VM that stops producing events while it computes would keep a partial batch to
 * itself until it next sleeps. While a batch probe is enabled (or records wait) a
 * thread sleeps until the oldest record it saw would be SQ_BATCH_AGE_NS old and, if it
 * is still there, asks the VM's thread to flush at its next safe point (the scheduler's
 * attention flag, as the event loop's watcher does: sched_poll calls batch_flush_pending).
 * A VM that flushes its own batches (full, or aged at its next record) needs no help:
 * when the ticker finds a batch begun since it last looked it sleeps four ages, so that
 * on a busy VM it wakes about 125 times a second, not once a batch (on a CPU the VM
 * shares, each wake-up is two context switches the VM pays for). A VM that stops right
 * then keeps its records at most about five ages. The records are the VM thread's
 * alone; the ticker only reads the count and the time. */
static int tickerOn; /* 1 while the ticker runs; it clears it as it ends */

static void *ticker_main(void *unused)
{
    (void)unused;
    uint64_t sleepNs = SQ_BATCH_AGE_NS, seenFirst = 0;
    for (;;) {
        struct timespec ts = {0, (long)sleepNs};
        nanosleep(&ts, NULL);
        uint32_t n = __atomic_load_n(&sq_batch.n, __ATOMIC_RELAXED);
        if (!n && !SQ_ENABLED(ALLOC_BATCH) && !SQ_ENABLED(CALL_BATCH) && !SQ_ENABLED(SCHED_BATCH) && !SQ_ENABLED(IO_BATCH))
            break; /* the tools are gone */
        uint64_t first = __atomic_load_n(&sq_batch.firstNs, __ATOMIC_RELAXED), age = batch_clock() - first;
        sleepNs = SQ_BATCH_AGE_NS;
        if (!n) {
            seenFirst = 0;
        } else if (age >= SQ_BATCH_AGE_NS) {
            __atomic_store_n(&sched_attention, 1, __ATOMIC_RELEASE);
        } else if (seenFirst && first != seenFirst) {
            sleepNs = 4 * SQ_BATCH_AGE_NS; /* it flushed a batch by itself since */
        } else {
            sleepNs = SQ_BATCH_AGE_NS - age + SQ_BATCH_AGE_NS / 16;
        }
        if (n) seenFirst = first;
    }
    __atomic_store_n(&tickerOn, 0, __ATOMIC_RELEASE);
    return NULL;
}

static void start_ticker(void)
{
    tickerOn = 1;
    if (thread_start_helper(ticker_main, "sqvm-batch"))
        tickerOn = 0; /* batches still flush when full, aged, idle or at exit */
}

/* The slow path of batch_add: the first record of a batch (the ticker may need
 * starting), or a full or aged batch to flush first. */
static __attribute__((noinline, cold)) uint32_t batch_make_room(uint64_t now, uint32_t n)
{
    if (n) {
        batch_flush();
        n = 0;
    }
    if (UNLIKELY(!__atomic_load_n(&tickerOn, __ATOMIC_ACQUIRE))) start_ticker();
    sq_batch.firstNs = now;
    return n;
}

SqEventRecord *batch_reserve(uint32_t count, uint64_t now)
{
    uint32_t n = sq_batch.n;
    if (UNLIKELY(!n || n + count > SQ_BATCH_MAX || now - sq_batch.firstNs > SQ_BATCH_AGE_NS)) n = batch_make_room(now, n);
    sq_batch.n = n + count;
    return &sq_batch.rec[n];
}

SqEventRecord *batch_add(uint32_t kind)
{
    uint64_t now = sq_batch.heldNs;
    sq_batch.heldNs = 0;
    if (!now) now = batch_clock();
    uint32_t n = sq_batch.n;
    if (UNLIKELY(!n || n == SQ_BATCH_MAX || now - sq_batch.firstNs > SQ_BATCH_AGE_NS)) n = batch_make_room(now, n);
    sq_batch.n = n + 1;
    SqEventRecord *r = &sq_batch.rec[n];
    r->kind = kind;
    r->ts = now;
    return r;
}

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* batch.h - event batches: the buffer behind the batch probes (squeak:alloc__batch,
 * call__batch, sched__batch, req__batch, io__batch)
 * (probes/event_batch.h has the records, probes/README.md the rules). While a batch
 * probe is enabled an event costs the VM a record written into this buffer, and a full
 * or aged buffer one uprobe hit; the probes.c functions that the hot sites call (cold,
 * out of line) write the records. Built with PROBES=0 it is all nothing. */
#ifndef SQVM_BATCH_H
#define SQVM_BATCH_H

#include "common.h"
#include <stdint.h>
#include "event_batch.h"

#if SQVM_PROBES
#include <time.h>

typedef struct SqBatch {
    uint32_t n;          /* records in rec[] */
    uint32_t inRound;    /* 1 while the event loop hands out a round's events */
    uint64_t firstNs;    /* rec[0].ts */
    uint64_t heldNs;     /* the next record's time, if nonzero (batch_hold_time) */
    uint64_t roundNs;    /* the round's time, once a record took it (batch_round_time) */
    SqEventRecord rec[SQ_BATCH_MAX];
} SqBatch;
extern SqBatch sq_batch;

/* A new record of kind at the end of the buffer, its time stamped (the rest of it is the
 * caller's to fill before the next batch call): first flushes the buffer if it is full,
 * or if its oldest record is SQ_BATCH_AGE_NS old. */
SqEventRecord *batch_add(uint32_t kind);

/* count (1 or 2) records at the end of the buffer, in the same batch (a kind that
 * continues in the next record: SQ_EV_IO_FRAMES), as of time now; the caller fills them
 * in, kind and ts included. */
SqEventRecord *batch_reserve(uint32_t count, uint64_t now);

/* CLOCK_MONOTONIC through the vDSO (about 20 ns with the TSC clocksource): the clock
 * bpf_ktime_get_ns reads, so that a tool may mix the records' times with its own. */
static inline uint64_t batch_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Hands the buffered records to the batch probes that are enabled (one hit each) and
 * empties the buffer; with none enabled (the tools detached) they are dropped. */
void batch_flush(void);

/* The event of the next record happens at the same moment as r's (an I/O wait that
 * readies its process, a wait that switches to the next process): the next batch_add
 * takes r's time instead of reading the clock (about 20 ns, a third of what a record
 * costs the VM). A flush point forgets it, so a time held before the VM blocks or
 * sleeps is never taken after. */
static inline void batch_hold_ns(uint64_t ns) { sq_batch.heldNs = ns; }
static inline void batch_hold_time(const SqEventRecord *r) { batch_hold_ns(r->ts); }

/* The event loop's round (io_poll): the waits that one epoll_wait ends all ended when it
 * returned, so their records (batch_add's, and those a caller stamps with
 * batch_round_time) take one time, read by the first that asks, instead of reading the
 * clock each: a busy server's round ends dozens. Outside a round batch_round_time reads
 * the clock. */
static inline void batch_round_begin(void) { sq_batch.inRound = 1; }
static inline void batch_round_end(void)
{
    sq_batch.inRound = 0;
    sq_batch.roundNs = 0;
}
static inline uint64_t batch_round_time(void)
{
    if (!sq_batch.inRound) return batch_clock();
    if (!sq_batch.roundNs) sq_batch.roundNs = batch_clock();
    return sq_batch.roundNs;
}

/* A flush point (the VM is about to block, sleep or exit, or is at a safe point): cheap
 * when empty. */
static inline void batch_flush_pending(void)
{
    sq_batch.heldNs = 0;
    if (UNLIKELY(sq_batch.n)) batch_flush();
}
/* Records wait in the buffer. */
static inline bool batch_pending(void) { return sq_batch.n != 0; }
#else
static inline void batch_flush_pending(void) {}
static inline bool batch_pending(void) { return false; }
static inline void batch_round_begin(void) {}
static inline void batch_round_end(void) {}
#endif

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* batch.h - event batches: the buffer behind the batch probes (squeak:alloc__batch,
 * call__batch, sched__batch, req__batch, io__batch)
 * (probes/event_batch.h has the records, probes/README.md the rules). While a batch
 * probe is enabled an event costs the VM a record written into this buffer, and a full
 * or aged buffer one uprobe hit; the recorder (vm/record.c) writes the records. Built
 * with PROBES=0 it is all nothing. */
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
    uint64_t heldNs;     /* the next record's time, if nonzero (vm/record.c) */
    uint64_t roundNs;    /* the round's time, once a record took it (vm/record.c) */
    SqEventRecord rec[SQ_BATCH_MAX];
} SqBatch;
extern SqBatch sq_batch;

/* The slow path of batch_reserve (batch.c): flushes a full or aged buffer first, and
 * arms the ticker for a new batch; answers the records left in the buffer (0). */
uint32_t batch_make_room(uint64_t now, uint32_t n);

/* count (1 or 2) records at the end of the buffer, in the same batch (a kind that
 * continues in the next record: SQ_EV_IO_FRAMES), as of time now: first flushes the
 * buffer if it is full, or if its oldest record is SQ_BATCH_AGE_NS old. The caller
 * (vm/record.c, the recorder) fills them in, kind and ts included. */
static inline SqEventRecord *batch_reserve(uint32_t count, uint64_t now)
{
    uint32_t n = sq_batch.n;
    if (UNLIKELY(!n || n + count > SQ_BATCH_MAX || now - sq_batch.firstNs > SQ_BATCH_AGE_NS)) n = batch_make_room(now, n);
    sq_batch.n = n + count;
    return &sq_batch.rec[n];
}

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

/* The event loop's round (io_poll): the waits that one epoll_wait ends all ended when it
 * returned, so their records take one time (vm/record.c, record_time). */
static inline void batch_round_begin(void) { sq_batch.inRound = 1; }
static inline void batch_round_end(void)
{
    sq_batch.inRound = 0;
    sq_batch.roundNs = 0;
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

// SPDX-License-Identifier: BSD-2-Clause
/* batch.h - event batches: the buffer behind squeak:alloc__batch and squeak:call__batch
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
typedef struct SqBatch {
    uint32_t n;          /* records in rec[] */
    uint64_t firstNs;    /* rec[0].ts */
    uint64_t heldNs;     /* the next record's time, if nonzero (batch_hold_time) */
    SqEventRecord rec[SQ_BATCH_MAX];
} SqBatch;
extern SqBatch sq_batch;

/* A new record of kind at the end of the buffer, its time stamped (the rest of it is the
 * caller's to fill before the next batch call): first flushes the buffer if it is full,
 * or if its oldest record is SQ_BATCH_AGE_NS old. */
SqEventRecord *batch_add(uint32_t kind);

/* Hands the buffered records to the batch probes that are enabled (one hit each) and
 * empties the buffer; with none enabled (the tools detached) they are dropped. */
void batch_flush(void);

/* The event of the next record happens at the same moment as r's (an I/O wait that
 * readies its process, a wait that switches to the next process): the next batch_add
 * takes r's time instead of reading the clock (about 20 ns, a third of what a record
 * costs the VM). A flush point forgets it, so a time held before the VM blocks or
 * sleeps is never taken after. */
static inline void batch_hold_time(const SqEventRecord *r) { sq_batch.heldNs = r->ts; }

/* A flush point (the VM is about to block, sleep or exit, or is at a safe point): cheap
 * when empty. */
static inline void batch_flush_pending(void)
{
    sq_batch.heldNs = 0;
    if (UNLIKELY(sq_batch.n)) batch_flush();
}
#else
static inline void batch_flush_pending(void) {}
#endif

#endif

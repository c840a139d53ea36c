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

/* A flush point (the VM is about to block, sleep or exit): cheap when empty. */
static inline void batch_flush_pending(void) { if (UNLIKELY(sq_batch.n)) batch_flush(); }
#else
static inline void batch_flush_pending(void) {}
#endif

#endif

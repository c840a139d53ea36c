// SPDX-License-Identifier: BSD-2-Clause
/* batch.c - the event batch buffer and its flush, the batch probes' sites (compiled, as
 * probes.c, without a red zone: Makefile). */
#include "batch.h"
#include "probes.h"

#include <time.h>

#if SQVM_PROBES

SqBatch sq_batch;

/* CLOCK_MONOTONIC through the vDSO (about 20 ns with the TSC clocksource): the clock
 * bpf_ktime_get_ns reads, so that a tool may mix the records' times with its own. */
static inline uint64_t batch_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
}

SqEventRecord *batch_add(uint32_t kind)
{
    uint64_t now = batch_now();
    uint32_t n = sq_batch.n;
    if (n && (n == SQ_BATCH_MAX || now - sq_batch.firstNs > SQ_BATCH_AGE_NS)) {
        batch_flush();
        n = 0;
    }
    if (!n) sq_batch.firstNs = now;
    sq_batch.n = n + 1;
    SqEventRecord *r = &sq_batch.rec[n];
    r->kind = kind;
    r->ts = now;
    return r;
}

#endif

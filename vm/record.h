// SPDX-License-Identifier: BSD-2-Clause
/* record.h - the recorder: the batch probes' records (probes/event_batch.h), their buffer
 * and its flush (squeak:alloc__batch, call__batch, sched__batch, req__batch, io__batch,
 * sample__batch;
 * probes/README.md has the rules). While a batch probe is enabled an event costs the VM
 * a record written into the buffer, and a full or aged buffer one uprobe hit. The
 * recorder decides, in one table (record.c: takers), which batch probe takes a record of
 * each kind, and, in one function (record.c: record_time), when a record's time is read.
 * Probe sites (vm/probes.c) hand it what they have: the process's id and name, the
 * frames' Methods, the descriptor's kind, the allocation totals; it reads nothing of
 * the interpreter, the scheduler, the I/O layer or the collector. Built with PROBES=0
 * it is all nothing. */
#ifndef SQVM_RECORD_H
#define SQVM_RECORD_H

#include "common.h"
#include <stdint.h>
#include "event_batch.h"

#if SQVM_PROBES
#include <time.h>

/* ---- The buffer ---- */
typedef struct SqBatch {
    uint32_t n;          /* records in rec[] */
    uint32_t inRound;    /* 1 while the event loop hands out a round's events */
    uint64_t firstNs;    /* rec[0].ts */
    uint64_t heldNs;     /* the next record's time, if nonzero (record.c: record_time) */
    uint64_t roundNs;    /* the round's time, once a record took it */
    SqEventRecord rec[SQ_BATCH_MAX];
} SqBatch;
extern SqBatch sq_batch;

/* CLOCK_MONOTONIC through the vDSO (about 20 ns with the TSC clocksource): the clock
 * bpf_ktime_get_ns reads, so that a tool may mix the records' times with its own. */
static inline uint64_t record_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Hands the buffered records to the batch probes that are enabled (one hit each) and
 * empties the buffer; with none enabled (the tools detached) they are dropped. */
void record_flush(void);

/* The record ring (probes/record_ring.h, vm/record_ring.c): while a tool is attached to
 * squeak:ring__records, each flushed batch is also copied, with the names its activations
 * name, into the next slot of a ring in this process's memory, which the tool polls. */
extern struct SqRecordRing sq_record_ring;
void record_ring_append(const SqEventRecord *rec, uint32_t n);

/* The event loop's round (io_poll): the waits that one epoll_wait ends all ended when it
 * returned, so their records take one time (record.c: record_time). */
static inline void record_round_begin(void) { sq_batch.inRound = 1; }
static inline void record_round_end(void)
{
    sq_batch.inRound = 0;
    sq_batch.roundNs = 0;
}

/* A flush point (the VM is about to block, sleep or exit, or is at a safe point): cheap
 * when empty. It forgets a held time, so that a time held before the VM blocks or
 * sleeps is never a later record's. */
static inline void record_flush_pending(void)
{
    sq_batch.heldNs = 0;
    if (UNLIKELY(sq_batch.n)) record_flush();
}
/* Records wait in the buffer. */
static inline bool record_pending(void) { return sq_batch.n != 0; }

/* ---- What the sites hand in ---- */

/* A green process, as its records name it. */
typedef struct RecordProcess {
    uint64_t id;
    const char *name;      /* its name (a Smalltalk string's bytes: the buffer is flushed
                            * before a collection can move it) */
    bool requestOpen;      /* it has a request open */
    uint64_t *pending;     /* where it publishes the id of its request whose begin is held
                            * (Process.requestPending, for samplers), or NULL */
} RecordProcess;

/* ---- The records ---- */

/* Would a batch probe take a record of kind now (requestOpen: of a process with a
 * request open)? For a site that keeps something for a later record. */
bool record_takes(uint32_t kind, bool requestOpen);

/* Each writes its record if a batch probe takes it now (record.c: takers). */

/* A call event (SQ_EV_METHOD_ENTRY .. SQ_EV_BLOCK_RETURN), depth its arg. */
void record_call(uint32_t kind, uint32_t depth, const SqEvCall *c);
/* An allocation. */
void record_alloc(const SqEvAlloc *a);
/* The sampler's allocation (sample__batch). */
void record_alloc_sample(const SqEvAllocSample *s);
/* A scheduler event of p (SQ_EV_PROCESS_READY, _WAIT, _CREATE, _EXIT, SQ_EV_IO_WAIT);
 * p's held request begin, if any, goes first. w: the record's words beyond the
 * process's (semaphore or fd, timeout, method: a wait's, or the signaller's method of a
 * readying), or NULL. A wait's (SQ_EV_PROCESS_WAIT, SQ_EV_IO_WAIT) time is siteNs, the
 * clock as the site read it for the wait's deadline (0: none), and the switch that
 * follows takes the same time. Answers the record's time (0: no record). */
uint64_t record_process(uint32_t kind, uint32_t arg, const RecordProcess *p, const SqEvAllocs *allocs,
                        const SqEvProcess *w, uint64_t siteNs);
/* A process switch to `to` from `from` (NULL: none; only its id and requestOpen are
 * read): from's held request begin goes first; the switch's time is that of the wait
 * before it, if one was held. */
void record_activate(const RecordProcess *to, uint32_t priority, const RecordProcess *from, const SqEvAllocs *allocs);
/* An I/O primitive's system call (SQ_EV_IO, and SQ_EV_IO_FRAMES if depth, the number
 * of Methods in m, is more than the record holds), from startNs to endNs. */
void record_io(uint32_t arg, uint64_t startNs, uint64_t endNs, const SqEvIo *io, const uint64_t *m, int depth);
/* A wait on a descriptor ends (SQ_EV_IO_READY, arg its op): w its words as the site
 * filled them (fd, timedout, wait_began: 0 if the wait began without io__batch, then no
 * SQ_EV_IO_FRAMES follows); m and kind its Methods and the descriptor's kind kept at
 * the wait's start. */
void record_io_ready(uint32_t arg, const RecordProcess *p, const SqEvAllocs *allocs, const SqEvProcess *w,
                     const uint64_t *m, int kind);
/* The time a wait's site read for its deadline, as a record's time: a fuzz build's
 * clock is its own (vm.c), so none. */
static inline uint64_t record_site_time(uint64_t siteNs)
{
#ifndef SQVM_FUZZ
    return siteNs;
#else
    (void)siteNs;
    return 0;
#endif
}

/* ---- Requests ----
 * A request's begin record waits while its process runs: most requests end in the run
 * that began them, and such a request is then one record at its end, SQ_EV_REQUEST_RUN,
 * instead of a begin and an end. The held begin is written, with its own time and
 * allocation totals, before anything else a tool would charge to the request: the first
 * scheduler record of its process, a collection (record_request_release_all), or the
 * next request's begin. Only the running process can begin one, so one waits at most;
 * its process's pending word lets a sampler (sqreq --slowest) see it. */
struct TraceContext;
void record_request_begin(uint64_t id, const char *route, const RecordProcess *owner, const SqEvAllocs *allocs,
                          const struct TraceContext *trace);
void record_request_end(uint64_t id, const char *route, const RecordProcess *owner, const SqEvAllocs *allocs,
                        int status);
/* Whatever begin is held goes into the buffer (a collection begins). */
void record_request_release_all(void);
/* No begin is held any more (the held one ended after its tool left, or the open
 * requests were dropped). */
void record_requests_dropped(void);
#else
static inline void record_flush_pending(void) {}
static inline bool record_pending(void) { return false; }
static inline void record_round_begin(void) {}
static inline void record_round_end(void) {}
#endif

#endif

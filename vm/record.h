// SPDX-License-Identifier: BSD-2-Clause
/* record.h - the recorder: writes the batch probes' records (probes/event_batch.h) into
 * the buffer (vm/batch.h). It decides, in one table (takers, below), which batch probe
 * takes a record of each kind, and, in one function (record.c: record_time), when a
 * record's time is read. Probe sites (vm/probes.c) hand it what they have: the
 * process's id and name, the frames' Methods, the descriptor's kind, the allocation
 * totals; it reads nothing of the interpreter, the scheduler or the I/O layer. Built
 * with PROBES=0 it is not compiled: the sites that call it compile to nothing. */
#ifndef SQVM_RECORD_H
#define SQVM_RECORD_H

#include "common.h"
#include "batch.h"

#if SQVM_PROBES
#include "squeak_probes.h"

/* ---- Which batch probe takes which kind ----
 * A kind's takers: the batch probes that get its records (every enabled batch probe is
 * handed every record of a batch; a reader skips the kinds it does not read). A record
 * is written while one of its takers is enabled. REQ_OPEN: req__batch, for a process
 * with a request open only (the others' time is no request's). */
enum {
    TAKE_ALLOC = 1,    /* alloc__batch */
    TAKE_CALL = 2,     /* call__batch */
    TAKE_SCHED = 4,    /* sched__batch */
    TAKE_REQ = 8,      /* req__batch */
    TAKE_REQ_OPEN = 16, /* req__batch, of a process with a request open */
    TAKE_IO = 32,      /* io__batch */
};

static const uint8_t record_takers[] = {
    [SQ_EV_ALLOC] = TAKE_ALLOC,
    [SQ_EV_METHOD_ENTRY] = TAKE_CALL,
    [SQ_EV_METHOD_RETURN] = TAKE_CALL,
    [SQ_EV_BLOCK_ENTRY] = TAKE_CALL,
    [SQ_EV_BLOCK_RETURN] = TAKE_CALL,
    /* call__batch's readers leave out of a call the time its process was switched out */
    [SQ_EV_PROCESS_ACTIVATE] = TAKE_CALL | TAKE_SCHED | TAKE_REQ_OPEN,
    [SQ_EV_PROCESS_READY] = TAKE_SCHED | TAKE_REQ_OPEN,
    [SQ_EV_PROCESS_WAIT] = TAKE_SCHED | TAKE_REQ_OPEN,
    [SQ_EV_PROCESS_CREATE] = TAKE_SCHED, /* a new process has no request yet */
    [SQ_EV_PROCESS_EXIT] = TAKE_SCHED | TAKE_REQ_OPEN,
    [SQ_EV_IO_WAIT] = TAKE_SCHED | TAKE_REQ_OPEN,
    /* io__batch's alone: sched__batch's process__ready (reason 4) follows */
    [SQ_EV_IO_READY] = TAKE_IO,
    [SQ_EV_REQUEST_BEGIN] = TAKE_REQ,
    [SQ_EV_REQUEST_END] = TAKE_REQ,
    [SQ_EV_IO] = TAKE_IO,
    [SQ_EV_IO_FRAMES] = TAKE_IO,
    [SQ_EV_REQUEST_RUN] = TAKE_REQ,
    [SQ_EV_REQUEST_TRACE] = TAKE_REQ,
};

/* Is a record of kind wanted now (requestOpen: its process has a request open)? With a
 * constant kind the compiler folds the table into the semaphore tests it needs. */
static inline bool record_wanted(uint32_t kind, bool requestOpen)
{
    uint8_t t = kind < sizeof(record_takers) ? record_takers[kind] : 0;
    return ((t & TAKE_ALLOC) && SQUEAK_ALLOC_BATCH_ENABLED()) || ((t & TAKE_CALL) && SQUEAK_CALL_BATCH_ENABLED()) ||
           ((t & TAKE_SCHED) && SQUEAK_SCHED_BATCH_ENABLED()) || ((t & TAKE_REQ) && SQUEAK_REQ_BATCH_ENABLED()) ||
           ((t & TAKE_REQ_OPEN) && requestOpen && SQUEAK_REQ_BATCH_ENABLED()) ||
           ((t & TAKE_IO) && SQUEAK_IO_BATCH_ENABLED());
}

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

/* A call event (SQ_EV_METHOD_ENTRY .. SQ_EV_BLOCK_RETURN), depth its arg. */
void record_call(uint32_t kind, uint32_t depth, const SqEvCall *c);
/* An allocation. */
void record_alloc(const SqEvAlloc *a);
/* A scheduler event of p (SQ_EV_PROCESS_READY, _WAIT, _CREATE, _EXIT, SQ_EV_IO_WAIT),
 * which the caller has seen record_wanted; p's held request begin, if any, goes first.
 * w: a wait's words (semaphore or fd, timeout, method), whose record's time is siteNs,
 * the clock as the site read it for the wait's deadline (0: none); the switch that
 * follows takes the same time. NULL: not a wait. Answers the record's time. */
uint64_t record_process(uint32_t kind, uint32_t arg, const RecordProcess *p, const SqEvAllocs *allocs,
                        const SqEvProcess *w, uint64_t siteNs);
/* A process switch to `to`, which the caller has seen record_wanted (for `to` or for
 * the process it switched from): its time is that of the wait before it, if one was
 * held. */
void record_activate(const RecordProcess *to, uint32_t priority, const SqEvAllocs *allocs);
/* A switch that no batch takes: a time held for it is no later record's. */
void record_activate_skipped(void);
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
/* The held begin of process id, if it holds one, goes into the buffer (it stops
 * running: a switch from it). */
void record_request_release(uint64_t id);
/* Whatever begin is held goes into the buffer (a collection begins). */
void record_request_release_all(void);
/* No begin is held any more (the held one ended after its tool left, or the open
 * requests were dropped). */
void record_requests_dropped(void);
#endif

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* record.c - the recorder (record.h): the batch probes' records, their time, and the
 * request begin held back while its process runs. */
#include "record.h"
#include "traceparent.h"

#include <string.h>

#if SQVM_PROBES

/* ---- A record's time: one policy ----
 * A record takes, in this order: the time its site hands in (the clock the site read
 * for a wait's deadline), the time of the event it follows at the same moment (a wait
 * and the switch to the next process: record_hold), the event loop's round (every wait
 * that one epoll_wait ends ended when it returned: batch_round_begin), or the clock.
 * Each saves a clock read, about 20 ns and a third of what a record costs the VM. A
 * flush point forgets a held time (batch_flush_pending), so a time held before the VM
 * blocks or sleeps is never taken after. */
static uint64_t record_round_time(void)
{
    if (!sq_batch.inRound) return batch_clock();
    if (!sq_batch.roundNs) sq_batch.roundNs = batch_clock();
    return sq_batch.roundNs;
}

static void record_hold(uint64_t ns) { sq_batch.heldNs = ns; }

static uint64_t record_time(void)
{
    uint64_t now = sq_batch.heldNs;
    sq_batch.heldNs = 0;
    return now ? now : record_round_time();
}

/* A new record of kind, stamped with its time (the caller fills in its words). */
static inline SqEventRecord *record_new(uint32_t kind)
{
    uint64_t now = record_time();
    SqEventRecord *r = batch_reserve(1, now);
    r->kind = kind;
    r->ts = now;
    return r;
}

/* ---- Calls and allocations ---- */

void record_call(uint32_t kind, uint32_t depth, const SqEvCall *c)
{
    SqEventRecord *r = record_new(kind);
    r->arg = depth;
    r->call = *c;
}

void record_alloc(const SqEvAlloc *a)
{
    SqEventRecord *r = record_new(SQ_EV_ALLOC);
    r->alloc = *a;
}

/* ---- Green processes ---- */

/* p's words of r (SqEvProcess): id, name, totals; the kind's other words zero. */
static SqEventRecord *process_fill(SqEventRecord *r, uint32_t arg, const RecordProcess *p, const SqEvAllocs *allocs)
{
    r->arg = arg;
    r->process.id = p->id;
    r->process.fd = 0;
    r->process.timeout = 0;
    r->process.name = (uint64_t)(uintptr_t)p->name;
    r->process.allocs = *allocs;
    return r;
}

uint64_t record_process(uint32_t kind, uint32_t arg, const RecordProcess *p, const SqEvAllocs *allocs,
                        const SqEvProcess *w, uint64_t siteNs)
{
    record_request_release(p->id);
    if (w) record_hold(record_site_time(siteNs));
    SqEventRecord *r = process_fill(record_new(kind), arg, p, allocs);
    if (w) {
        r->process.semaphore = w->semaphore; /* or fd: the same word */
        r->process.timeout = w->timeout;
        r->process.method = w->method;
        record_hold(r->ts); /* the switch to the next process follows (or a flush point) */
    }
    return r->ts;
}

void record_activate(const RecordProcess *to, uint32_t priority, const SqEvAllocs *allocs)
{
    record_request_release(to->id);
    process_fill(record_new(SQ_EV_PROCESS_ACTIVATE), priority, to, allocs);
}

void record_activate_skipped(void) { record_hold(0); }

/* ---- I/O ---- */

/* The SQ_EV_IO_FRAMES record r: Methods m[from..SQ_EV_IO_DEPTH), then zeros (from is a
 * constant: the copies are a few moves). */
static inline void io_frames(SqEventRecord *r, uint64_t ts, const uint64_t *m, int from, int kind)
{
    r->kind = SQ_EV_IO_FRAMES;
    r->arg = SQ_EV_IO_ARG(from, kind);
    r->ts = ts;
    memcpy(r->frames.methods, m + from, (SQ_EV_IO_DEPTH - from) * sizeof(uint64_t));
    memset(r->word + (SQ_EV_IO_DEPTH - from), 0, (SQ_EV_WORDS - (SQ_EV_IO_DEPTH - from)) * sizeof(uint64_t));
}

void record_io(uint32_t arg, uint64_t startNs, uint64_t endNs, const SqEvIo *io, const uint64_t *m, int depth)
{
    bool more = depth > SQ_EV_IO_METHODS;
    SqEventRecord *r = batch_reserve(more ? 2 : 1, endNs);
    r->kind = SQ_EV_IO;
    r->arg = arg;
    r->ts = startNs;
    r->io = *io;
    memcpy(r->io.methods, m, sizeof(r->io.methods));
    if (more) io_frames(r + 1, startNs, m, SQ_EV_IO_METHODS, SQ_EV_IO_KIND(arg));
}

void record_io_ready(uint32_t arg, const RecordProcess *p, const SqEvAllocs *allocs, const SqEvProcess *w,
                     const uint64_t *m, int kind)
{
    bool frames = w->wait_began != 0;
    uint64_t now = record_round_time();
    SqEventRecord *r = batch_reserve(frames ? 2 : 1, now);
    r->kind = SQ_EV_IO_READY;
    r->ts = now;
    process_fill(r, arg, p, allocs);
    r->process.fd = w->fd;
    r->process.timedout = w->timedout;
    r->process.wait_began = w->wait_began;
    if (frames) io_frames(r + 1, now, m, 0, kind);
}

/* ---- Requests (req__batch) ---- */

static struct {
    bool on;           /* a begin is held */
    uint64_t owner;    /* its process's id */
    uint64_t *pending; /* where that process publishes it */
    uint64_t id, ns;
    SqEvAllocs allocs;
    const char *route;
    bool traced;
    TraceContext trace;
} held;

/* The requests' records (SqEvRequest): r, of its kind and time. */
static SqEventRecord *request_fill(SqEventRecord *r, int status, uint64_t id, const char *route, uint64_t process,
                                   const SqEvAllocs *allocs)
{
    r->arg = (uint32_t)status;
    r->req.id = id;
    r->req.route = (uint64_t)(uintptr_t)route;
    r->req.process = process;
    r->req.began = 0;
    r->req.allocs = *allocs;
    return r;
}

/* A request's trace record (SQ_EV_REQUEST_TRACE), before its begin or run record. */
static void trace_fill(SqEventRecord *r, uint64_t ns, uint64_t id, const TraceContext *t, uint64_t process)
{
    r->kind = SQ_EV_REQUEST_TRACE;
    r->arg = t->flags;
    r->ts = ns;
    r->trace.id = id;
    r->trace.trace_hi = t->traceHi;
    r->trace.trace_lo = t->traceLo;
    r->trace.parent = t->parent;
    r->trace.span = t->span;
    r->trace.process = process;
}

/* No begin is held any more (its owner's pending word says so too). */
static void unhold(void)
{
    if (held.on && held.pending) *held.pending = 0;
    held.on = false;
}

void record_request_release(uint64_t id)
{
    if (LIKELY(!held.on || held.owner != id)) return;
    unhold();
    if (!SQUEAK_REQ_BATCH_ENABLED()) return; /* the tool left */
    /* reserved as of now: its own time may be older than the buffer's first record's
     * (an empty buffer would take it as its first, and the next record flush it as aged) */
    SqEventRecord *r = batch_reserve(held.traced ? 2 : 1, record_round_time());
    if (held.traced) trace_fill(r++, held.ns, held.id, &held.trace, id);
    r->kind = SQ_EV_REQUEST_BEGIN;
    r->ts = held.ns;
    request_fill(r, 0, held.id, held.route, id, &held.allocs);
}

void record_request_release_all(void)
{
    if (held.on) record_request_release(held.owner);
}

void record_request_begin(uint64_t id, const char *route, const RecordProcess *owner, const SqEvAllocs *allocs,
                          const TraceContext *trace)
{
    record_request_release_all(); /* nested: the outer one's begin first */
    held.on = true;
    held.owner = owner->id;
    held.pending = owner->pending;
    held.id = id;
    held.route = route;
    held.ns = record_round_time();
    held.traced = trace != NULL;
    if (trace) held.trace = *trace;
    held.allocs = *allocs;
    if (owner->pending) *owner->pending = id;
}

void record_request_end(uint64_t id, const char *route, const RecordProcess *owner, const SqEvAllocs *allocs,
                        int status)
{
    if (held.on && held.id == id) { /* it ran from its begin to here */
        unhold();
        if (SQUEAK_REQ_BATCH_ENABLED()) {
            if (held.traced) {
                SqEventRecord *t = record_new(SQ_EV_REQUEST_TRACE);
                trace_fill(t, t->ts, id, &held.trace, owner->id);
            }
            SqEventRecord *r = request_fill(record_new(SQ_EV_REQUEST_RUN), status, id, route, owner->id, allocs);
            r->req.began = held.ns;
            r->req.allocs.objects -= held.allocs.objects;
            r->req.allocs.bytes -= held.allocs.bytes;
        }
    } else {
        record_request_release(owner->id); /* ended by another process: the owner's held one is another */
        if (SQUEAK_REQ_BATCH_ENABLED()) request_fill(record_new(SQ_EV_REQUEST_END), status, id, route, owner->id, allocs);
    }
}

void record_requests_dropped(void) { unhold(); }

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* record.c - the recorder (record.h): the batch probes' records, which of them take
 * each kind, the records' time, the buffer and its flush (the batch probes' sites:
 * compiled without a red zone, Makefile), the ticker that flushes a VM that computes
 * without events, and the request begin held back while its process runs. */
#include "record.h"
#include "probes.h"
#include "traceparent.h"
#include "vm.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if SQVM_PROBES

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
    TAKE_SAMPLE = 64,  /* sample__batch */
};

static const uint8_t takers[] = {
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
    [SQ_EV_ALLOC_SAMPLE] = TAKE_SAMPLE,
};

/* Is a record of kind wanted now (requestOpen: its process has a request open)? With a
 * constant kind the compiler folds the table into the semaphore tests it needs. */
static inline bool record_wanted(uint32_t kind, bool requestOpen)
{
    uint8_t t = kind < sizeof(takers) ? takers[kind] : 0;
    return ((t & TAKE_ALLOC) && SQUEAK_ALLOC_BATCH_ENABLED()) || ((t & TAKE_CALL) && SQUEAK_CALL_BATCH_ENABLED()) ||
           ((t & TAKE_SCHED) && SQUEAK_SCHED_BATCH_ENABLED()) || ((t & TAKE_REQ) && SQUEAK_REQ_BATCH_ENABLED()) ||
           ((t & TAKE_REQ_OPEN) && requestOpen && SQUEAK_REQ_BATCH_ENABLED()) ||
           ((t & TAKE_IO) && SQUEAK_IO_BATCH_ENABLED()) || ((t & TAKE_SAMPLE) && SQUEAK_SAMPLE_BATCH_ENABLED());
}

bool record_takes(uint32_t kind, bool requestOpen) { return record_wanted(kind, requestOpen); }

/* ---- The buffer and its flush ---- */

SqBatch sq_batch;

void record_flush(void)
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
    if (SQ_ENABLED(REQ_BATCH)) SQUEAK_REQ_BATCH(rec, n);
    if (SQ_ENABLED(IO_BATCH)) SQUEAK_IO_BATCH(rec, n);
    if (SQ_ENABLED(SAMPLE_BATCH)) SQUEAK_SAMPLE_BATCH(rec, n);
    if (SQ_ENABLED(RING_RECORDS)) record_ring_append(sq_batch.rec, n);
}

/* The record switches' sites (squeak.d: sched__records, req__records, io__records,
 * sample__records, ring__records): never called. A tracer attached to one sets its batch
 * probe's semaphore (ring__records: its own, which turns the record ring on), which is
 * all it is for; the function is kept (used) so that the sites and their notes are. */
__attribute__((used, noinline, cold)) void record_switch_sites(void);
__attribute__((used, noinline, cold)) void record_switch_sites(void)
{
    SQUEAK_SCHED_RECORDS();
    SQUEAK_REQ_RECORDS();
    SQUEAK_IO_RECORDS();
    SQUEAK_SAMPLE_RECORDS();
    SQUEAK_RING_RECORDS();
}

/* ---- The ticker ----
 * A VM that stops producing events while it computes would keep a partial batch to
 * itself until it next sleeps. While a batch probe is enabled (or records wait) a
 * one-shot timer signals the VM's own thread when the oldest record it saw would be
 * SQ_BATCH_AGE_NS old and, if it is still there, the handler asks the VM to flush at
 * its next safe point (the scheduler's attention flag, as the event loop's watcher
 * does: sched_poll calls record_flush_pending). A VM that flushes its own batches (full,
 * or aged at its next record) needs no help: each time the handler finds a batch begun
 * since it last looked, or none at all, it waits twice as long, from four ages up to
 * 64 (128 ms), so that on a busy or an idle VM it runs about 8 times a second. Each
 * signal costs the VM an interrupt and a signal frame: at 1,000 a second (half an age)
 * they took 2% of a /hello server's throughput under sqsched in a VM guest. A VM that
 * stops right after a long wait keeps its records at most about 65 ages.
 *
 * A timer signal, not a thread: a process that has started a second thread makes glibc
 * take its multi-threaded path for the rest of its life (every cancellable system call
 * enables and disables asynchronous cancellation: 0.6% of a /hello request's samples).
 * The handler is installed with SA_RESTART, and the VM's blocking calls that a signal
 * interrupts anyway (epoll_wait, nanosleep) already go round again. The records are the
 * VM thread's; the handler, on that thread, only reads the count and the time. */
#define TICKER_SIGNAL (SIGRTMIN + 5) /* glibc keeps the first few for itself */

static timer_t ticker;
static int tickerMade;                 /* 1: ticker exists; -1: it could not be made */
static volatile sig_atomic_t tickerOn; /* 1 while armed; the handler clears it as it stops */
static uint64_t tickerSeenFirst;       /* the batch the handler saw last (0: none) */
static volatile uint64_t tickerLastNs; /* when it was last armed */
static uint64_t tickerBackoff;         /* the wait while the VM flushes by itself */

#define TICKER_MIN_WAIT (4 * SQ_BATCH_AGE_NS)
#define TICKER_MAX_WAIT (64 * SQ_BATCH_AGE_NS)

static void ticker_arm(uint64_t ns)
{
    tickerLastNs = record_clock();
    struct itimerspec it = {{0, 0}, {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)}};
    timer_settime(ticker, 0, &it, NULL);
}

static void ticker_tick(int sig)
{
    (void)sig;
    int saved = errno;
    uint32_t n = sq_batch.n;
    if (!n && !SQ_ENABLED(ALLOC_BATCH) && !SQ_ENABLED(CALL_BATCH) && !sq_sched_batches() && !SQ_ENABLED(IO_BATCH) &&
        !SQ_ENABLED(SAMPLE_BATCH)) {
        tickerOn = 0; /* the tools are gone; the next batch re-arms it */
        tickerSeenFirst = 0;
        errno = saved;
        return;
    }
    uint64_t first = sq_batch.firstNs, age = record_clock() - first, next;
    if (!n || (tickerSeenFirst && first != tickerSeenFirst && age < SQ_BATCH_AGE_NS)) {
        /* nothing to flush, or it flushed a batch by itself since: wait longer */
        tickerBackoff = tickerBackoff ? 2 * tickerBackoff : TICKER_MIN_WAIT;
        if (tickerBackoff > TICKER_MAX_WAIT) tickerBackoff = TICKER_MAX_WAIT;
        next = tickerBackoff;
        if (!n) tickerSeenFirst = 0;
    } else if (age >= SQ_BATCH_AGE_NS) {
        tickerBackoff = 0;
        next = SQ_BATCH_AGE_NS;
        __atomic_store_n(&sched_attention, 1, __ATOMIC_RELEASE);
    } else { /* a batch it saw begin, or the first since an empty buffer: when it ages */
        tickerBackoff = 0;
        next = SQ_BATCH_AGE_NS - age + SQ_BATCH_AGE_NS / 16;
    }
    if (n) tickerSeenFirst = first;
    ticker_arm(next);
    errno = saved;
}

static void start_ticker(void)
{
    if (!tickerMade) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = ticker_tick;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID; /* the VM's thread, never a helper */
        ev.sigev_signo = TICKER_SIGNAL;
        ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
        tickerMade = sigaction(TICKER_SIGNAL, &sa, NULL) == 0 && timer_create(CLOCK_MONOTONIC, &ev, &ticker) == 0 ? 1 : -1;
    }
    if (tickerMade < 0) return; /* batches still flush when full, aged, idle or at exit */
    tickerOn = 1;
    ticker_arm(SQ_BATCH_AGE_NS);
}

/* reserve's slow path: the first record of a batch (the ticker may need
 * arming), or a full or aged batch to flush first. */
static __attribute__((noinline, cold)) uint32_t make_room(uint64_t now, uint32_t n)
{
    if (n) {
        record_flush();
        n = 0;
    }
    sq_batch.firstNs = now;
    /* not armed, or its signal lost (a tracer that stopped the VM with ptrace may
     * swallow a signal that arrived meanwhile): its last arming was at most 64 ages */
    if (UNLIKELY(!tickerOn || now - tickerLastNs > 2 * TICKER_MAX_WAIT)) start_ticker();
    return n;
}

/* count (1 or 2) records at the end of the buffer, in the same batch (a kind that
 * continues in the next record: SQ_EV_IO_FRAMES), as of time now: first flushes the
 * buffer if it is full, or if its oldest record is SQ_BATCH_AGE_NS old. The caller
 * fills them in, kind and ts included. */
static inline SqEventRecord *reserve(uint32_t count, uint64_t now)
{
    uint32_t n = sq_batch.n;
    if (UNLIKELY(!n || n + count > SQ_BATCH_MAX || now - sq_batch.firstNs > SQ_BATCH_AGE_NS)) n = make_room(now, n);
    sq_batch.n = n + count;
    return &sq_batch.rec[n];
}

/* ---- A record's time: one policy ----
 * A record takes, in this order: the time its site hands in (the clock the site read
 * for a wait's deadline), the time of the event it follows at the same moment (a wait
 * and the switch to the next process: record_hold), the event loop's round (every wait
 * that one epoll_wait ends ended when it returned: record_round_begin), or the clock.
 * Each saves a clock read, about 20 ns and a third of what a record costs the VM. A
 * flush point forgets a held time (record_flush_pending), so a time held before the VM
 * blocks or sleeps is never taken after. */
static uint64_t record_round_time(void)
{
    if (!sq_batch.inRound) return record_clock();
    if (!sq_batch.roundNs) sq_batch.roundNs = record_clock();
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
    SqEventRecord *r = reserve(1, now);
    r->kind = kind;
    r->ts = now;
    return r;
}

/* ---- Calls and allocations ---- */

void record_call(uint32_t kind, uint32_t depth, const SqEvCall *c)
{
    /* the four call kinds have one row of takers: tested as a constant, one semaphore */
    if (!record_wanted(SQ_EV_METHOD_ENTRY, false)) return;
    SqEventRecord *r = record_new(kind);
    r->arg = depth;
    r->call = *c;
}

void record_alloc(const SqEvAlloc *a)
{
    if (!record_wanted(SQ_EV_ALLOC, false)) return;
    SqEventRecord *r = record_new(SQ_EV_ALLOC);
    r->alloc = *a;
}

void record_alloc_sample(const SqEvAllocSample *s)
{
    if (!record_wanted(SQ_EV_ALLOC_SAMPLE, false)) return;
    SqEventRecord *r = record_new(SQ_EV_ALLOC_SAMPLE);
    r->arg = 0;
    r->sample = *s;
}

/* ---- Green processes ---- */

static void record_request_release(uint64_t id);

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
    if (!record_wanted(kind, p->requestOpen)) return 0;
    /* a wait: the switch away from its process follows at the same moment */
    bool wait = kind == SQ_EV_PROCESS_WAIT || kind == SQ_EV_IO_WAIT;
    record_request_release(p->id);
    if (wait) record_hold(record_site_time(siteNs));
    SqEventRecord *r = process_fill(record_new(kind), arg, p, allocs);
    if (w) {
        r->process.semaphore = w->semaphore; /* or fd: the same word */
        r->process.timeout = w->timeout;
        r->process.method = w->method;
    }
    if (wait) record_hold(r->ts); /* the switch to the next process follows (or a flush point) */
    return r->ts;
}

void record_activate(const RecordProcess *to, uint32_t priority, const RecordProcess *from, const SqEvAllocs *allocs)
{
    if (from) record_request_release(from->id); /* before the switch's record, whoever takes it */
    if (!record_wanted(SQ_EV_PROCESS_ACTIVATE, to->requestOpen) &&
        !(from && record_wanted(SQ_EV_PROCESS_ACTIVATE, from->requestOpen))) {
        record_hold(0); /* a time held for this switch is no later record's */
        return;
    }
    record_request_release(to->id);
    process_fill(record_new(SQ_EV_PROCESS_ACTIVATE), priority, to, allocs);
}

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
    if (!record_wanted(SQ_EV_IO, false)) return;
    bool more = depth > SQ_EV_IO_METHODS;
    SqEventRecord *r = reserve(more ? 2 : 1, endNs);
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
    if (!record_wanted(SQ_EV_IO_READY, false)) return;
    bool frames = w->wait_began != 0;
    uint64_t now = record_round_time();
    SqEventRecord *r = reserve(frames ? 2 : 1, now);
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

/* The held begin of process id, if it holds one, goes into the buffer: before its
 * process's next record, or a switch from it. */
static void record_request_release(uint64_t id)
{
    if (LIKELY(!held.on || held.owner != id)) return;
    unhold();
    if (!record_wanted(SQ_EV_REQUEST_BEGIN, true)) return; /* the tool left */
    /* reserved as of now: its own time may be older than the buffer's first record's
     * (an empty buffer would take it as its first, and the next record flush it as aged) */
    SqEventRecord *r = reserve(held.traced ? 2 : 1, record_round_time());
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
        if (record_wanted(SQ_EV_REQUEST_RUN, true)) {
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
        if (record_wanted(SQ_EV_REQUEST_END, true))
            request_fill(record_new(SQ_EV_REQUEST_END), status, id, route, owner->id, allocs);
    }
}

void record_requests_dropped(void) { unhold(); }

#endif

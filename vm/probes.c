// SPDX-License-Identifier: BSD-2-Clause
/* probes.c - the USDT probe sites' argument preparation and the allocation sampler. Each
 * probe_* is called by its site once the site's guard (probes.h) has seen a semaphore
 * set: it fires its per-event probe if that is enabled, and hands the recorder
 * (vm/record.c), which decides whether a batch probe takes a record of it, what it
 * found here: the process's id and name, the frames' Methods, the descriptor's kind,
 * the allocation totals. */
#include "probes.h"
#include "debug_offsets.h"
#include "record.h"
#include "traceparent.h"
#include "alloc.h"
#include "gc.h"
#include "interp.h"
#include "io.h"
#include "sched.h"
#include "symbol.h"
#include "vm.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <stddef.h>

/* The allocation sampler's mean gap (below); in the debug offsets for profilers. */
uint64_t probes_sample_mean = 512 * 1024;

extern const SqDebugOffsets sqvm_debug_offsets; /* debug_offsets.c: vm__start hands it out */

#if SQVM_PROBES

/* ---- The semaphores ----
 * Initialised data in .probes (the kernel counts tracers in the file's mapping of it),
 * on one cache line: the safe points read the four call probes' as one word. */
__attribute__((section(".probes"), aligned(64))) struct squeak_semaphores squeak_semaphores = {0};
_Static_assert(offsetof(struct squeak_semaphores, method__return) == offsetof(struct squeak_semaphores, method__entry) + 2 &&
               offsetof(struct squeak_semaphores, block__entry) == offsetof(struct squeak_semaphores, method__entry) + 4 &&
               offsetof(struct squeak_semaphores, call__batch) == offsetof(struct squeak_semaphores, method__entry) + 6,
               "the call probes are declared together in squeak.d (probes.h reads their semaphores as one word)");
_Static_assert(offsetof(struct squeak_semaphores, alloc__batch) == offsetof(struct squeak_semaphores, object__alloc) + 2,
               "alloc__batch follows object__alloc in squeak.d (probes.h tests both semaphores with one compare)");
_Static_assert(offsetof(struct squeak_semaphores, req__batch) == offsetof(struct squeak_semaphores, sched__batch) + 2,
               "req__batch follows sched__batch in squeak.d (probes.h reads both semaphores as one word)");

/* ---- Methods and blocks ---- */

static const char *receiver_class_name(Frame *f) { return class_of(f->self)->name; }

/* The call event as a record (call__batch): the probe's arguments, and what a reader
 * of the batch can no longer find in the frame, which may hold another activation by
 * then: the caller's frame and both Methods. */
static void batch_call(uint32_t kind, Frame *f, uint32_t depth)
{
    Method *m = f->method;
    Frame *caller = f->caller;
    SqEvCall c = {
        .recv_cls = (uintptr_t)receiver_class_name(f),
        .selector = (uintptr_t)sym_cstr(m->selector),
        .def_cls = (uintptr_t)m->holder->name,
        .frame = (uintptr_t)f,
        .caller = caller && caller->method ? (uintptr_t)caller : 0,
        .method = (uintptr_t)m,
        .caller_method = caller ? (uintptr_t)caller->method : 0,
    };
    record_call(kind, depth, &c);
}

void probe_method_entry(Frame *f, uint32_t depth)
{
    if (interp_current && !interp_current->ran) return; /* a new process: fires when it runs */
    Method *m = f->method;
    batch_call(m->flags & MF_BLOCK ? SQ_EV_BLOCK_ENTRY : SQ_EV_METHOD_ENTRY, f, depth);
    const char *sel = sym_cstr(m->selector);
    if (m->flags & MF_BLOCK) {
        if (SQ_ENABLED(BLOCK_ENTRY))
            SQUEAK_BLOCK_ENTRY(receiver_class_name(f), sel, m->holder->name, (uintptr_t)f, depth);
    } else if (SQ_ENABLED(METHOD_ENTRY)) {
        SQUEAK_METHOD_ENTRY(receiver_class_name(f), sel, m->holder->name, (uintptr_t)f, depth);
    }
}

void probe_method_return(Frame *f, uint32_t depth)
{
    Method *m = f->method;
    batch_call(m->flags & MF_BLOCK ? SQ_EV_BLOCK_RETURN : SQ_EV_METHOD_RETURN, f, depth);
    const char *sel = sym_cstr(m->selector);
    if (m->flags & MF_BLOCK) {
        if (SQ_ENABLED(BLOCK_RETURN))
            SQUEAK_BLOCK_RETURN(receiver_class_name(f), sel, m->holder->name, (uintptr_t)f, depth);
    } else if (SQ_ENABLED(METHOD_RETURN)) {
        SQUEAK_METHOD_RETURN(receiver_class_name(f), sel, m->holder->name, (uintptr_t)f, depth);
    }
}

/* ---- Allocation ---- */

/* The running method's class name and selector ("" if none); answers the method (NULL). */
static const Method *allocating_method(const char **cls, const char **sel)
{
    Frame *f = interp_current ? interp_current->fp : NULL;
    if (f && f->method) {
        *cls = f->method->holder->name;
        *sel = sym_cstr(f->method->selector);
        return f->method;
    }
    *cls = "";
    *sel = "";
    return NULL;
}

/* The gate (probes.h) has seen object__alloc's or alloc__batch's semaphore set. */
void probe_object_alloc(Obj *o)
{
    const char *name = VM.classes[obj_class_index(o)]->name, *acls, *asel;
    uint64_t bytes = (uint64_t)obj_alloc_bytes(obj_num_slots(o));
    allocating_method(&acls, &asel);
    SqEvAlloc a = { .cls = (uintptr_t)name, .bytes = bytes, .alloc_cls = (uintptr_t)acls, .alloc_sel = (uintptr_t)asel };
    record_alloc(&a);
    if (SQ_ENABLED(OBJECT_ALLOC)) SQUEAK_OBJECT_ALLOC(name, bytes, acls, asel);
}

/* The VM's allocation totals at an event (objects, and bytes as sqvm_debug_offsets
 * tells a reader to add them up), which a reader of the batch can no longer read as
 * they were. */
static void alloc_totals(SqEvAllocs *t)
{
    t->objects = vm_counters.allocations;
    t->bytes = gc_stats_data.bytesAllocated + (uint64_t)(gc_top - gc_eden);
}

/* p as its records name it (record.h). (A process's name is read only for a record or
 * probe that takes it: it is in the Smalltalk Process object, which the scheduler does
 * not otherwise touch.) */
static RecordProcess record_process_of(Process *p)
{
    RecordProcess r = { .id = p->id, .name = sched_process_name(p), .requestOpen = p->requestsOpen != 0,
                        .pending = &p->requestPending };
    return r;
}

/* A scheduler event of p, for a record (w: a wait's words): its time, 0 if none. */
static uint64_t process_record(uint32_t kind, uint32_t arg, Process *p, const SqEvProcess *w, uint64_t siteNs)
{
    RecordProcess who = record_process_of(p);
    SqEvAllocs totals;
    alloc_totals(&totals);
    return record_process(kind, arg, &who, &totals, w, siteNs);
}

/* A process switch (call__batch's consumers time calls without the time their process
 * was switched out; sched__batch's follow the scheduler): one record for any of them.
 * req__batch's takes the switch to a process with a request open, and from one (which
 * may have stopped without a record of its own: suspended). */
void probe_batch_activate(Process *to, Process *from)
{
    RecordProcess who = record_process_of(to);
    RecordProcess was = { .id = from ? from->id : 0, .requestOpen = from && from->requestsOpen != 0 };
    SqEvAllocs totals;
    alloc_totals(&totals);
    record_activate(&who, (uint32_t)to->priority, from ? &was : NULL, &totals);
}

/* The sampler: the gap to the next sample is exponentially distributed with mean
 * probes_sample_mean bytes (as in tcmalloc and Go), so every byte has the same chance of
 * being sampled and a sample's weight (the bytes since the previous one) makes the
 * sums per class unbiased estimates of the bytes allocated. It runs while its
 * probe's semaphore is set, which it sees each time the collector asks for a
 * budget; without a tracer that is every SAMPLE_POLL_BYTES. */
#define SAMPLE_POLL_BYTES (256 << 10)
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static struct {
    bool on;
    int64_t remaining;  /* bytes until the next sample point */
    uint64_t accum;     /* bytes since the previous one */
    uint64_t weight;    /* of the sample that is due */
} sampler;
bool probes_sample_due;

static uint64_t next_gap(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    double u = ((double)(rng >> 11) + 0.5) / 9007199254740992.0; /* (0,1) */
    double gap = -log(u) * (double)probes_sample_mean;
    return gap < 1 ? 1 : (uint64_t)gap;
}

/* The sampler runs for object__alloc__sample's tools and sample__batch's. */
static inline bool sampling(void) { return SQ_ENABLED(OBJECT_ALLOC_SAMPLE) || SQ_ENABLED(SAMPLE_BATCH); }

uint64_t probes_alloc_budget(uint64_t bumped, size_t bytes)
{
    if (!sampling()) {
        sampler.on = false;
        return SAMPLE_POLL_BYTES;
    }
    if (!sampler.on) { /* counting starts with the next slow-path allocation */
        if (!bytes) return SAMPLE_POLL_BYTES;
        sampler.on = true;
        sampler.remaining = (int64_t)next_gap();
        sampler.accum = 0;
        bumped = 0;
    }
    sampler.accum += bumped + bytes;
    sampler.remaining -= (int64_t)(bumped + bytes);
    if (bytes && sampler.remaining <= 0) {
        probes_sample_due = true;
        sampler.weight = sampler.accum;
        sampler.accum = 0;
        sampler.remaining = (int64_t)next_gap();
    }
    return sampler.remaining > 0 ? (uint64_t)sampler.remaining : 0;
}

/* o is the allocation that crossed the sample point; its weight is the bytes
 * allocated since the previous sample point. */
void probe_alloc_sample(Obj *o, size_t bytes)
{
    probes_sample_due = false;
    if (!sampling()) return;
    const char *name = VM.classes[obj_class_index(o)]->name, *acls, *asel;
    const Method *m = allocating_method(&acls, &asel);
    if (SQ_ENABLED(SAMPLE_BATCH)) {
        SqEvAllocSample s = { .cls = (uintptr_t)name, .bytes = bytes, .alloc_cls = (uintptr_t)acls,
                              .alloc_sel = (uintptr_t)asel, .weight = sampler.weight,
                              .process = interp_current ? interp_current->id : 0, .method = (uintptr_t)m };
        record_alloc_sample(&s);
    }
    if (!SQ_ENABLED(OBJECT_ALLOC_SAMPLE)) return;
    /* in a register: USDT argument specs cannot be RIP-relative for libbpf */
    uint64_t weight = sampler.weight;
    __asm__ volatile("" : "+r"(weight));
    SQUEAK_OBJECT_ALLOC_SAMPLE(name, (uint64_t)bytes, acls, asel, weight);
}

void probes_init(uint64_t allocSampleBytes)
{
    if (allocSampleBytes) probes_sample_mean = allocSampleBytes;
}

/* ---- Collections ---- */

/* The site (gc.c) has tested the kind's semaphore: SQ_GC_BEGIN_ENABLED, SQ_GC_END_ENABLED. */
void probe_gc_begin(int kind, uint64_t seq, size_t youngBytes, size_t oldBytes)
{
    if (kind == GC_YOUNG) SQUEAK_GC_INCREMENTAL_BEGIN(seq, (uint64_t)youngBytes, (uint64_t)oldBytes);
    else SQUEAK_GC_FULL_BEGIN(seq, (uint64_t)youngBytes, (uint64_t)oldBytes);
}

void probe_gc_end(const GCEvent *e)
{
    if (e->kind == GC_YOUNG)
        SQUEAK_GC_INCREMENTAL_END(e->seq, e->pauseNs, (uint64_t)e->youngBefore, (uint64_t)e->youngAfter,
                                  (uint64_t)e->oldBefore, (uint64_t)e->oldAfter, (uint64_t)e->survivedBytes,
                                  (uint64_t)e->tenuredBytes, (uint64_t)e->freedBytes, (uint64_t)e->rememberedCount);
    else
        SQUEAK_GC_FULL_END(e->seq, e->pauseNs, (uint64_t)e->youngBefore, (uint64_t)e->youngAfter,
                           (uint64_t)e->oldBefore, (uint64_t)e->oldAfter, (uint64_t)e->survivedBytes,
                           (uint64_t)e->tenuredBytes, (uint64_t)e->freedBytes, (uint64_t)e->rememberedCount);
}

/* ---- Lifecycle, loading, errors ---- */

void probe_class_load(const char *name, const char *path) { SQUEAK_CLASS_LOAD(name, path); }
void probe_vm_start(void) { SQUEAK_VM_START(SQVM_VERSION, (uintptr_t)&sqvm_debug_offsets); }
void probe_vm_exit(int status) { SQUEAK_VM_EXIT(status); }
void probe_dnu(Value receiver, Value selector) { SQUEAK_METHOD_DNU(class_of(receiver)->name, sym_cstr(selector)); }

void probe_primitive_fail(Value receiver, const char *primitive, const char *reason)
{
    SQUEAK_PRIMITIVE_FAIL(class_of(receiver)->name, primitive, reason);
}

void probe_exception_signal(Value exception, const Method *signaller)
{
    SQUEAK_EXCEPTION_SIGNAL(class_of(exception)->name, signaller ? signaller->holder->name : "",
                            signaller ? sym_cstr(signaller->selector) : "");
}

/* The method the running process waits in (its innermost frame's), for a wait's record. */
static uint64_t waiting_method(void)
{
    Frame *f = interp_current ? interp_current->fp : NULL;
    return (uint64_t)(uintptr_t)(f ? f->method : NULL);
}

void probe_process(int what, Process *p)
{
    uint64_t id = p->id;
    int priority = p->priority;
    if (what == PROBE_PROCESS_CREATE) {
        process_record(SQ_EV_PROCESS_CREATE, (uint32_t)priority, p, NULL, 0);
        if (SQ_ENABLED(PROCESS_CREATE)) SQUEAK_PROCESS_CREATE(id, sched_process_name(p), priority);
    } else if (what == PROBE_PROCESS_ACTIVATE) { /* its record: probe_batch_activate */
        if (SQ_ENABLED(PROCESS_ACTIVATE)) SQUEAK_PROCESS_ACTIVATE(id, sched_process_name(p), priority);
    } else if (what == PROBE_PROCESS_EXIT) {
        process_record(SQ_EV_PROCESS_EXIT, 0, p, NULL, 0);
        if (SQ_ENABLED(PROCESS_EXIT)) SQUEAK_PROCESS_EXIT(id, sched_process_name(p));
    }
}

void probe_process_ready(Process *p, int reason)
{
    /* a signal's: where the signaller (the running process) sent it */
    SqEvProcess w = { .method = reason == READY_SIGNALLED ? waiting_method() : 0 };
    process_record(SQ_EV_PROCESS_READY, (uint32_t)reason, p, &w, 0);
    if (SQ_ENABLED(PROCESS_READY)) SQUEAK_PROCESS_READY(p->id, sched_process_name(p), reason);
}

void probe_process_wait(Process *p, uint64_t semaphore, uint64_t timeoutNs, uint64_t now, uint32_t holder)
{
    SqEvProcess w = { .semaphore = semaphore, .timeout = timeoutNs, .method = waiting_method() };
    process_record(SQ_EV_PROCESS_WAIT, holder, p, &w, now);
    if (SQ_ENABLED(PROCESS_WAIT)) SQUEAK_PROCESS_WAIT(p->id, sched_process_name(p), semaphore, timeoutNs);
}

/* ---- I/O (io__batch) ---- */

/* The innermost SQ_EV_IO_DEPTH Methods of frame f and its callers into m (0 past the
 * bottom frame, whose method is NULL): what sqvm_debug_offsets lets a reader walk, as
 * it was at the event. Answers how many. Each frame outwards is a load the
 * interpreter has not made lately (a cache miss, often): no more than that. */
static int stack_methods(Frame *f, uint64_t *m)
{
    int n = 0;
    for (; n < SQ_EV_IO_DEPTH && f && f->method; f = f->caller) m[n++] = (uint64_t)(uintptr_t)f->method;
    for (int i = n; i < SQ_EV_IO_DEPTH; i++) m[i] = 0;
    return n;
}

_Static_assert(sizeof(((Process *)0)->ioWaitMethods) == SQ_EV_IO_DEPTH * sizeof(uint64_t), "a wait's Methods");

/* The kind of descriptor of a call (SQ_IO_KIND_OF_OP): a failed open's is a file's (a
 * path's); a connect's, a socket the VM made; accept's, the listener's (a connection
 * accepted from a TCP listener is TCP). */
static int io_call_kind(int op, int fd, int64_t result)
{
    if (op == SQ_IO_OPEN) return result >= 0 ? io_fd_kind_new((int)result) : SQ_IO_FILE;
    if (op == SQ_IO_CONNECT) return SQ_IO_TCP;
    return io_fd_kind(fd);
}

/* SQ_IO_START (probes.h): when the call began; 0: no call began under io__batch. (One
 * left by a call that io__batch's tool detached during is older than the next tool: its
 * reader skips the record, bpf/sqbatch.bpf.h.) */
static uint64_t ioCallStart;

void probe_io_start(void) { ioCallStart = record_clock(); }

/* SQ_IO_END (probes.h): the call that began at ioCallStart ended now. errno stays as
 * the call left it (the primitive reads it next). */
void probe_io_call(int op, int fd, int64_t result, int kind)
{
    uint64_t start = ioCallStart;
    ioCallStart = 0;
    if (!start) return; /* io__batch was enabled during the call */
    int err = errno;
    if (result < 0) result = -(int64_t)err;
    uint64_t now = record_clock();
    if (kind < 0) kind = io_call_kind(op, fd, result);
    if ((op == SQ_IO_OPEN || op == SQ_IO_ACCEPT) && result >= 0) fd = (int)result;
    uint64_t m[SQ_EV_IO_DEPTH];
    int depth = stack_methods(interp_current ? interp_current->fp : NULL, m);
    SqEvIo io = {
        .process = interp_current ? interp_current->id : 0,
        .fd = (uint64_t)(int64_t)fd,
        .result = (uint64_t)result,
        .ns = now - start,
    };
    record_io(SQ_EV_IO_ARG(op, kind), start, now, &io, m, depth);
    errno = err;
}

/* The running process begins to wait on fd: sched__batch's record. Under io__batch it
 * keeps when, the descriptor's kind and its Methods for its io__ready's records, which
 * hold the whole wait: then fd may be closed, and walking the frames of a process that
 * has waited costs cache misses. */
void probe_io_wait(Process *p, int fd, int op, uint64_t timeoutNs, uint64_t clockNs)
{
    SqEvProcess w = { .fd = (uint64_t)(int64_t)fd, .timeout = timeoutNs, .method = waiting_method() };
    uint64_t now = process_record(SQ_EV_IO_WAIT, (uint32_t)op, p, &w, clockNs);
    if (!now) now = record_site_time(clockNs); /* no record took a time */
    p->ioWaitNs = 0;
    if (record_takes(SQ_EV_IO_READY, false)) { /* what its io__ready's record will hold */
        p->ioWaitNs = now ? now : record_clock();
        p->ioKind = io_fd_kind(fd);
        stack_methods(p->fp, p->ioWaitMethods);
    }
    if (SQ_ENABLED(IO_WAIT)) SQUEAK_IO_WAIT(p->id, sched_process_name(p), fd, op, timeoutNs);
}

/* p's wait ends. Under io__batch, when it began under it too, the record holds when
 * (wait_began) and is followed by the waiting process's Methods and the descriptor's kind,
 * kept at its io__wait: a reader has the whole wait in two records, and keeps nothing
 * between its io__wait and its io__ready. */
void probe_io_ready(Process *p, int timedOut)
{
    uint64_t began = p->ioWaitNs;
    p->ioWaitNs = 0;
    RecordProcess who = record_process_of(p);
    SqEvAllocs totals;
    SqEvProcess w = { .fd = (uint64_t)(int64_t)p->ioFd, .timedout = (uint64_t)timedOut, .wait_began = began };
    alloc_totals(&totals);
    record_io_ready((uint32_t)p->ioOp, &who, &totals, &w, p->ioWaitMethods, p->ioKind);
    if (SQ_ENABLED(IO_READY)) SQUEAK_IO_READY(p->id, sched_process_name(p), p->ioFd, p->ioOp, timedOut);
}

void probe_user(const char *name, int64_t arg, const char *str)
{
    if (str) { if (SQ_ENABLED(USER_PROBE_STR)) SQUEAK_USER_PROBE_STR(name, str); }
    else if (SQ_ENABLED(USER_PROBE)) SQUEAK_USER_PROBE(name, arg);
}

/* ---- Requests (req__batch: the recorder holds a begin back, record.h) ----
 * request.c calls these at every begin and end, and the guards are here: a call per
 * request costs nothing beside a request, and one file fewer lies on its path. */

/* A request's own probe, or req__batch, which takes its record. */
#define SQ_REQ_ENABLED(NAME) UNLIKELY((SQUEAK_##NAME##_ENABLED() | SQUEAK_REQ_BATCH_ENABLED()) != 0)

void probe_request_gc(void) { record_request_release_all(); }

void probe_request_begin(uint64_t id, const char *route, Process *owner, const TraceContext *trace)
{
    if (!SQ_REQ_ENABLED(REQUEST_BEGIN) && !(trace && SQ_ENABLED(REQUEST_TRACE))) return;
    if (SQ_ENABLED(REQ_BATCH)) {
        RecordProcess who = record_process_of(owner);
        SqEvAllocs totals;
        alloc_totals(&totals);
        record_request_begin(id, route, &who, &totals, trace);
    }
    if (SQ_ENABLED(REQUEST_BEGIN)) SQUEAK_REQUEST_BEGIN(id, route, owner->id);
    if (trace && SQ_ENABLED(REQUEST_TRACE))
        SQUEAK_REQUEST_TRACE(id, trace->traceHi, trace->traceLo, trace->parent, trace->span);
}

void probe_request_end(uint64_t id, const char *route, Process *owner, int status)
{
    if (!SQ_REQ_ENABLED(REQUEST_END)) {
        /* the tool left while the recorder held this request's begin: let it go */
        if (UNLIKELY(owner->requestPending == id)) record_requests_dropped();
        return;
    }
    RecordProcess who = { .id = owner->id, .pending = &owner->requestPending };
    SqEvAllocs totals;
    alloc_totals(&totals);
    record_request_end(id, route, &who, &totals, status);
    if (SQ_ENABLED(REQUEST_END)) SQUEAK_REQUEST_END(id, route, owner->id, status);
}

void probe_requests_dropped(void) { record_requests_dropped(); }

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* probes.c - argument preparation for the USDT probes, the allocation sampler, and the
 * debug-offsets structure that lets an out-of-process reader walk the Smalltalk stack. */
#include "probes.h"
#include "traceparent.h"
#include "alloc.h"
#include "batch.h"
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

/* ---- Stack access for samplers and debuggers (always present, probes or not) ---- */

/* The allocation sampler's mean gap (below); in the debug offsets for profilers. */
static uint64_t sampleMean = 512 * 1024;

#include "debug_offsets.h"

__attribute__((used, visibility("default"))) const SqDebugOffsets sqvm_debug_offsets = {
    .magic = SQVM_DEBUG_MAGIC,
    .version = SQVM_DEBUG_VERSION,
    .size = sizeof(SqDebugOffsets),
    .current_process = (uint64_t)(uintptr_t)&interp_current,
    .class_table = (uint64_t)(uintptr_t)&VM.classes,
    .class_count = (uint64_t)(uintptr_t)&VM.numClasses,
    .process_fp = offsetof(Process, fp),
    .process_stack_base = offsetof(Process, stackBase),
    .frame_caller = offsetof(Frame, caller),
    .frame_method = offsetof(Frame, method),
    .frame_ip = offsetof(Frame, ip),
    .frame_self = offsetof(Frame, self),
    .frame_closure = offsetof(Frame, closure),
    .method_selector = offsetof(Method, selector),
    .method_holder = offsetof(Method, holder),
    .method_print_name = offsetof(Method, printName),
    .method_flags = offsetof(Method, flags),
    .method_code = offsetof(Method, code),
    .method_lines = offsetof(Method, lines),
    .method_line = offsetof(Method, line),
    .method_source_path = offsetof(Method, sourcePath),
    .class_name = offsetof(ClassInfo, name),
    .class_index = offsetof(ClassInfo, index),
    .header_class_mask = HDR_CLASS_MASK,
    .string_length = offsetof(Obj, slots),
    .string_bytes = offsetof(Obj, slots) + sizeof(Value),
    .method_flag_block = MF_BLOCK,
    .value_tag_mask = VALUE_TAG_MASK,
    .value_int_mask = 1,
    .value_float_tag = FLOAT_TAG,
    .class_integer = CLS_INTEGER,
    .class_double = CLS_DOUBLE,
    .process_stack_limit = offsetof(Process, stackEnd), /* frames may use the reserve beyond stackLimit */
    .method_code_len = offsetof(Method, codeLen),
    .counters = (uint64_t)(uintptr_t)&vm_counters,
    .gc_top = (uint64_t)(uintptr_t)&gc_top,
    .gc_eden = (uint64_t)(uintptr_t)&gc_eden,
    .gc_bytes_allocated = (uint64_t)(uintptr_t)&gc_stats_data.bytesAllocated,
    .gc_young_count = (uint64_t)(uintptr_t)&gc_stats_data.youngCount,
    .gc_full_count = (uint64_t)(uintptr_t)&gc_stats_data.fullCount,
    .gc_young_pause_ns = (uint64_t)(uintptr_t)&gc_stats_data.youngPauseNs,
    .gc_full_pause_ns = (uint64_t)(uintptr_t)&gc_stats_data.fullPauseNs,
    .process_obj = offsetof(Process, obj),
    .process_id = offsetof(Process, id),
    .process_is_main = offsetof(Process, isMain),
    .process_name = offsetof(Obj, slots) + PROC_NAME * sizeof(Value),
    .class_nil = CLS_NIL,
    .class_string = CLS_STRING,
    .class_symbol = CLS_SYMBOL,
    .alloc_sample_bytes = (uint64_t)(uintptr_t)&sampleMean,
    .process_all = (uint64_t)(uintptr_t)&sched_all,
    .gc_running = (uint64_t)(uintptr_t)&gc_running,
    .process_all_next = offsetof(Process, allNext),
    .process_state = offsetof(Process, state),
    .process_request_pending = offsetof(Process, requestPending),
    .process_trace_hi = offsetof(Process, trace.traceHi),
    .process_trace_lo = offsetof(Process, trace.traceLo),
    .process_trace_parent = offsetof(Process, trace.parent),
    .process_trace_span = offsetof(Process, trace.span),
    .process_waiting_on = offsetof(Process, waitingOn),
    .state_running = PS_RUNNING,
    .state_ready = PS_READY,
    .state_waiting = PS_WAITING,
    .state_io = PS_IO,
    .state_suspended = PS_SUSPENDED,
    .state_terminated = PS_TERMINATED,
};

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
    SqEventRecord *r = batch_add(kind);
    r->arg = depth;
    r->call.recv_cls = (uintptr_t)receiver_class_name(f);
    r->call.selector = (uintptr_t)sym_cstr(m->selector);
    r->call.def_cls = (uintptr_t)m->holder->name;
    r->call.frame = (uintptr_t)f;
    r->call.caller = caller && caller->method ? (uintptr_t)caller : 0;
    r->call.method = (uintptr_t)m;
    r->call.caller_method = caller ? (uintptr_t)caller->method : 0;
}

void probe_method_entry(Frame *f, uint32_t depth)
{
    if (interp_current && !interp_current->ran) return; /* a new process: fires when it runs */
    Method *m = f->method;
    if (SQ_ENABLED(CALL_BATCH)) batch_call(m->flags & MF_BLOCK ? SQ_EV_BLOCK_ENTRY : SQ_EV_METHOD_ENTRY, f, depth);
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
    if (SQ_ENABLED(CALL_BATCH)) batch_call(m->flags & MF_BLOCK ? SQ_EV_BLOCK_RETURN : SQ_EV_METHOD_RETURN, f, depth);
    const char *sel = sym_cstr(m->selector);
    if (m->flags & MF_BLOCK) {
        if (SQ_ENABLED(BLOCK_RETURN))
            SQUEAK_BLOCK_RETURN(receiver_class_name(f), sel, m->holder->name, (uintptr_t)f, depth);
    } else if (SQ_ENABLED(METHOD_RETURN)) {
        SQUEAK_METHOD_RETURN(receiver_class_name(f), sel, m->holder->name, (uintptr_t)f, depth);
    }
}

/* ---- Allocation ---- */

static void allocating_method(const char **cls, const char **sel)
{
    Frame *f = interp_current ? interp_current->fp : NULL;
    if (f && f->method) {
        *cls = f->method->holder->name;
        *sel = sym_cstr(f->method->selector);
    } else {
        *cls = "";
        *sel = "";
    }
}

/* The gate (probes.h) has seen object__alloc's or alloc__batch's semaphore set. */
void probe_object_alloc(Obj *o)
{
    const char *name = VM.classes[obj_class_index(o)]->name, *acls, *asel;
    uint64_t bytes = (uint64_t)obj_alloc_bytes(obj_num_slots(o));
    allocating_method(&acls, &asel);
    if (SQ_ENABLED(ALLOC_BATCH)) {
        SqEventRecord *r = batch_add(SQ_EV_ALLOC);
        r->alloc.cls = (uintptr_t)name;
        r->alloc.bytes = bytes;
        r->alloc.alloc_cls = (uintptr_t)acls;
        r->alloc.alloc_sel = (uintptr_t)asel;
    }
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

/* The scheduler's events of p as records (sched__batch; SqEvProcess): r, of its kind
 * and time. A wait's caller fills in its kind's words, zero here. */
static SqEventRecord *process_fill(SqEventRecord *r, uint32_t arg, Process *p)
{
    r->arg = arg;
    r->process.id = p->id;
    r->process.fd = 0;
    r->process.timeout = 0;
    r->process.name = (uint64_t)(uintptr_t)sched_process_name(p);
    alloc_totals(&r->process.allocs);
    return r;
}

static SqEventRecord *process_record(uint32_t kind, uint32_t arg, Process *p)
{
    return process_fill(batch_add(kind), arg, p);
}

/* The requests' events as records (req__batch; SqEvRequest): r, of its kind and time. */
static SqEventRecord *request_fill(SqEventRecord *r, int status, uint64_t id, const char *route, Process *owner)
{
    r->arg = (uint32_t)status;
    r->req.id = id;
    r->req.route = (uint64_t)(uintptr_t)route;
    r->req.process = owner->id;
    r->req.began = 0;
    alloc_totals(&r->req.allocs);
    return r;
}

static void req_release(Process *p);

/* Whether a scheduler event of p is a record: sched__batch takes every one; req__batch
 * (squeak.d) those of a process with a request open, the others' time being no
 * request's. A request's begin record held back (below) goes first. */
static bool sched_recorded(Process *p)
{
    if (!SQ_ENABLED(SCHED_BATCH) && !(SQ_ENABLED(REQ_BATCH) && p->requestsOpen)) return false;
    req_release(p);
    return true;
}

/* A process switch (call__batch's consumers time calls without the time their process
 * was switched out; sched__batch's follow the scheduler): one record for any of them.
 * req__batch's takes the switch to a process with a request open, and from one (which
 * may have stopped without a record of its own: suspended). */
void probe_batch_activate(Process *to, Process *from)
{
    if (from) req_release(from); /* before the switch's record, whoever takes it */
    if (SQ_ENABLED(CALL_BATCH) || sched_recorded(to) || (from && sched_recorded(from)))
        process_record(SQ_EV_PROCESS_ACTIVATE, (uint32_t)to->priority, to);
    else
        batch_hold_ns(0); /* a time held for this switch is no later record's */
}

/* The sampler: the gap to the next sample is exponentially distributed with mean
 * sampleMean bytes (as in tcmalloc and Go), so every byte has the same chance of
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
    double gap = -log(u) * (double)sampleMean;
    return gap < 1 ? 1 : (uint64_t)gap;
}

uint64_t probes_alloc_budget(uint64_t bumped, size_t bytes)
{
    if (!SQ_ENABLED(OBJECT_ALLOC_SAMPLE)) {
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
    if (!SQ_ENABLED(OBJECT_ALLOC_SAMPLE)) return;
    const char *name = VM.classes[obj_class_index(o)]->name, *acls, *asel;
    allocating_method(&acls, &asel);
    /* in a register: USDT argument specs cannot be RIP-relative for libbpf */
    uint64_t weight = sampler.weight;
    __asm__ volatile("" : "+r"(weight));
    SQUEAK_OBJECT_ALLOC_SAMPLE(name, (uint64_t)bytes, acls, asel, weight);
}

void probes_init(uint64_t allocSampleBytes)
{
    if (allocSampleBytes) sampleMean = allocSampleBytes;
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

/* A wait's record: the method the running process waits in (its innermost frame's). */
static void record_wait_method(SqEventRecord *r)
{
    Frame *f = interp_current ? interp_current->fp : NULL;
    r->process.method = (uint64_t)(uintptr_t)(f ? f->method : NULL);
    batch_hold_time(r); /* the switch to the next process follows (or a flush point) */
}

/* (A process's name is read only for a record or probe that takes it: it is in the
 * Smalltalk Process object, which the scheduler does not otherwise touch.) */
void probe_process(int what, Process *p)
{
    uint64_t id = p->id;
    int priority = p->priority;
    if (what == PROBE_PROCESS_CREATE) { /* no request's yet: sched__batch's alone */
        if (SQ_ENABLED(SCHED_BATCH)) process_record(SQ_EV_PROCESS_CREATE, (uint32_t)priority, p);
        if (SQ_ENABLED(PROCESS_CREATE)) SQUEAK_PROCESS_CREATE(id, sched_process_name(p), priority);
    } else if (what == PROBE_PROCESS_ACTIVATE) { /* its record: probe_batch_activate */
        if (SQ_ENABLED(PROCESS_ACTIVATE)) SQUEAK_PROCESS_ACTIVATE(id, sched_process_name(p), priority);
    } else if (what == PROBE_PROCESS_EXIT) {
        if (sched_recorded(p)) process_record(SQ_EV_PROCESS_EXIT, 0, p);
        if (SQ_ENABLED(PROCESS_EXIT)) SQUEAK_PROCESS_EXIT(id, sched_process_name(p));
    }
}

void probe_process_ready(Process *p, int reason)
{
    if (sched_recorded(p)) process_record(SQ_EV_PROCESS_READY, (uint32_t)reason, p);
    if (SQ_ENABLED(PROCESS_READY)) SQUEAK_PROCESS_READY(p->id, sched_process_name(p), reason);
}

/* A time the scheduler read for a wait's deadline (vm_now_ns, the same clock; 0: none),
 * for the wait's record: one clock read fewer. A fuzz build's clock is its own (vm.c). */
static uint64_t deadline_clock(uint64_t now)
{
#ifndef SQVM_FUZZ
    return now;
#else
    (void)now;
    return 0;
#endif
}

void probe_process_wait(Process *p, uint64_t semaphore, uint64_t timeoutNs, uint64_t now, uint32_t holder)
{
    if (sched_recorded(p)) {
        batch_hold_ns(deadline_clock(now));
        SqEventRecord *r = process_record(SQ_EV_PROCESS_WAIT, holder, p);
        r->process.semaphore = semaphore;
        r->process.timeout = timeoutNs;
        record_wait_method(r);
    }
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

void probe_io_start(void) { ioCallStart = batch_clock(); }

/* SQ_IO_END (probes.h): the call that began at ioCallStart ended now. errno stays as
 * the call left it (the primitive reads it next). */
void probe_io_call(int op, int fd, int64_t result, int kind)
{
    uint64_t start = ioCallStart;
    ioCallStart = 0;
    if (!start) return; /* io__batch was enabled during the call */
    int err = errno;
    if (result < 0) result = -(int64_t)err;
    uint64_t now = batch_clock();
    if (kind < 0) kind = io_call_kind(op, fd, result);
    if ((op == SQ_IO_OPEN || op == SQ_IO_ACCEPT) && result >= 0) fd = (int)result;
    uint64_t m[SQ_EV_IO_DEPTH];
    bool more = stack_methods(interp_current ? interp_current->fp : NULL, m) > SQ_EV_IO_METHODS;
    SqEventRecord *r = batch_reserve(more ? 2 : 1, now);
    r->kind = SQ_EV_IO;
    r->arg = SQ_EV_IO_ARG(op, kind);
    r->ts = start;
    r->io.process = interp_current ? interp_current->id : 0;
    r->io.fd = (uint64_t)(int64_t)fd;
    r->io.result = (uint64_t)result;
    r->io.ns = now - start;
    memcpy(r->io.methods, m, sizeof(r->io.methods));
    if (more) io_frames(r + 1, start, m, SQ_EV_IO_METHODS, kind);
    errno = err;
}

/* The running process begins to wait on fd: sched__batch's record. Under io__batch it
 * keeps when, the descriptor's kind and its Methods for its io__ready's records, which
 * hold the whole wait: then fd may be closed, and walking the frames of a process that
 * has waited costs cache misses. */
void probe_io_wait(Process *p, int fd, int op, uint64_t timeoutNs, uint64_t clockNs)
{
    uint64_t now = deadline_clock(clockNs);
    if (sched_recorded(p)) {
        batch_hold_ns(now);
        SqEventRecord *r = process_record(SQ_EV_IO_WAIT, (uint32_t)op, p);
        r->process.fd = (uint64_t)(int64_t)fd;
        r->process.timeout = timeoutNs;
        record_wait_method(r);
        now = r->ts;
    }
    p->ioWaitNs = 0;
    if (SQ_ENABLED(IO_BATCH)) {
        p->ioWaitNs = now ? now : batch_clock();
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
    if (SQ_ENABLED(IO_BATCH)) {
        bool frames = began != 0;
        uint64_t now = batch_round_time();
        SqEventRecord *r = batch_reserve(frames ? 2 : 1, now);
        r->kind = SQ_EV_IO_READY;
        r->ts = now;
        process_fill(r, (uint32_t)p->ioOp, p);
        r->process.fd = (uint64_t)(int64_t)p->ioFd;
        r->process.timedout = (uint64_t)timedOut;
        r->process.wait_began = frames ? began : 0;
        if (frames) io_frames(r + 1, now, p->ioWaitMethods, 0, p->ioKind);
    }
    if (SQ_ENABLED(IO_READY)) SQUEAK_IO_READY(p->id, sched_process_name(p), p->ioFd, p->ioOp, timedOut);
}

void probe_user(const char *name, int64_t arg, const char *str)
{
    if (str) { if (SQ_ENABLED(USER_PROBE_STR)) SQUEAK_USER_PROBE_STR(name, str); }
    else if (SQ_ENABLED(USER_PROBE)) SQUEAK_USER_PROBE(name, arg);
}

/* ---- Requests (req__batch) ----
 * A request's begin record waits while its process runs: most requests end in the run
 * that began them (a /hello reads, answers and ends before its process waits again),
 * and such a request is then one record at its end, SQ_EV_REQUEST_RUN, instead of a
 * begin and an end. The begin record is written, with its own time and allocation
 * totals, before anything else a tool would charge to the request: the first scheduler
 * record of its process (it stops running: sched_recorded, probe_batch_activate), a
 * collection's probes (probe_request_gc), or the next request's begin. Only the running
 * process can begin one, so one waits at most. Its process's requestPending (the
 * request's id) lets a sampler (sqreq --slowest) see it. */
static struct {
    Process *owner; /* NULL: none waits */
    uint64_t id, ns;
    SqEvAllocs allocs;
    const char *route;
    bool traced;
    TraceContext trace;
} held;

/* A request's trace record (SQ_EV_REQUEST_TRACE), before its begin or run record. */
static void trace_fill(SqEventRecord *r, uint64_t ns, uint64_t id, const TraceContext *t, const Process *owner)
{
    r->kind = SQ_EV_REQUEST_TRACE;
    r->arg = t->flags;
    r->ts = ns;
    r->trace.id = id;
    r->trace.trace_hi = t->traceHi;
    r->trace.trace_lo = t->traceLo;
    r->trace.parent = t->parent;
    r->trace.span = t->span;
    r->trace.process = owner->id;
}

/* No begin is held any more (its owner's requestPending says so too). */
static void unhold(void)
{
    if (held.owner) held.owner->requestPending = 0;
    held.owner = NULL;
}

/* The begin record of p's held request, if it has one, goes into the buffer. */
static void req_release(Process *p)
{
    if (LIKELY(held.owner != p)) return;
    unhold();
    if (!SQ_ENABLED(REQ_BATCH)) return; /* the tool left */
    /* reserved as of now: its own time may be older than the buffer's first record's
     * (an empty buffer would take it as its first, and the next record flush it as aged) */
    SqEventRecord *r = batch_reserve(held.traced ? 2 : 1, batch_round_time());
    if (held.traced) trace_fill(r++, held.ns, held.id, &held.trace, p);
    r->kind = SQ_EV_REQUEST_BEGIN;
    r->ts = held.ns;
    request_fill(r, 0, held.id, held.route, p);
    r->req.allocs = held.allocs;
}

void probe_request_gc(void)
{
    if (held.owner) req_release(held.owner);
}

void probe_request_begin(uint64_t id, const char *route, Process *owner, const TraceContext *trace)
{
    if (SQ_ENABLED(REQ_BATCH)) {
        if (held.owner) req_release(held.owner); /* nested: the outer one's begin first */
        held.owner = owner;
        held.id = id;
        held.route = route;
        held.ns = batch_round_time();
        held.traced = trace != NULL;
        if (trace) held.trace = *trace;
        alloc_totals(&held.allocs);
        owner->requestPending = id;
    }
    if (SQ_ENABLED(REQUEST_BEGIN)) SQUEAK_REQUEST_BEGIN(id, route, owner->id);
    if (trace && SQ_ENABLED(REQUEST_TRACE))
        SQUEAK_REQUEST_TRACE(id, trace->traceHi, trace->traceLo, trace->parent, trace->span);
}

void probe_request_end(uint64_t id, const char *route, Process *owner, int status)
{
    if (held.owner && held.id == id) { /* it ran from its begin to here */
        unhold();
        if (SQ_ENABLED(REQ_BATCH)) {
            if (held.traced) {
                SqEventRecord *t = batch_add(SQ_EV_REQUEST_TRACE);
                trace_fill(t, t->ts, id, &held.trace, owner);
            }
            SqEventRecord *r = request_fill(batch_add(SQ_EV_REQUEST_RUN), status, id, route, owner);
            r->req.began = held.ns;
            r->req.allocs.objects -= held.allocs.objects;
            r->req.allocs.bytes -= held.allocs.bytes;
        }
    } else {
        req_release(owner); /* ended by another process: the owner's held one is another */
        if (SQ_ENABLED(REQ_BATCH))
            request_fill(batch_add(SQ_EV_REQUEST_END), status, id, route, owner);
    }
    if (SQ_ENABLED(REQUEST_END)) SQUEAK_REQUEST_END(id, route, owner->id, status);
}

void probe_requests_dropped(void) { unhold(); }

#else /* !SQVM_PROBES */

void probe_method_entry(Frame *f, uint32_t depth) { (void)f; (void)depth; }
void probe_method_return(Frame *f, uint32_t depth) { (void)f; (void)depth; }
void probe_object_alloc(Obj *o) { (void)o; }
void probe_batch_activate(Process *to, Process *from) { (void)to; (void)from; }
void probe_alloc_sample(Obj *o, size_t bytes) { (void)o; (void)bytes; }
void probe_gc_begin(int kind, uint64_t seq, size_t youngBytes, size_t oldBytes) { (void)kind; (void)seq; (void)youngBytes; (void)oldBytes; }
void probe_gc_end(const GCEvent *e) { (void)e; }
void probe_class_load(const char *name, const char *path) { (void)name; (void)path; }
void probe_vm_start(void) {}
void probe_vm_exit(int status) { (void)status; }
void probe_dnu(Value receiver, Value selector) { (void)receiver; (void)selector; }
void probe_primitive_fail(Value receiver, const char *primitive, const char *reason) { (void)receiver; (void)primitive; (void)reason; }
void probe_exception_signal(Value exception, const Method *signaller) { (void)exception; (void)signaller; }
void probe_process(int what, Process *p) { (void)what; (void)p; }
void probe_process_ready(Process *p, int reason) { (void)p; (void)reason; }
void probe_process_wait(Process *p, uint64_t semaphore, uint64_t timeoutNs, uint64_t now, uint32_t holder)
{
    (void)p; (void)semaphore; (void)timeoutNs; (void)now; (void)holder;
}
void probe_io_wait(Process *p, int fd, int op, uint64_t timeoutNs, uint64_t now)
{
    (void)p; (void)fd; (void)op; (void)timeoutNs; (void)now;
}
void probe_io_ready(Process *p, int timedOut) { (void)p; (void)timedOut; }
void probe_user(const char *name, int64_t arg, const char *str) { (void)name; (void)arg; (void)str; }
void probe_io_start(void) {}
void probe_io_call(int op, int fd, int64_t result, int kind) { (void)op; (void)fd; (void)result; (void)kind; }
void probes_init(uint64_t allocSampleBytes) { (void)allocSampleBytes; }
void probe_request_begin(uint64_t id, const char *route, Process *owner, const TraceContext *trace)
{
    (void)id; (void)route; (void)owner; (void)trace;
}
void probe_request_end(uint64_t id, const char *route, Process *owner, int status)
{
    (void)id; (void)route; (void)owner; (void)status;
}
void probe_request_gc(void) {}
void probe_requests_dropped(void) {}

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* probes.h - USDT probe sites (probes/squeak.d): their guards, and the allocation
 * sampler's interface to the collector. Built with PROBES=0, every site compiles to
 * nothing. A site is "if (SQ_ENABLED(NAME)) probe_xxx(...)": the guard is one load of
 * the probe's semaphore, and argument preparation happens only inside it, out of line
 * in probes.c. The hot sites (allocation, activation, backward jumps) have guards of
 * their own below, written so that they cost the same instructions as without probes. */
#ifndef SQVM_PROBES_H
#define SQVM_PROBES_H

#include "common.h"
#include "record.h" /* record_flush_pending: the flush points */

#if SQVM_PROBES
#include "squeak_probes.h"
#define SQ_ENABLED(NAME) UNLIKELY(SQUEAK_##NAME##_ENABLED())
/* sched__batch's or req__batch's semaphore is set: the two are neighbours (squeak.d's
 * order; probes.c checks), read as one 32-bit word, so that a site pays for req__batch
 * no instruction more than it did for sched__batch alone. */
typedef uint32_t __attribute__((aligned(2))) sq_semaphore_pair;
#define sq_sched_batches() (*(const volatile sq_semaphore_pair *)&squeak_semaphores.sched__batch)
/* A scheduler site (sched.c): its own probe, sched__batch or req__batch, which take its
 * event as a record; the function it calls tests which. */
#define SQ_SCHED_ENABLED(NAME) UNLIKELY((SQUEAK_##NAME##_ENABLED() | sq_sched_batches()) != 0)
/* io__wait's and io__ready's sites: their records are in io__batch too. */
#define SQ_IO_WAIT_ENABLED(NAME) \
    UNLIKELY((SQUEAK_##NAME##_ENABLED() | sq_sched_batches() | SQUEAK_IO_BATCH_ENABLED()) != 0)
/* A process switch: a record for call__batch, sched__batch or req__batch. */
#define SQ_ACTIVATE_BATCHES() UNLIKELY((SQUEAK_CALL_BATCH_ENABLED() | sq_sched_batches()) != 0)
#else
#define SQ_ENABLED(NAME) 0
#define SQ_SCHED_ENABLED(NAME) 0
#define SQ_IO_WAIT_ENABLED(NAME) 0
#define SQ_ACTIVATE_BATCHES() 0
#endif

struct Frame;
struct GCEvent;
struct Method;
struct Obj;
struct Process;
struct TraceContext;
/* process__activate's, __create's and __exit's events: probe_process's what. */
enum { PROBE_PROCESS_CREATE, PROBE_PROCESS_ACTIVATE, PROBE_PROCESS_EXIT };
/* process__ready's reasons (probes/squeak.d). */
enum { READY_RESUMED = 0, READY_SIGNALLED = 1, READY_DELAY = 2, READY_PREEMPTED = 3, READY_IO = 4 };

#if SQVM_PROBES
/* Out of line, cold: called only when a tracer is attached. */
void probe_method_entry(struct Frame *f, uint32_t depth);
void probe_method_return(struct Frame *f, uint32_t depth);
void probe_object_alloc(struct Obj *o);
/* call__batch, sched__batch or req__batch is enabled: to runs now, after from */
void probe_batch_activate(struct Process *to, struct Process *from);
void probe_alloc_sample(struct Obj *o, size_t bytes);
void probe_gc_begin(int kind, uint64_t seq, size_t youngBytes, size_t oldBytes);
void probe_gc_end(const struct GCEvent *e);
void probe_class_load(const char *name, const char *path);
void probe_vm_start(void);
void probe_vm_exit(int status);
void probe_dnu(Value receiver, Value selector);
void probe_primitive_fail(Value receiver, const char *primitive, const char *reason);
/* exception's signal starts its handler search; signaller: the method that signalled it
 * (the site finds it on the stack, as the backtrace of an unhandled one does), or NULL. */
void probe_exception_signal(Value exception, const struct Method *signaller);
/* The scheduler's and the requests' probes: each fires its probe if it is enabled and
 * writes its record if its batch probe takes it: sched__batch a scheduler's record,
 * req__batch a request's and those of a process with a request open (a scheduler's site
 * tests SQ_SCHED_ENABLED; the requests' functions test their own guards). */
void probe_process(int what, struct Process *p);
void probe_process_ready(struct Process *p, int reason);
/* now: the clock (vm_now_ns) as the site read it for the wait's deadline, or 0: the
 * record takes it instead of reading the clock again. */
void probe_process_wait(struct Process *p, uint64_t semaphore, uint64_t timeoutNs, uint64_t now, uint32_t holder);
/* Each writes its probe's event if it is enabled, its record as the probes above do or
 * if io__batch is enabled (the site tests SQ_IO_WAIT_ENABLED). */
void probe_io_wait(struct Process *p, int fd, int op, uint64_t timeoutNs, uint64_t now);
void probe_io_ready(struct Process *p, int timedOut); /* p: waiting on p->ioFd */
void probe_user(const char *name, int64_t arg, const char *str);
/* trace: the request's trace context (NULL: none), for request__trace and its record */
void probe_request_begin(uint64_t id, const char *route, struct Process *owner, const struct TraceContext *trace);
void probe_request_end(uint64_t id, const char *route, struct Process *owner, int status);
/* A collection begins: a request's begin record held back (vm/record.c) goes before its
 * batch is flushed, so that a tool charges the pause to the request. */
void probe_request_gc(void);
/* No request's begin is held any more: the held one ended after its tool left, or the
 * open requests were dropped (the fuzzer's reset). */
void probe_requests_dropped(void);
void probes_init(uint64_t allocSampleBytes);
#else
/* Built with PROBES=0 no site calls them (their guards are 0): nothing, for the
 * compiler to check the sites' arguments against. */
static inline void probe_method_entry(struct Frame *f, uint32_t depth) { (void)f; (void)depth; }
static inline void probe_method_return(struct Frame *f, uint32_t depth) { (void)f; (void)depth; }
static inline void probe_object_alloc(struct Obj *o) { (void)o; }
static inline void probe_batch_activate(struct Process *to, struct Process *from) { (void)to; (void)from; }
static inline void probe_alloc_sample(struct Obj *o, size_t bytes) { (void)o; (void)bytes; }
static inline void probe_gc_begin(int kind, uint64_t seq, size_t youngBytes, size_t oldBytes)
{
    (void)kind; (void)seq; (void)youngBytes; (void)oldBytes;
}
static inline void probe_gc_end(const struct GCEvent *e) { (void)e; }
static inline void probe_class_load(const char *name, const char *path) { (void)name; (void)path; }
static inline void probe_vm_start(void) {}
static inline void probe_vm_exit(int status) { (void)status; }
static inline void probe_dnu(Value receiver, Value selector) { (void)receiver; (void)selector; }
static inline void probe_primitive_fail(Value receiver, const char *primitive, const char *reason)
{
    (void)receiver; (void)primitive; (void)reason;
}
static inline void probe_exception_signal(Value exception, const struct Method *signaller) { (void)exception; (void)signaller; }
static inline void probe_process(int what, struct Process *p) { (void)what; (void)p; }
static inline void probe_process_ready(struct Process *p, int reason) { (void)p; (void)reason; }
static inline void probe_process_wait(struct Process *p, uint64_t semaphore, uint64_t timeoutNs, uint64_t now, uint32_t holder)
{
    (void)p; (void)semaphore; (void)timeoutNs; (void)now; (void)holder;
}
static inline void probe_io_wait(struct Process *p, int fd, int op, uint64_t timeoutNs, uint64_t now)
{
    (void)p; (void)fd; (void)op; (void)timeoutNs; (void)now;
}
static inline void probe_io_ready(struct Process *p, int timedOut) { (void)p; (void)timedOut; }
static inline void probe_user(const char *name, int64_t arg, const char *str) { (void)name; (void)arg; (void)str; }
static inline void probe_request_begin(uint64_t id, const char *route, struct Process *owner, const struct TraceContext *trace)
{
    (void)id; (void)route; (void)owner; (void)trace;
}
static inline void probe_request_end(uint64_t id, const char *route, struct Process *owner, int status)
{
    (void)id; (void)route; (void)owner; (void)status;
}
static inline void probe_request_gc(void) {}
static inline void probe_requests_dropped(void) {}
static inline void probes_init(uint64_t allocSampleBytes) { (void)allocSampleBytes; }
#endif
/* The allocation sampler's mean gap in bytes (the debug offsets point at it). */
extern uint64_t probes_sample_mean;

/* ---- A branch to cold code on a word in memory ----
 * On x86-64 a compare with memory and a jump (asm goto): reading the volatile
 * semaphore into a register first would cost an instruction more than the same site
 * without probes. The slow code is laid out cold, away from the hot path. */
#if SQVM_PROBES && defined(__x86_64__)
/* asmgoto jumps to the label slow_ to take the slow code. */
#define SQ_ASM_BRANCH(asmgoto, slowcode)  \
    do {                                  \
        __label__ slow_, done_;           \
        asmgoto;                          \
        goto done_;                       \
    slow_: __attribute__((cold));         \
        slowcode;                         \
    done_:;                               \
    } while (0)
#endif

/* ---- Allocation (alloc.h) ----
 * The exact probes, object__alloc and alloc__batch: their gate follows every
 * allocation, one compare with memory of the two semaphores, adjacent (squeak.d), as
 * one 32-bit word. */
#if SQVM_PROBES
#define SQ_ALLOC_SEMAPHORES (*(const volatile sq_semaphore_pair *)&squeak_semaphores.object__alloc)
#endif
#if SQVM_PROBES && defined(__x86_64__)
#define SQ_IF_ALLOC_PROBE(slowcode)                                                      \
    SQ_ASM_BRANCH(__asm__ goto("cmpl $0, %0\n\tjne %l[slow_]" /* 32 bits: both semaphores */ \
                               : : "m"(squeak_semaphores.object__alloc) : "cc" : slow_),    \
                  slowcode)
#elif SQVM_PROBES
#define SQ_IF_ALLOC_PROBE(slowcode) do { if (UNLIKELY(SQ_ALLOC_SEMAPHORES != 0)) { slowcode; } } while (0)
#else
#define SQ_IF_ALLOC_PROBE(slowcode) do { } while (0)
#endif

/* The sampler, object__alloc__sample, costs nothing on the allocation fast path: the
 * collector asks it (probes_alloc_budget, its one hook into the probes) how far the
 * fast path may bump before it wants to see an allocation again, and stops the fast
 * path there. The allocation that crosses a sample point is made by the slow path,
 * which fires the probe (PROBE_ALLOC_SAMPLE) once it has the object's header.
 *
 * probes_alloc_budget: bumped is what the fast path allocated since the previous call,
 * bytes the slow path's allocation (0 when a collection is about to reset eden).
 * While nobody samples it still answers a finite budget, so that sampling starts
 * soon after a tracer attaches. */
#if SQVM_PROBES
uint64_t probes_alloc_budget(uint64_t bumped, size_t bytes);
extern bool probes_sample_due; /* this slow-path allocation is a sample */
#define PROBE_ALLOC_SAMPLE(o, bytes) do { if (UNLIKELY(probes_sample_due)) probe_alloc_sample(o, bytes); } while (0)
#else
static inline uint64_t probes_alloc_budget(uint64_t bumped, size_t bytes) { (void)bumped; (void)bytes; return UINT64_MAX / 4; }
#define PROBE_ALLOC_SAMPLE(o, bytes) do { } while (0)
#endif

/* ---- The I/O primitives' system calls (prim_io.c, io.c) ----
 * io__batch's records (SQ_EV_IO): while io__batch is enabled a site reads the clock
 * before its system call and writes the record after it; else each of the two is a
 * compare of the semaphore with memory and a branch (the time is kept in memory, not in
 * a register that would have to live across the call: callgrind counted 11 more
 * instructions a read that way, 4 this way):
 *
 *     SQ_IO_START();
 *     got = read(fd, buf, want);
 *     SQ_IO_END(SQ_IO_READ, fd, got, SQ_IO_KIND_OF_OP);
 *
 * result: the call's answer, negative when it failed (errno then says why: the record
 * holds -errno); errno is as the call left it after SQ_IO_END. kind: SQ_IO_KIND_OF_OP
 * (the descriptor's, as the op finds it: probes.c) or a kind (close: the descriptor's,
 * taken before the table forgets it). A tool that attaches during the call gets no
 * record of it (no start). */
#define SQ_IO_START() do { if (SQ_ENABLED(IO_BATCH)) probe_io_start(); } while (0)
#define SQ_IO_END(op, fd, result, kind) \
    do { if (SQ_ENABLED(IO_BATCH)) probe_io_call(op, fd, (int64_t)(result), kind); } while (0)
#define SQ_IO_KIND_OF_OP (-1)
#if SQVM_PROBES
void probe_io_start(void);
void probe_io_call(int op, int fd, int64_t result, int kind); /* result < 0: -errno is recorded */
#else
static inline void probe_io_start(void) {}
static inline void probe_io_call(int op, int fd, int64_t result, int kind) { (void)op; (void)fd; (void)result; (void)kind; }
#endif

/* ---- Collections (gc.c) ---- */
#define SQ_GC_BEGIN_ENABLED(kind) ((kind) == 0 ? SQ_ENABLED(GC_INCREMENTAL_BEGIN) : SQ_ENABLED(GC_FULL_BEGIN))
#define SQ_GC_END_ENABLED(kind) ((kind) == 0 ? SQ_ENABLED(GC_INCREMENTAL_END) : SQ_ENABLED(GC_FULL_END))

/* ---- Calls (interp.c) ----
 * The call probes' four semaphores are adjacent (squeak.d declares them together:
 * method__entry, method__return and block__return (which share one), block__entry,
 * call__batch, and the generated struct keeps the file's order), so one 64-bit load
 * tells whether any of them is enabled. */
#if SQVM_PROBES
/* changed by the kernel: always reload. The word starts where squeak.d puts
 * method__entry, 2-byte aligned (offset 6 today): a type of that alignment says so,
 * for UBSan; x86-64 loads it as any word. */
typedef uint64_t __attribute__((aligned(2))) sq_call_word;
#define SQ_CALL_SEMAPHORES (*(const volatile sq_call_word *)&squeak_semaphores.method__entry)
#define sq_call_semaphores() SQ_CALL_SEMAPHORES
#else
#define sq_call_semaphores() ((uint64_t)0)
#endif
#define sq_call_probes_enabled() UNLIKELY(sq_call_semaphores() != 0)

/* The interpreter's activation and backward-jump safe points: the 16-bit attention
 * word or a call probe's semaphore set? In the same three instructions as the
 * attention test alone (a load, an or with the semaphores in memory, a branch), so
 * that an activation costs nothing more with the probes compiled in than without. */
#if SQVM_PROBES && defined(__x86_64__)
#define SQ_IF_ATTENTION_OR_CALLS(attention, slowcode)                                       \
    SQ_ASM_BRANCH(__asm__ goto("movzwl %0, %%eax\n\torq %1, %%rax\n\tjnz %l[slow_]"            \
                               : : "m"(attention),                                          \
                                   "m"(SQ_CALL_SEMAPHORES)                                  \
                               : "rax", "cc" : slow_),                                      \
                  slowcode)
#else
#define SQ_IF_ATTENTION_OR_CALLS(attention, slowcode) \
    do { if (UNLIKELY((attention) | sq_call_semaphores())) { slowcode; } } while (0)
#endif

#endif

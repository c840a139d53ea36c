// SPDX-License-Identifier: BSD-2-Clause
/* probes.h - USDT probe sites (probes/squeak.d). Built with PROBES=0, every site compiles
 * to nothing. A site is "if (SQ_ENABLED(NAME)) probe_xxx(...)": the guard is one load
 * of the probe's semaphore, and argument preparation happens only inside it. */
#ifndef SQVM_PROBES_H
#define SQVM_PROBES_H

#include "common.h"

#if SQVM_PROBES
#include "squeak_probes.h"
#define SQ_ENABLED(NAME) UNLIKELY(SQUEAK_##NAME##_ENABLED())
#else
#define SQ_ENABLED(NAME) 0
#endif

struct Frame;
struct GCEvent;
struct Obj;

/* Out of line, cold: called only when a tracer is attached. */
void probe_method_entry(struct Frame *f, uint32_t depth);
void probe_method_return(struct Frame *f, uint32_t depth);
void probe_object_alloc(struct Obj *o, size_t bytes);
void probe_gc_begin(int kind, uint64_t seq, size_t youngBytes, size_t oldBytes);
void probe_gc_end(const struct GCEvent *e);
void probe_class_load(const char *name, const char *path);
void probe_vm_start(void);
void probe_vm_exit(int status);
void probe_dnu(Value receiver, Value selector);
void probe_primitive_fail(Value receiver, const char *primitive, const char *reason);
void probe_process(int what, uint64_t id, const char *name, int priority);
enum { PROBE_PROCESS_CREATE, PROBE_PROCESS_ACTIVATE, PROBE_PROCESS_EXIT };
/* process__ready's reasons (probes/squeak.d). */
enum { READY_RESUMED = 0, READY_SIGNALLED = 1, READY_DELAY = 2, READY_PREEMPTED = 3, READY_IO = 4 };
void probe_process_ready(uint64_t id, const char *name, int reason);
void probe_process_wait(uint64_t id, const char *name, uint64_t semaphore, uint64_t timeoutNs);
void probe_io_wait(uint64_t id, const char *name, int fd, int op, uint64_t timeoutNs);
void probe_io_ready(uint64_t id, const char *name, int fd, int op, int timedOut);
void probe_user(const char *name, int64_t arg, const char *str);
void probe_request_begin(uint64_t id, const char *route, uint64_t process);
void probe_request_end(uint64_t id, const char *route, uint64_t process, int status);
void probes_init(uint64_t allocSampleBytes);

/* The exact allocation probe's guard. The sampled one costs nothing on the allocation
 * fast path: gc.c moves the eden limit to the next sample point, so only the
 * allocation that crosses it takes the slow path and sets gc_sample_due. */
#define SQ_ALLOC_ENABLED() SQ_ENABLED(OBJECT_ALLOC)
extern bool gc_sample_due;
/* After an allocation: is either allocation probe enabled? Their semaphores are
 * adjacent (squeak.d declares object__alloc, then object__alloc__sample), so one
 * 32-bit load answers: the same compare-and-branch that the sampler's flag alone
 * would cost, so allocation pays nothing for the probes being compiled in. With
 * the sampler attached every allocation takes the (short) out-of-line path to
 * look at gc_sample_due. probes_init checks the layout. */
#if SQVM_PROBES
extern const volatile uint32_t sqvm_alloc_semaphores; /* Makefile: --defsym */
#if defined(__x86_64__)
/* A compare with memory: reading the volatile into a register first would cost
 * an instruction more than the PROBES=0 build's test of gc_sample_due. */
#define SQ_IF_ALLOC_PROBES(slowcode)                                               \
    do {                                                                           \
        __label__ slow_, done_;                                                    \
        __asm__ goto("cmpl $0, %0\n\tjne %l[slow_]" : : "m"(sqvm_alloc_semaphores) \
                     : "cc" : slow_);                                              \
        goto done_;                                                                \
    slow_: __attribute__((cold));                                                  \
        slowcode;                                                                  \
    done_:;                                                                        \
    } while (0)
#else
#define SQ_IF_ALLOC_PROBES(slowcode) do { if (UNLIKELY(sqvm_alloc_semaphores)) { slowcode; } } while (0)
#endif
#else
#define SQ_IF_ALLOC_PROBES(slowcode) do { if (UNLIKELY(gc_sample_due)) { slowcode; } } while (0)
#endif
void probe_alloc_sample(struct Obj *o, size_t bytes);
/* Bytes to the next sample: exponentially distributed with mean --alloc-sample. */
uint64_t probe_sample_gap(void);
bool probe_sample_enabled(void);

/* The four call probes' semaphores are adjacent (squeak.d declares them together:
 * method__entry, method__return, block__entry, block__return), so one 64-bit load
 * tells whether any of them is enabled: the cost of the sites on every call and
 * return. probes_init checks the layout. */
#if SQVM_PROBES
/* The linker defines sqvm_call_semaphores at squeak_method__entry_semaphore's address
 * (Makefile: --defsym), an 8-byte view of the four adjacent semaphores. */
extern const volatile uint64_t sqvm_call_semaphores; /* changed by the kernel: always reload */
#define sq_call_semaphores() (sqvm_call_semaphores)
#else
#define sq_call_semaphores() ((uint64_t)0)
#endif
#define sq_call_probes_enabled() UNLIKELY(sq_call_semaphores() != 0)


#endif

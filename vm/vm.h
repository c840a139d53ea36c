// SPDX-License-Identifier: BSD-2-Clause
/* vm.h - process-wide services: fatal errors, options, and the hooks probes attach to. */
#ifndef SQVM_VM_H
#define SQVM_VM_H

#include "common.h"

typedef struct VMOptions {
    const char **classPath;
    int classPathLen;
    bool gcStats;
} VMOptions;

extern VMOptions vm_options;

/* Brings the VM up, the class path being set already: the heap, the probes, the
 * interpreter, the core classes, and the main process (a stack of stackWords), which
 * becomes the running one. The command line and the fuzz targets start the same VM
 * (boot.c, as vm_exit). */
struct GCConfig;
struct Process;
struct Process *vm_boot(const struct GCConfig *gc, uint64_t allocSampleBytes, size_t stackWords);

NORETURN void vm_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
NORETURN void vm_out_of_memory(const char *what);
/* Ends the program with status: every open request ended, the records held back
 * flushed, vm__exit fired, stdout flushed, --gc-stats printed (a fuzz build returns to
 * vm_fuzz_exit instead, before the statistics). */
NORETURN void vm_exit(int status);
/* CLOCK_MONOTONIC in nanoseconds: GC pauses, Delays, system time/ticks. */
uint64_t vm_now_ns(void);
void *vm_xmalloc(size_t n);
void *vm_xcalloc(size_t n, size_t size);
void *vm_xrealloc(void *p, size_t n);
char *vm_xstrdup(const char *s);

/* What the interpreter must look at when it reaches a safe point: a collection
 * that allocation asked for (gc.c), a process that may preempt the running one (set
 * by the event loop's watcher thread, io.c), or an interrupt (interrupt.h: Ctrl-C, the
 * fuzz budget). One word, so that a safe point tests both with one
 * load; each flag is written as its own byte. */
typedef union VMAttention {
    struct {
        volatile uint8_t gc;
        volatile uint8_t sched;
    };
    volatile uint16_t any;
} VMAttention;
extern VMAttention vm_attention;
#define gc_pending (vm_attention.gc)
#define sched_attention (vm_attention.sched)

/* Live old data exceeds --heap after a full collection. */
NORETURN void vm_heap_exhausted(size_t live, size_t max);
/* One object would be larger than --heap allows. */
NORETURN void vm_object_too_large(size_t bytes, size_t max);

#ifdef SQVM_FUZZ
#include <setjmp.h>
extern jmp_buf *vm_fuzz_exit;              /* where vm_exit returns to, when set (boot.c) */
extern uint64_t vm_fuzz_clock_ns;          /* what vm_now_ns answers (vm.c) */
#endif

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* vm.c - start-up, fatal errors, checked allocation and exiting. */
#include "vm.h"
#include "bigint.h"
#include "gc.h"
#include "interp.h"
#include "interrupt.h"
#include "loader.h"
#include "probes.h"
#include "request.h"
#include "sched.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

VMOptions vm_options;
VMAttention vm_attention;
SqVMCounters vm_counters;

Process *vm_boot(const GCConfig *gc, uint64_t allocSampleBytes, size_t stackWords)
{
    gc_init(gc);
    big_stop = &interrupt_pending; /* Ctrl-C and the fuzz budget end long LargeInteger loops */
#ifdef SQVM_FUZZ
    big_fuzz_poll = interrupt_fuzz_spend_work;
#endif
    probes_init(allocSampleBytes);
    interp_init();
    loader_bootstrap();
    Process *p = interp_new_process(stackWords);
    interp_current = p;
    sched_init(p);
    sched_main_object();
    return p;
}

void vm_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("sqvm: fatal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(70);
}

void vm_out_of_memory(const char *what)
{
    fflush(stdout);
    fprintf(stderr, "ERROR: out of memory: %s\n", what);
    vm_exit(1);
}

#ifdef SQVM_FUZZ
/* Fuzz builds (fuzz/): the harness runs many programs in one process, so the end of a
 * program returns to it instead of ending the process (a program that runs past its
 * time budget is ended through interrupt.h). */
jmp_buf *vm_fuzz_exit;
#endif

void vm_exit(int status)
{
    request_vm_exit();
    batch_flush_pending(); /* before vm__exit: a tool that ends on it has every event */
    if (SQ_ENABLED(VM_EXIT)) probe_vm_exit(status);
    fflush(stdout);
#ifdef SQVM_FUZZ
    if (vm_fuzz_exit) longjmp(*vm_fuzz_exit, 1);
#endif
    if (vm_options.gcStats) gc_print_stats();
    exit(status);
}

#ifdef SQVM_FUZZ
/* Fuzz builds run on a clock of their own: work moves it (interrupt.c: a unit of the
 * budget is a microsecond) and an idle scheduler jumps it to the earliest timer
 * (sched.c) instead of sleeping, so a program with Delays takes the same path on a
 * loaded machine as on an idle one, and ends at once. */
uint64_t vm_fuzz_clock_ns = 1000000000ull;

uint64_t vm_now_ns(void) { return vm_fuzz_clock_ns; }
#else
uint64_t vm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

void *vm_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) vm_out_of_memory("malloc failed");
    return p;
}

void *vm_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) vm_out_of_memory("calloc failed");
    return p;
}

void *vm_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) vm_out_of_memory("realloc failed");
    return p;
}

char *vm_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = vm_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

void vm_object_too_large(size_t bytes, size_t max)
{
    fflush(stdout);
    fprintf(stderr, "ERROR: out of memory: an object of %zu bytes is larger than the --heap limit of %zu bytes\n",
            bytes, max);
    interp_print_backtrace();
    vm_exit(1);
}

void vm_heap_exhausted(size_t live, size_t max)
{
    fflush(stdout);
    fprintf(stderr, "ERROR: out of memory: %zu bytes live after a full collection, over the --heap limit of %zu bytes\n",
            live, max);
    interp_print_backtrace();
    vm_exit(1);
}

// SPDX-License-Identifier: BSD-2-Clause
/* vm.c - process-wide services: fatal errors, checked allocation, the clock, and the
 * options, safe-point flags and counters every part reads (start and exit: boot.c). */
#include "vm.h"
#include "interp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

VMOptions vm_options;
VMAttention vm_attention;
SqVMCounters vm_counters;

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

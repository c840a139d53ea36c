// SPDX-License-Identifier: BSD-2-Clause
/* prim_system.c - System primitives: globals, loading, output, time, exit and GC. */
#include "gc.h"
#include "globals.h"
#include "interp.h"
#include "loader.h"
#include "prims.h"
#include "probes.h"
#include "request.h"
#include "traceparent.h"
#include "sched.h"
#include "symbol.h"
#include "vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static Value programArgs;
static uint64_t startNs;

static void scan_roots(GCVisitFn visit) { visit(&programArgs); }

void prims_system_init(Value args)
{
    programArgs = args;
    startNs = vm_now_ns();
    gc_add_root_scanner(scan_roots, false);
}

static bool is_symbol(Value v) { return is_ptr(v) && obj_class_index(as_obj(v)) == CLS_SYMBOL; }

static PrimResult p_global(Value *a, uint32_t n)
{
    (void)n;
    if (!is_symbol(a[1])) return prim_fail(a, "global: needs a Symbol");
    Value v;
    a[0] = globals_lookup(a[1], &v) ? v : VM.nil;
    return PRIM_OK;
}

static PrimResult p_global_put(Value *a, uint32_t n)
{
    (void)n;
    if (!is_symbol(a[1])) return prim_fail(a, "global:put: needs a Symbol");
    globals_define(a[1], a[2]);
    return PRIM_OK; /* answers the receiver, as SOM-java, TruffleSOM and SOM++ do */
}

static PrimResult p_has_global(Value *a, uint32_t n)
{
    (void)n;
    Value v;
    a[0] = bool_value(is_symbol(a[1]) && globals_lookup(a[1], &v));
    return PRIM_OK;
}

static PrimResult p_load(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1])) return prim_fail(a, "load: needs a Symbol");
    ClassInfo *c = loader_load_class(str_bytes(a[1]));
    a[0] = c ? c->classObj : VM.nil;
    return PRIM_OK;
}

static PrimResult p_arguments(Value *a, uint32_t n) { (void)n; a[0] = programArgs; return PRIM_OK; }

static PrimResult p_exit(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1])) return prim_fail(a, "exit: needs an Integer");
    vm_exit((int)int_val(a[1]));
}

static PrimResult write_string(Value *a, FILE *f, bool newline)
{
    if (!is_string_like(a[1])) return prim_fail(a, "printString: needs a String");
    if (f == stderr) fflush(stdout);
    fwrite(str_bytes(a[1]), 1, str_len(a[1]), f);
    if (newline) fputc('\n', f);
    return PRIM_OK;
}

static PrimResult p_print(Value *a, uint32_t n) { (void)n; return write_string(a, stdout, false); }
static PrimResult p_newline(Value *a, uint32_t n) { (void)a; (void)n; fputc('\n', stdout); return PRIM_OK; }
static PrimResult p_eprint(Value *a, uint32_t n) { (void)n; return write_string(a, stderr, false); }
static PrimResult p_eprintln(Value *a, uint32_t n) { (void)n; return write_string(a, stderr, true); }

static PrimResult p_stack_trace(Value *a, uint32_t n)
{
    (void)a; (void)n;
    fflush(stdout);
    interp_print_backtrace();
    return PRIM_OK;
}

static PrimResult p_time(Value *a, uint32_t n) { (void)n; a[0] = int_value((int64_t)((vm_now_ns() - startNs) / 1000000)); return PRIM_OK; }
static PrimResult p_ticks(Value *a, uint32_t n) { (void)n; a[0] = int_value((int64_t)((vm_now_ns() - startNs) / 1000)); return PRIM_OK; }

/* CPU time of the VM process in microseconds: benchmarks on a shared machine. */
static PrimResult p_cpu_ticks(Value *a, uint32_t n)
{
    (void)n;
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    a[0] = int_value((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    return PRIM_OK;
}

static PrimResult p_sleep(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1]) || int_val(a[1]) < 0) return prim_fail(a, "sleepMillis: needs a non-negative Integer");
    int64_t ms = int_val(a[1]);
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    record_flush_pending(); /* the VM sleeps: what it traced is out first */
    while (nanosleep(&ts, &ts) != 0) {}
    return PRIM_OK;
}

/* A collection may move objects, but the primitive's arguments are on the
 * Smalltalk stack below the saved sp, so they are updated in place. */
static PrimResult p_full_gc(Value *a, uint32_t n)
{
    (void)n;
    gc_full_collect();
    a[0] = VM.trueObj;
    return PRIM_OK;
}

static PrimResult p_young_gc(Value *a, uint32_t n)
{
    (void)n;
    gc_young_collect();
    a[0] = VM.trueObj;
    return PRIM_OK;
}

static Value int_array(const int64_t *v, size_t count)
{
    Value arr = array_new(count);
    for (size_t i = 0; i < count; i++) as_obj(arr)->slots[i] = int_value(v[i]);
    return arr;
}

/* SOM's gcStats: #(collections gcMilliseconds allocatedBytes) */
static PrimResult p_gc_stats(Value *a, uint32_t n)
{
    (void)n;
    const GCStats *s = gc_stats();
    int64_t v[3] = {(int64_t)(s->youngCount + s->fullCount),
                    (int64_t)((s->youngPauseNs + s->fullPauseNs) / 1000000), (int64_t)s->bytesAllocated};
    a[0] = int_array(v, 3);
    return PRIM_OK;
}

static PrimResult p_compilation_time(Value *a, uint32_t n)
{
    (void)n;
    a[0] = int_value((int64_t)(loader_compile_ns / 1000000));
    return PRIM_OK;
}

/* The contents of a file as a String, or nil if it cannot be read. */
static PrimResult p_load_file(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1])) return prim_fail(a, "loadFile: needs a String");
    FILE *f = fopen(str_bytes(a[1]), "rb");
    if (!f) { a[0] = VM.nil; return PRIM_OK; }
    size_t cap = 4096, len = 0, r;
    char *buf = vm_xmalloc(cap);
    while ((r = fread(buf + len, 1, cap - len, f)) > 0)
        if ((len += r) == cap) buf = vm_xrealloc(buf, cap *= 2);
    bool failed = ferror(f);
    fclose(f);
    a[0] = failed ? VM.nil : str_new(buf, len);
    free(buf);
    return PRIM_OK;
}

/* #(youngCount fullCount youngPauseMicros fullPauseMicros maxPauseMicros
 *   bytesAllocated bytesTenured oldBytes) */
static PrimResult p_gc_details(Value *a, uint32_t n)
{
    (void)n;
    const GCStats *s = gc_stats();
    uint64_t maxPause = s->maxYoungPauseNs > s->maxFullPauseNs ? s->maxYoungPauseNs : s->maxFullPauseNs;
    int64_t v[8] = {(int64_t)s->youngCount, (int64_t)s->fullCount, (int64_t)(s->youngPauseNs / 1000),
                    (int64_t)(s->fullPauseNs / 1000), (int64_t)(maxPause / 1000), (int64_t)s->bytesAllocated,
                    (int64_t)s->bytesTenured, (int64_t)s->oldBytes};
    a[0] = int_array(v, 8);
    return PRIM_OK;
}

/* Peak resident set size (VmHWM) in KiB, so tests can bound memory use. */
static PrimResult p_peak_rss(Value *a, uint32_t n)
{
    (void)n;
    FILE *f = fopen("/proc/self/status", "r");
    long kib = -1;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
    if (f) fclose(f);
    a[0] = int_value(kib);
    return PRIM_OK;
}

/* ---- Probe (user-defined USDT events) ---- */

static PrimResult p_fire_int(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1]) || !is_int(a[2])) return prim_fail(a, "fire:with: needs a String and a small Integer");
    if (SQ_ENABLED(USER_PROBE)) probe_user(str_bytes(a[1]), int_val(a[2]), NULL);
    return PRIM_OK;
}

static PrimResult p_fire_str(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1]) || !is_string_like(a[2])) return prim_fail(a, "fire:withString: needs two Strings");
    if (SQ_ENABLED(USER_PROBE_STR)) probe_user(str_bytes(a[1]), 0, str_bytes(a[2]));
    return PRIM_OK;
}

static PrimResult p_probe_traced(Value *a, uint32_t n)
{
    (void)n;
    a[0] = bool_value(SQ_ENABLED(USER_PROBE) || SQ_ENABLED(USER_PROBE_STR));
    return PRIM_OK;
}

/* beginRequest: aRoute [traceparent: aString]: a new request owned by the active
 * process; its id. A traceparent that is not a String, or not a valid one, is ignored
 * (W3C Trace Context): the request then has no trace. */
static PrimResult begin_request(Value *a, Value traceparent)
{
    TraceContext t;
    bool traced = traceparent && is_string_like(traceparent) &&
                  traceparent_parse(str_bytes(traceparent), str_len(traceparent), &t);
    if (!is_string_like(a[1])) return prim_fail(a, "beginRequest: needs a String (the route)");
    Value route = is_symbol(a[1]) ? a[1] : sym_intern(str_bytes(a[1]), str_len(a[1]));
    a[0] = int_value((int64_t)request_begin(route, interp_current, traced ? &t : NULL));
    return PRIM_OK;
}

static PrimResult p_begin_request(Value *a, uint32_t n) { (void)n; return begin_request(a, 0); }
static PrimResult p_begin_request_traced(Value *a, uint32_t n) { (void)n; return begin_request(a, a[2]); }

/* traceResponse: id: the traceresponse header of the open request id (its trace id,
 * its own span, the flags), or nil if it has no trace context. */
static PrimResult p_trace_response(Value *a, uint32_t n)
{
    (void)n;
    const TraceContext *t = is_int(a[1]) && int_val(a[1]) > 0 ? request_trace((uint64_t)int_val(a[1])) : NULL;
    char buf[TRACEPARENT_LEN + 1];
    if (!t) {
        a[0] = VM.nil;
        return PRIM_OK;
    }
    traceparent_format(t, t->span, buf);
    a[0] = str_new(buf, TRACEPARENT_LEN);
    return PRIM_OK;
}

/* endRequest: id status: anInteger */
static PrimResult p_end_request(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1]) || !is_int(a[2])) return prim_fail(a, "endRequest:status: needs two small Integers");
    int64_t status = int_val(a[2]);
    if (status < INT32_MIN || status > INT32_MAX) return prim_fail(a, "endRequest:status: the status must fit 32 bits");
    if (int_val(a[1]) <= 0 || !request_end((uint64_t)int_val(a[1]), (int)status))
        return prim_fail(a, "endRequest:status: no such open request");
    return PRIM_OK;
}

const PrimDef prims_system[] = {
    {"Probe class", "fire:with:", p_fire_int}, {"Probe class", "fire:withString:", p_fire_str},
    {"Probe class", "isTraced", p_probe_traced},
    {"Probe class", "beginRequest:", p_begin_request}, {"Probe class", "endRequest:status:", p_end_request},
    {"Probe class", "beginRequest:traceparent:", p_begin_request_traced},
    {"Probe class", "traceResponse:", p_trace_response},
    {"System", "peakRSSKiB", p_peak_rss}, {"System", "cpuTicks", p_cpu_ticks},
    {"System", "youngGC", p_young_gc}, {"System", "gcStats", p_gc_stats},
    {"System", "gcDetails", p_gc_details}, {"System", "totalCompilationTime", p_compilation_time},
    {"System", "loadFile:", p_load_file},
    {"System", "global:", p_global}, {"System", "global:put:", p_global_put},
    {"System", "hasGlobal:", p_has_global}, {"System", "load:", p_load}, {"System", "arguments", p_arguments},
    {"System", "exit:", p_exit}, {"System", "printString:", p_print}, {"System", "printNewline", p_newline},
    {"System", "errorPrint:", p_eprint}, {"System", "errorPrintln:", p_eprintln},
    {"System", "printStackTrace", p_stack_trace}, {"System", "time", p_time}, {"System", "ticks", p_ticks},
    {"System", "sleepMillis:", p_sleep}, {"System", "fullGC", p_full_gc},
    {NULL, NULL, NULL},
};

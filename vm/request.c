// SPDX-License-Identifier: BSD-2-Clause
/* request.c - the open requests (request.h): a list, since a process has few open at
 * once, with the records of ended ones kept for reuse, so that a request costs no
 * malloc once the program runs; the probe sites of request__begin and request__end. */
#include "request.h"
#include "probes.h"
#include "symbol.h"
#include "interp.h"
#include "traceparent.h"
#include "vm.h"

#include <stdlib.h>

typedef struct Request {
    uint64_t id;
    Process *owner;            /* open: its requestsOpen counts this one */
    Value route;               /* a Symbol */
    bool traced;               /* it has a trace context */
    TraceContext trace;
    struct Request *next;
} Request;

static Request *open, *spare;
static uint64_t lastId;

/* Shows process p's trace context t (NULL: none) in p->trace, which samplers read from
 * outside while the VM runs: one interrupting this thread at any instruction, or one on
 * another CPU (sqprof --wall). Its span is 0 while the other words change and is written
 * last, with release order, so a reader that finds the same span before and after it
 * read the rest has read one context whole. */
static void show_trace(Process *p, const TraceContext *t)
{
    __atomic_store_n(&p->trace.span, 0, __ATOMIC_RELAXED);
    if (!t) return;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    p->trace.traceHi = t->traceHi;
    p->trace.traceLo = t->traceLo;
    p->trace.parent = t->parent;
    p->trace.flags = t->flags;
    __atomic_store_n(&p->trace.span, t->span, __ATOMIC_RELEASE);
}

/* The trace context of p's innermost open request that has one (the list is newest
 * first), or NULL. */
static const TraceContext *innermost_trace(const Process *p)
{
    for (const Request *r = open; r; r = r->next)
        if (r->owner == p && r->traced) return &r->trace;
    return NULL;
}

uint64_t request_begin(Value route, Process *owner, const TraceContext *trace)
{
    Request *r = spare;
    if (r) spare = r->next;
    else if (!(r = malloc(sizeof *r))) vm_fatal("out of memory (request)");
    r->id = ++lastId;
    r->route = route;
    r->owner = owner;
    r->traced = trace != NULL;
    if (trace) {
        r->trace = *trace;
        r->trace.span = traceparent_new_span();
    }
    owner->requestsOpen++;
    r->next = open;
    open = r;
    if (trace) show_trace(owner, &r->trace);
    probe_request_begin(r->id, sym_cstr(route), owner, trace ? &r->trace : NULL);
    return r->id;
}

const TraceContext *request_trace(uint64_t id)
{
    for (Request *r = open; r; r = r->next)
        if (r->id == id) return r->traced ? &r->trace : NULL;
    return NULL;
}

/* Unlinks *link (an open request) and ends it with status. */
static void end_at(Request **link, int status)
{
    Request *r = *link;
    *link = r->next;
    r->owner->requestsOpen--;
    if (r->traced && r->owner->trace.span == r->trace.span) show_trace(r->owner, innermost_trace(r->owner));
    probe_request_end(r->id, sym_cstr(r->route), r->owner, status);
    r->next = spare;
    spare = r;
}

bool request_end(uint64_t id, int status)
{
    for (Request **link = &open; *link; link = &(*link)->next)
        if ((*link)->id == id) {
            end_at(link, status);
            return true;
        }
    return false;
}

void request_process_ended(Process *p)
{
    for (Request **link = &open; *link;)
        if ((*link)->owner == p) end_at(link, REQUEST_ABANDONED);
        else link = &(*link)->next;
}

void request_vm_exit(void)
{
    while (open) end_at(&open, REQUEST_VM_EXIT);
}

#ifdef SQVM_FUZZ
void request_fuzz_reset(void)
{
    probe_requests_dropped();
    while (open) {
        Request *r = open;
        open = r->next;
        free(r);
    }
}
#endif

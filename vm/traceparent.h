// SPDX-License-Identifier: BSD-2-Clause
/* traceparent.h - W3C Trace Context (https://www.w3.org/TR/trace-context/): the
 * traceparent header a request arrives with, parsed as the specification says (a value
 * that breaks any rule is ignored, and the request has no trace), and the traceresponse
 * header that carries the span the VM gives the request back to the caller. */
#ifndef SQVM_TRACEPARENT_H
#define SQVM_TRACEPARENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct TraceContext {
    uint64_t traceHi, traceLo; /* the 16-byte trace id, as two big-endian halves */
    uint64_t parent;           /* the caller's span (parent-id) */
    uint64_t span;             /* the request's own span, made by the VM */
    uint8_t flags;             /* trace-flags (bit 0: sampled) */
} TraceContext;

/* "00-<32 hex>-<16 hex>-<2 hex>" (or a later version, which may carry more after a
 * dash): fills t's trace id, parent and flags; false if s is not a valid traceparent
 * (version ff, upper-case or non-hex digits, an all-zero trace or parent id, a wrong
 * length). */
bool traceparent_parse(const char *s, size_t n, TraceContext *t);
/* A new span id: never 0, distinct for the VM's life (a counter through a bijective
 * mix seeded at start, so ids do not repeat across VMs started together either). */
uint64_t traceparent_new_span(void);
/* "00-<trace id>-<span>-<flags>" into buf (TRACEPARENT_LEN + 1 bytes). */
#define TRACEPARENT_LEN 55
void traceparent_format(const TraceContext *t, uint64_t span, char *buf);

#endif

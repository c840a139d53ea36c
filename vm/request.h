// SPDX-License-Identifier: BSD-2-Clause
/* request.h - requests a program marks with Probe beginRequest: / endRequest:status:
 * (the request__begin and request__end probes). A request belongs to the green process
 * that began it; when that process ends (or the VM exits) with requests still open,
 * each is ended with a status that says so, so that no tracer sees one left open. */
#ifndef SQVM_REQUEST_H
#define SQVM_REQUEST_H

#include "common.h"

/* request__end's status for a request its process never ended: the process ended
 * (REQUEST_ABANDONED) or the VM exited (REQUEST_VM_EXIT). */
enum { REQUEST_ABANDONED = -1, REQUEST_VM_EXIT = -2 };

/* A new open request on route (a Symbol: permanent, so probes may hand out its bytes)
 * of process owner, with the trace context it arrived with (NULL: none; else the
 * request gets a span of its own, and owner's Process.trace shows it while it is its
 * innermost open request with one); answers its id (1, 2, ...). */
struct Process;
struct TraceContext;
uint64_t request_begin(Value route, struct Process *owner, const struct TraceContext *trace);
/* The open request id's trace context (its span set), or NULL if it has none or is
 * not open. */
const struct TraceContext *request_trace(uint64_t id);
/* Ends the open request id with status; false if no such request is open. */
bool request_end(uint64_t id, int status);
/* The process ended: its open requests end with REQUEST_ABANDONED. */
void request_process_ended(struct Process *p);
/* The VM exits: every open request ends with REQUEST_VM_EXIT. */
void request_vm_exit(void);
#ifdef SQVM_FUZZ
void request_fuzz_reset(void);
#endif

#endif

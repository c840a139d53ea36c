// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqcommon.h - what every tool's BPF program and its user space share: sizes, the keys
 * and values of the family's maps (bpf/sqvm.bpf.h), and the VM's debug-offsets contract
 * (probes/debug_offsets.h) with the one check and the one conversion of it that both
 * sides use. It includes its own types, so it can come first, last or alone. */
#ifndef SQCOMMON_H
#define SQCOMMON_H

#ifdef __bpf__
#include "vmlinux.h"
/* debug_offsets.h is plain C: on the BPF side vmlinux.h's types stand for <stdint.h>'s */
typedef __u32 uint32_t;
typedef __u64 uint64_t;
#define SQ_INLINE static inline __attribute__((always_inline))
#else
#include <stdbool.h>
#include <linux/types.h>
#define SQ_INLINE static inline
#endif
#include "debug_offsets.h"

/* Room for a class name or a selector read from the VM; longer ones are cut (NUL kept). */
#define SQ_NAME_LEN 64

/* Slots of a log2 histogram: slot i counts values in [2^(i-1), 2^i - 1] (slot 0: 0 and 1). */
#define SQ_MAX_SLOTS 32

/* Processes a tool keeps the offsets of (the vms map), and names it keeps copies of. */
#define SQ_MAX_VMS 4096
#define SQ_MAX_NAMES 65536

/* A name (class, selector, method) as a BPF program copied it: the first SQ_NAME_COPY - 1
 * bytes, kept by (process, address) the first time a new map key used it, for a process
 * that has exited before user space read its names whole (tools/sqnames.h). */
#define SQ_NAME_COPY 128

struct sq_name_key {
	__u32 pid;
	__u32 pad;		/* 0 (a filter's cache may use it for the kind of name) */
	__u64 addr;		/* of the string, or of the Method (its printName) */
};

struct sq_name_copy {
	char name[SQ_NAME_COPY];
};

/* What a tool knows of one VM process (the vms map, keyed by PID): where its debug
 * offsets are, when it started, and what a stack walk needs of them (run-time
 * addresses, load bias included, and field offsets). */
struct sq_vm_offsets {
	__u64 debug_offsets;		/* run-time address of its sqvm_debug_offsets */
	__u64 started_ns;		/* its vm__start (CLOCK_MONOTONIC); 0: it ran before the tool */
	__u64 current_process;		/* &interp_current: Process ** */
	__u32 process_fp;		/* Process.fp: Frame * */
	__u32 process_stack_base;	/* Process.stackBase, .stackLimit: a consistent stack's */
	__u32 process_stack_limit;	/* frames lie between them, each below its callee */
	__u32 frame_caller;		/* Frame.caller: Frame * */
	__u32 frame_method;		/* Frame.method: Method *, NULL in the bottom frame */
	__u32 method_print_name;	/* Method.printName: char * */
	/* The running process's name (sq_process_name, bpf/sqvm.bpf.h) */
	__u32 process_obj, process_id, process_is_main, process_name;
	__u32 class_nil, class_string, class_symbol;
	__u32 header_class_mask, value_tag_mask, string_bytes;
	/* The allocation totals (sqreq): objects, and bytes as
	 * *gc_bytes_allocated + *gc_top - *gc_eden (probes/debug_offsets.h). */
	__u64 allocations;		/* &vm_counters.allocations: uint64_t * */
	__u64 gc_top, gc_eden, gc_bytes_allocated;
	/* Every live process and its state (sqprof --wall) */
	__u64 process_all;		/* Process **: the list's head */
	__u64 gc_running;		/* uint8_t *: nonzero while the VM collects */
	__u32 process_all_next, process_state, process_waiting_on;
	__u8 state_running, state_ready, state_waiting, state_io, state_suspended, state_terminated;
	__u8 has_trace;			/* the process_trace_* offsets are known */
	__u8 pad;
	/* A request whose begin record the VM holds back (sqreq --slowest's samples) */
	__u32 process_request_pending;
	/* The trace context of a process's innermost open request with one (sqprof's pprof
	 * labels): Process.trace's words; the span 0 while it has none */
	__u32 process_trace_hi, process_trace_lo, process_trace_parent, process_trace_span;
	__u32 pad2;
};

/* The fields every tool reads; a VM that is older than a later field (appended) is still
 * known, without it: process_request_pending (sqreq --slowest) reads as 0, and its
 * processes have no trace context (has_trace false). */
#define SQ_DEBUG_OFFSETS_MIN __builtin_offsetof(SqDebugOffsets, process_request_pending)
/* Does d, of the size it says, hold this (appended) field? */
#define SQ_DEBUG_HAS(d, field) ((d)->size >= __builtin_offsetof(SqDebugOffsets, field) + sizeof((d)->field))

/* The block carries no structure sizes, so every offset of a field in a structure the
 * target describes (Process, Frame, Method, ClassInfo, an object) is bounded by a fixed
 * maximum structure size: a field lies in the structure's first SQ_STRUCT_MAX bytes,
 * whole (8 bytes, the widest field any reader reads). Readers add these offsets to
 * target pointers and size copies from them (sqstack's window), so an unbounded one could
 * make a read wrap or a copy overflow. */
#define SQ_STRUCT_MAX 4096
#define SQ_FIELD_OK(off) ((__u64)(off) <= SQ_STRUCT_MAX - 8)
/* A block larger than this is not one the tools know either (fields are appended). */
#define SQ_DEBUG_OFFSETS_MAX 4096

/* Every field offset of d within SQ_STRUCT_MAX; no loop, so the BPF verifier sees it
 * straight. */
SQ_INLINE bool sq_field_offsets_ok(const SqDebugOffsets *d)
{
	return SQ_FIELD_OK(d->process_fp) && SQ_FIELD_OK(d->process_stack_base) &&
	       SQ_FIELD_OK(d->frame_caller) && SQ_FIELD_OK(d->frame_method) && SQ_FIELD_OK(d->frame_ip) &&
	       SQ_FIELD_OK(d->frame_self) && SQ_FIELD_OK(d->frame_closure) &&
	       SQ_FIELD_OK(d->method_selector) && SQ_FIELD_OK(d->method_holder) &&
	       SQ_FIELD_OK(d->method_print_name) && SQ_FIELD_OK(d->method_flags) &&
	       SQ_FIELD_OK(d->method_code) && SQ_FIELD_OK(d->method_lines) && SQ_FIELD_OK(d->method_line) &&
	       SQ_FIELD_OK(d->method_source_path) && SQ_FIELD_OK(d->class_name) &&
	       SQ_FIELD_OK(d->class_index) && SQ_FIELD_OK(d->string_length) && SQ_FIELD_OK(d->string_bytes) &&
	       SQ_FIELD_OK(d->process_stack_limit) && SQ_FIELD_OK(d->method_code_len) &&
	       SQ_FIELD_OK(d->process_obj) && SQ_FIELD_OK(d->process_id) &&
	       SQ_FIELD_OK(d->process_is_main) && SQ_FIELD_OK(d->process_name) &&
	       SQ_FIELD_OK(d->process_all_next) && SQ_FIELD_OK(d->process_state) &&
	       SQ_FIELD_OK(d->process_waiting_on) &&
	       (!SQ_DEBUG_HAS(d, process_request_pending) || SQ_FIELD_OK(d->process_request_pending)) &&
	       (!SQ_DEBUG_HAS(d, process_trace_span) ||
		(SQ_FIELD_OK(d->process_trace_hi) && SQ_FIELD_OK(d->process_trace_lo) &&
		 SQ_FIELD_OK(d->process_trace_parent) && SQ_FIELD_OK(d->process_trace_span)));
}

/* Is d a debug-offsets structure the tools know: the magic, the version, and every field
 * they read present (a VM appends fields, so an older one is smaller)? */
SQ_INLINE bool sq_debug_offsets_known(const SqDebugOffsets *d)
{
	for (int i = 0; i < (int)sizeof(SQVM_DEBUG_MAGIC); i++)	/* unrolled: the verifier sees no loop */
		if (d->magic[i] != SQVM_DEBUG_MAGIC[i])
			return false;
	return d->version == SQVM_DEBUG_VERSION && d->size >= SQ_DEBUG_OFFSETS_MIN;
}

/* A known structure whose bounds hold: its size at most SQ_DEBUG_OFFSETS_MAX, every field
 * offset within its structure's SQ_STRUCT_MAX. The one check every reader (tools, BPF)
 * makes before it uses an offset. */
SQ_INLINE bool sq_debug_offsets_ok(const SqDebugOffsets *d)
{
	return sq_debug_offsets_known(d) && d->size <= SQ_DEBUG_OFFSETS_MAX && sq_field_offsets_ok(d);
}

/* A VM's entry in the vms map, from its debug offsets d (read at run-time address addr). */
SQ_INLINE void sq_vm_offsets_from(const SqDebugOffsets *d, __u64 addr, __u64 started_ns,
				  struct sq_vm_offsets *o)
{
	o->debug_offsets = addr;
	o->started_ns = started_ns;
	o->current_process = d->current_process;
	o->process_fp = d->process_fp;
	o->process_stack_base = d->process_stack_base;
	o->process_stack_limit = d->process_stack_limit;
	o->frame_caller = d->frame_caller;
	o->frame_method = d->frame_method;
	o->method_print_name = d->method_print_name;
	o->process_obj = d->process_obj;
	o->process_id = d->process_id;
	o->process_is_main = d->process_is_main;
	o->process_name = d->process_name;
	o->class_nil = d->class_nil;
	o->class_string = d->class_string;
	o->class_symbol = d->class_symbol;
	o->header_class_mask = d->header_class_mask;
	o->value_tag_mask = d->value_tag_mask;
	o->string_bytes = d->string_bytes;
	o->allocations = d->counters + __builtin_offsetof(SqVMCounters, allocations);
	o->gc_top = d->gc_top;
	o->gc_eden = d->gc_eden;
	o->gc_bytes_allocated = d->gc_bytes_allocated;
	o->process_all = d->process_all;
	o->gc_running = d->gc_running;
	o->process_all_next = d->process_all_next;
	o->process_state = d->process_state;
	o->process_waiting_on = d->process_waiting_on;
	o->state_running = d->state_running;
	o->state_ready = d->state_ready;
	o->state_waiting = d->state_waiting;
	o->state_io = d->state_io;
	o->state_suspended = d->state_suspended;
	o->state_terminated = d->state_terminated;
	o->process_request_pending = SQ_DEBUG_HAS(d, process_request_pending) ? d->process_request_pending : 0;
	o->has_trace = SQ_DEBUG_HAS(d, process_trace_span);
	o->process_trace_hi = o->has_trace ? d->process_trace_hi : 0;
	o->process_trace_lo = o->has_trace ? d->process_trace_lo : 0;
	o->process_trace_parent = o->has_trace ? d->process_trace_parent : 0;
	o->process_trace_span = o->has_trace ? d->process_trace_span : 0;
}

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* debug_offsets.c - sqvm_debug_offsets (probes/debug_offsets.h): where an out-of-process
 * reader (a profiler, a debugger, the tools' BPF programs) finds the running process, the
 * Smalltalk stack, names and the VM's counters in this VM's memory. Always present,
 * probes or not: it takes the address of the VM's globals and the offsets of its
 * structures, so it includes the parts that define them. */
#include "debug_offsets.h"
#include "probes.h"
#include "record.h"
#include "alloc.h"
#include "gc.h"
#include "interp.h"
#include "sched.h"
#include "vm.h"

#include <stddef.h>

__attribute__((used, visibility("default"))) const SqDebugOffsets sqvm_debug_offsets = {
    .magic = SQVM_DEBUG_MAGIC,
    .version = SQVM_DEBUG_VERSION,
    .size = sizeof(SqDebugOffsets),
    .current_process = (uint64_t)(uintptr_t)&interp_current,
    .class_table = (uint64_t)(uintptr_t)&VM.classes,
    .class_count = (uint64_t)(uintptr_t)&VM.numClasses,
    .process_fp = offsetof(Process, fp),
    .process_stack_base = offsetof(Process, stackBase),
    .frame_caller = offsetof(Frame, caller),
    .frame_method = offsetof(Frame, method),
    .frame_ip = offsetof(Frame, ip),
    .frame_self = offsetof(Frame, self),
    .frame_closure = offsetof(Frame, closure),
    .method_selector = offsetof(Method, selector),
    .method_holder = offsetof(Method, holder),
    .method_print_name = offsetof(Method, printName),
    .method_flags = offsetof(Method, flags),
    .method_code = offsetof(Method, code),
    .method_lines = offsetof(Method, lines),
    .method_line = offsetof(Method, line),
    .method_source_path = offsetof(Method, sourcePath),
    .class_name = offsetof(ClassInfo, name),
    .class_index = offsetof(ClassInfo, index),
    .header_class_mask = HDR_CLASS_MASK,
    .string_length = offsetof(Obj, slots),
    .string_bytes = offsetof(Obj, slots) + sizeof(Value),
    .method_flag_block = MF_BLOCK,
    .value_tag_mask = VALUE_TAG_MASK,
    .value_int_mask = 1,
    .value_float_tag = FLOAT_TAG,
    .class_integer = CLS_INTEGER,
    .class_double = CLS_DOUBLE,
    .process_stack_limit = offsetof(Process, stackEnd), /* frames may use the reserve beyond stackLimit */
    .method_code_len = offsetof(Method, codeLen),
    .counters = (uint64_t)(uintptr_t)&vm_counters,
    .gc_top = (uint64_t)(uintptr_t)&gc_top,
    .gc_eden = (uint64_t)(uintptr_t)&gc_eden,
    .gc_bytes_allocated = (uint64_t)(uintptr_t)&gc_stats_data.bytesAllocated,
    .gc_young_count = (uint64_t)(uintptr_t)&gc_stats_data.youngCount,
    .gc_full_count = (uint64_t)(uintptr_t)&gc_stats_data.fullCount,
    .gc_young_pause_ns = (uint64_t)(uintptr_t)&gc_stats_data.youngPauseNs,
    .gc_full_pause_ns = (uint64_t)(uintptr_t)&gc_stats_data.fullPauseNs,
    .process_obj = offsetof(Process, obj),
    .process_id = offsetof(Process, id),
    .process_is_main = offsetof(Process, isMain),
    .process_name = offsetof(Obj, slots) + PROC_NAME * sizeof(Value),
    .class_nil = CLS_NIL,
    .class_string = CLS_STRING,
    .class_symbol = CLS_SYMBOL,
    .alloc_sample_bytes = (uint64_t)(uintptr_t)&probes_sample_mean,
    .process_all = (uint64_t)(uintptr_t)&sched_all,
    .gc_running = (uint64_t)(uintptr_t)&gc_running,
    .process_all_next = offsetof(Process, allNext),
    .process_state = offsetof(Process, state),
    .process_request_pending = offsetof(Process, requestPending),
    .process_trace_hi = offsetof(Process, trace.traceHi),
    .process_trace_lo = offsetof(Process, trace.traceLo),
    .process_trace_parent = offsetof(Process, trace.parent),
    .process_trace_span = offsetof(Process, trace.span),
    .process_waiting_on = offsetof(Process, waitingOn),
    .state_running = PS_RUNNING,
    .state_ready = PS_READY,
    .state_waiting = PS_WAITING,
    .state_io = PS_IO,
    .state_suspended = PS_SUSPENDED,
    .state_terminated = PS_TERMINATED,
#if SQVM_PROBES
    .record_ring = (uint64_t)(uintptr_t)&sq_record_ring,
#endif
};

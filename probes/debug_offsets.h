// SPDX-License-Identifier: BSD-2-Clause
/* debug_offsets.h - the versioned structure (ELF symbol sqvm_debug_offsets) that tells an
 * out-of-process reader (a BPF program, gdb, tools/sqstack) how to find the active
 * process's current frame and walk the Smalltalk stack. Plain C, no VM headers: tools
 * include it too. Find the symbol's address in the ELF file, add the load bias of a
 * PIE process, and read the structure from the live process: its address fields are
 * then run-time addresses (the dynamic loader relocated them). See probes/README.md. */
#ifndef SQVM_DEBUG_OFFSETS_H
#define SQVM_DEBUG_OFFSETS_H

/* A BPF program (compiled against vmlinux.h) defines uint32_t and uint64_t itself. */
#ifndef __bpf__
#include <stdint.h>
#endif

#define SQVM_DEBUG_MAGIC "SQVMDBG"
#define SQVM_DEBUG_VERSION 1

/* Counters the VM keeps for outside readers (sqstat), at the address debug offsets'
 * `counters` names. Each is an aligned 64-bit word that only the VM's thread writes, so
 * a reader never sees one torn. Fields are only ever appended. */
typedef struct SqVMCounters {
    uint64_t activations;        /* method and block activations (frames pushed) */
    uint64_t allocations;        /* objects allocated in the collected heap */
    uint64_t process_switches;   /* the scheduler handed the CPU to another process */
    uint64_t dnus;               /* messages not understood */
    uint64_t class_loads;        /* classes defined from files */
    uint64_t primitive_failures;
} SqVMCounters;

typedef struct SqDebugOffsets {
    char magic[8];              /* "SQVMDBG\0" */
    uint32_t version;           /* SQVM_DEBUG_VERSION: bumped on any incompatible change */
    uint32_t size;              /* sizeof(SqDebugOffsets): fields are only ever appended */
    /* addresses (in the binary) of VM globals */
    uint64_t current_process;   /* Process **: the running green process */
    uint64_t class_table;       /* ClassInfo ***: the class table */
    uint64_t class_count;       /* uint32_t *: entries in use */
    /* Process */
    uint32_t process_fp;        /* Frame *: current frame, stored on every call and return */
    uint32_t process_stack_base;
    /* Frame */
    uint32_t frame_caller;      /* Frame *; the bottom frame's method is NULL */
    uint32_t frame_method;      /* Method * */
    uint32_t frame_ip;          /* const uint8_t *: saved ip (current for all but the top frame) */
    uint32_t frame_self;        /* Value: the receiver */
    uint32_t frame_closure;     /* Value: the block, or nil for a method */
    /* Method (native memory: never moves) */
    uint32_t method_selector;   /* Value: a Symbol (permanent: never moves) */
    uint32_t method_holder;     /* ClassInfo * */
    uint32_t method_print_name; /* char *: "Class>>selector" or "[] in Class>>selector" */
    uint32_t method_flags;      /* uint16_t */
    uint32_t method_code;       /* uint8_t *: bytecode */
    uint32_t method_lines;      /* uint16_t *: source line of each bytecode */
    uint32_t method_line;       /* uint32_t: line of the method's definition */
    uint32_t method_source_path;/* char * */
    /* ClassInfo */
    uint32_t class_name;        /* char * */
    uint32_t class_index;       /* uint32_t */
    /* objects */
    uint32_t header_class_mask; /* class index = header & mask */
    uint32_t string_length;     /* offset of the byte length in a String/Symbol object */
    uint32_t string_bytes;      /* offset of the NUL-terminated bytes */
    uint32_t method_flag_block; /* method_flags bit set for blocks */
    /* Values (appended: present when size >= 144): the class of a Value such as frame_self.
     * (v & value_int_mask) != 0: a small integer, class index class_integer;
     * else (v & value_tag_mask) == value_float_tag: an immediate Double,
     * class_double; else (tag 0) a pointer to an object's header word. */
    uint32_t value_tag_mask;    /* 3 */
    uint32_t value_int_mask;    /* 1 */
    uint32_t value_float_tag;   /* 2 */
    uint32_t class_integer;
    uint32_t class_double;
    /* For validating a stack read from outside (appended: size >= 152): a frame lies in
     * [stackBase, stackLimit) of its process, and its ip in [code, code + codeLen]. */
    uint32_t process_stack_limit; /* Value *: one past the process's stack memory (Process.stackEnd) */
    uint32_t method_code_len;     /* uint32_t: bytes of bytecode */
    /* Rates for sqstat (appended: size >= 216). The heap's allocated bytes are
     * *gc_bytes_allocated (up to the last collection) + *gc_top - *gc_eden. */
    uint64_t counters;            /* SqVMCounters * */
    uint64_t gc_top;              /* char **: eden's allocation pointer */
    uint64_t gc_eden;             /* char **: eden's start */
    uint64_t gc_bytes_allocated;  /* uint64_t * */
    uint64_t gc_young_count;      /* uint64_t *: young collections */
    uint64_t gc_full_count;       /* uint64_t * */
    uint64_t gc_young_pause_ns;   /* uint64_t *: their pauses, summed */
    uint64_t gc_full_pause_ns;    /* uint64_t * */
    /* The running process's name, for samplers (appended: size >= 244), read as
     * Process.sched_process_name does: its Smalltalk object's name field (a String or
     * nil), or "main" for the main process before it has an object. Class indices let a
     * reader check each value before following it. */
    uint32_t process_obj;         /* Value: the Smalltalk Process object, or nil */
    uint32_t process_id;          /* uint64_t: a stable small integer, 1 is the main process */
    uint32_t process_is_main;     /* bool */
    uint32_t process_name;        /* offset of the name field (a Value) in a Process object */
    uint32_t class_nil;
    uint32_t class_string;
    uint32_t class_symbol;
    uint32_t pad0;
    /* The allocation sampler (appended: size >= 256): the mean bytes between
     * object__alloc__sample probes (--alloc-sample), a profile's period. */
    uint64_t alloc_sample_bytes;  /* uint64_t * */
    /* Every live process, whatever its state, for wall-clock samplers (appended: size >=
     * 296; sqprof --wall). A waiting process's frames do not change until it runs again,
     * so its stack reads as consistently as the running one's. */
    uint64_t process_all;         /* Process **: the first live process (NULL: none) */
    uint64_t gc_running;          /* uint8_t *: nonzero while the VM collects */
    uint32_t process_all_next;    /* Process *: the next live process, NULL after the last */
    uint32_t process_state;       /* int: state_running ... state_suspended */
    uint32_t process_waiting_on;  /* Value: the Semaphore a waiting process waits on, nil on a Delay */
    uint8_t state_running;        /* the active process (the VM thread may be collecting) */
    uint8_t state_ready;          /* on a ready queue */
    uint8_t state_waiting;        /* on a Semaphore or a Delay */
    uint8_t state_io;             /* on a file descriptor */
    uint8_t state_suspended;
    uint8_t state_terminated;     /* ended, about to leave the list */
    uint8_t pad1[6];
    /* A request whose begin record req__batch holds back while its process runs
     * (appended: size >= 304; sqreq --slowest's CPU samples, probes/event_batch.h's
     * SQ_EV_REQUEST_RUN). */
    uint32_t process_request_pending; /* uint64_t: that request's id, 0: none */
    uint32_t pad2;
    /* The W3C trace context of the innermost open request of a process that has one
     * (appended: size >= 320; sqprof's pprof labels): four uint64_t, the span 0 while it
     * has none. The span is written last, and zeroed before the others change: a reader
     * on another CPU that reads the same span before and after the rest has one context. */
    uint32_t process_trace_hi;     /* the 16-byte trace id, its first 8 bytes (big-endian) */
    uint32_t process_trace_lo;     /* ... its last 8 */
    uint32_t process_trace_parent; /* the caller's span (traceparent's parent-id) */
    uint32_t process_trace_span;   /* the request's own span (traceresponse's); 0: none */
    /* The record ring (appended: size >= 328; probes/record_ring.h): where the VM keeps
     * its flushed batches while a tool is attached to squeak:ring__records. 0: a VM
     * built without probes. */
    uint64_t record_ring;          /* SqRecordRing * */
} SqDebugOffsets;

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* interp.h - activation frames, processes' interpreter state, and the interpreter's entry points. */
#ifndef SQVM_INTERP_H
#define SQVM_INTERP_H

#include "method.h"
#include "traceparent.h"

/* An activation frame. Frames live in the process's stack memory, one after
 * another; a frame's operand stack follows its locals. The layout is part of
 * the probe contract (see docs/ARCHITECTURE.md): external samplers read it. */
typedef struct Frame {
    struct Frame *caller;  /* NULL for the bottom frame */
    Method *method;
    const uint8_t *ip;     /* saved when this frame calls out or at a safe point */
    Value *sp;             /* saved: one past the top of this frame's operand stack */
    Value *args;           /* args[0] = receiver (a block for block activations), then arguments */
    Value self;
    Value ctx;             /* captured-variable context (own or the closure's), or nil */
    Value closure;         /* the block being run, or nil for a method */
    uint64_t serial;       /* identity for non-local return (frames are reused) */
    Value locals[];
} Frame;

#define FRAME_HEADER_WORDS (sizeof(Frame) / sizeof(Value))

/* Frame slots, the "slot" operands of opcodes.h: an argument or a local as a signed
 * offset (in Values) from its frame. An activation's arguments end right below its frame
 * header (args[i] is slot i - nargs - 1), its locals follow the header. */
#define FRAME_SLOT_OF_ARG(i, nargs) ((int)(i) - (int)(nargs) - 1)
#define FRAME_SLOT_OF_LOCAL(i) ((int)FRAME_HEADER_WORDS + (int)(i))
#define FRAME_SLOT(f, s) (((Value *)(f))[(int8_t)(s)])

/* The interpreter state of one (green) process: nothing of it lives in C statics. */
typedef struct Process {
    Value *stackBase, *stackLimit;
    Value *stackEnd;       /* the stack limit plus the reserve for handling an overflow (unwind.c) */
    Frame *fp;             /* current frame: stored on every call and return */
    size_t stackWords;
    /* scheduling (sched.c) */
    Value obj;             /* the Smalltalk Process object */
    Value waitingOn;       /* the Semaphore it waits on, or nil */
    uint64_t id;           /* stable small integer: 1 is the main process */
    uint64_t wakeNs;       /* when waiting on a Delay or an I/O timeout */
    uint64_t timerSeq;     /* order among equal wakeNs: first come, first woken */
    int timerSlot;         /* index in the scheduler's timer heap, or -1 */
    int ioFd;              /* the fd it waits on (state PS_IO), or -1 */
    int ioOp;              /* what it waits for: IO_OP_READ, ... (io.h) */
    uint64_t ioWaitNs;     /* when that wait began, if io__batch was enabled then (probes.c); else 0 */
    int ioKind;            /* ... the kind of ioFd then (io_fd_kind), */
    uint64_t ioWaitMethods[6]; /* ... and its innermost Methods, for its io__ready's
                                * record (SQ_EV_IO_DEPTH of them: probes.c checks) */
    struct Process *ioNext; /* the next process waiting on ioFd in the same direction */
    int priority;
    int state;
    bool isMain;
    bool started;          /* resumed at least once (process__create has fired) */
    bool ran;              /* has run: its block's block__entry has fired */
    uint32_t requestsOpen; /* requests it began and has not ended (request.c): req__batch
                            * takes its scheduler records while there are any */
    uint64_t requestPending; /* the id of its request whose begin record req__batch holds
                              * back while it runs (vm/record.c), 0: none */
    uint32_t traceDepth;   /* traced mode: frames on the stack (0: not known yet) */
    struct Frame *reserveFrame; /* handling a stack overflow that happened here (unwind.c) */
    uint64_t reserveSerial;
    struct Process *next, *prev;       /* ready queue */
    struct Process *allNext, *allPrev; /* every live process */
    /* last, so the fields samplers read in one copy stay in the first 256 bytes
     * (sqprof --wall's, SQPROF_PROC_READ) */
    TraceContext trace;    /* the trace context of its innermost open request that has one,
                            * for samplers (sqprof's pprof labels): span 0 while it has
                            * none; written by request.c, span last */
} Process;

extern Process *interp_current;
/* The primitive being run (for failure messages and the primitive__fail probe). */
extern Method *interp_prim;

void interp_init(void);
#ifdef SQVM_FUZZ
void interp_fuzz_reset(void);
#endif
/* The main process, with malloc'ed stack memory; interp_process_init sets up the stack
 * fields of one whose memory the caller provides (sched.c maps forked processes'). */
Process *interp_new_process(size_t stackWords);
void interp_process_init(Process *p, Value *stack, size_t stackWords);
/* Send selector to args[0] with nargs arguments, run to completion, and answer the result. */
Value interp_run_send(Process *p, Value selector, Value *args, uint32_t nargs);
/* Run compiled method m (not a primitive) on args[0..m->nargs] to completion. */
Value interp_run_method(Process *p, Method *m, Value *args);
/* Called by primitives: send selector to args[0] (args are on the active stack). */
PrimResult interp_send(Value *args, uint32_t nargs, Value selector, ClassInfo *lookupFrom);
/* Called by primitives: run method m (or a block's method) on args. */
PrimResult interp_activate(Method *m, Value *args, Value closure);
Method *interp_lookup(ClassInfo *c, Value selector);
/* A call probe's semaphore is set: fire method__entry / block__entry for f (the
 * active process's new top frame) and make sure returns are traced. */
void interp_trace_entry(struct Frame *f);
void interp_flush_caches(void);
/* After a program changed what a class answers to (Class>>methods at:put:). */
void interp_methods_changed(void);
/* After a kernel class loads: turns the special sends whose Integer, Double or
 * Array method is no longer the VM's primitive into plain sends. */
void interp_check_fast_paths(void);
/* A tracer sees the frames from top down to (not including) to return: they are unwound. */
void interp_trace_unwind(struct Frame *top, struct Frame *to);
void interp_print_backtrace(void);
void interp_print_backtrace_from(struct Frame *top);
/* An error the VM finds: signalled as a Smalltalk Error (unwind_signal) when the
 * interpreter runs, else reported with a backtrace, ending the process (the program
 * in the main process). interp_raise: of class className (NULL: Error), args the
 * failed primitive's (or NULL). */
NORETURN void interp_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
NORETURN void interp_raise(Value *args, const char *className, const char *msg);
size_t interp_depth(void);

#endif

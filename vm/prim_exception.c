// SPDX-License-Identifier: BSD-2-Clause
/* prim_exception.c - primitives of Exception (the handler search, return:, retry,
 * resume:, the backtrace of an unhandled exception) and the unwinder's Block1 primitive.
 *
 * The search walks the active process's frame chain from the top, looking for
 * activations of Block1>>on:do: (method flag MF_ON_DO). An activation of
 * Exception>>evaluateHandler:frame:serial: (MF_EXC_HANDLER) is a handler that is
 * running: its arguments name its on:do: activation, and that activation and every
 * frame above it are passed over, so that a signal inside a handler block reaches
 * only the handlers that were active where its on:do: was sent (ANSI's handler
 * environment). A handler's own exception (return:, retry, resume:) finds its
 * handler or signal activation the same way, by walking down from the top.
 *
 * The start of a search (Exception>>signal's first nextHandler) is where the
 * exception__signal probe fires: every signal goes through it, from Smalltalk or
 * from the VM (unwind_signal activates signal), handled or not. */
#include "unwind.h"
#include "gc.h"
#include "prims.h"
#include "probes.h"
#include "symbol.h"

#include <stdio.h>

/* The on:do: activation a running handler belongs to (NULL if its arguments are not
 * a frame reference: then everything below is passed over, which is harmless). */
static Frame *handler_home(Frame *m, uint64_t *serial)
{
    if (!is_int(m->args[2]) || !is_int(m->args[3])) return NULL;
    *serial = (uint64_t)int_val(m->args[3]);
    return value_ptr(m->args[2]);
}

/* The next active on:do: activation from `from` down, below `after` (when given).
 * Its exception selector must at least understand handles:. */
static Frame *find_handler(Frame *from, Frame *after, uint64_t afterSerial)
{
    static Value handles;
    if (!handles) handles = sym_intern_cstr("handles:");
    Frame *skip = NULL;
    uint64_t skipSerial = 0;
    bool passed = after == NULL;
    for (Frame *f = from; f && f->method; f = f->caller) {
        uint16_t flags = f->method->flags;
        if (!passed && f == after && f->serial == afterSerial) { passed = true; continue; }
        if (flags & MF_EXC_HANDLER) {
            uint64_t s = 0;
            Frame *home = handler_home(f, &s);
            /* handlers inside handlers: the outermost home decides */
            if (!skip || !home || home < skip) { skip = home ? home : (Frame *)1; skipSerial = s; }
            continue;
        }
        if (skip) {
            if (f == skip && f->serial == skipSerial) skip = NULL;
            continue;
        }
        if (passed && (flags & MF_ON_DO) && interp_lookup(class_of(f->args[1]), handles)) return f;
    }
    return NULL;
}

static bool is_exception(Value v)
{
    return is_ptr(v) && obj_format(as_obj(v)) == FMT_FIXED && class_of(v)->numFields >= EXC_NFIELDS;
}

/* The frame that signalled e: from f (an activation of its signal) down, the first
 * that is not a method of e or of its class (signal:, the class side's signal and
 * signal:, pass, outer): the sender of signal, or the method whose send failed for a
 * VM error. The bottom frame (no method) when there is none. */
static Frame *signaller_of(Value e, Frame *f)
{
    Value cls = class_of(e)->classObj;
    while (f && f->method && (f->self == e || f->self == cls)) f = f->caller;
    return f;
}

/* exception__signal, at the start of a handler search, with the probe enabled. The
 * primitive's sender is e's Exception>>signal (a program that sends the private
 * nextHandler itself is not signalling). */
static void probe_signal(Value e)
{
    Frame *f = interp_current->fp;
    if (!f || !f->method || !(f->method->flags & MF_EXC_SIGNAL) || f->self != e) return;
    f = signaller_of(e, f);
    probe_exception_signal(e, f && f->method ? f->method : NULL);
}

static PrimResult p_next_handler(Value *a, uint32_t n)
{
    (void)n;
    if (!is_exception(a[0])) return prim_fail(a, "not an Exception");
    Obj *e = as_obj(a[0]);
    Frame *after = NULL;
    uint64_t afterSerial = 0;
    if (e->slots[EXC_HANDLER_FRAME] == VM.nil) {
        if (SQ_ENABLED(EXCEPTION_SIGNAL)) probe_signal(a[0]);
    } else {
        if (!is_int(e->slots[EXC_HANDLER_FRAME]) || !is_int(e->slots[EXC_HANDLER_SERIAL])) { a[0] = VM.nil; return PRIM_OK; }
        after = value_ptr(e->slots[EXC_HANDLER_FRAME]);
        afterSerial = (uint64_t)int_val(e->slots[EXC_HANDLER_SERIAL]);
    }
    Frame *x = find_handler(interp_current->fp, after, afterSerial);
    if (!x) {
        e->slots[EXC_HANDLER_FRAME] = e->slots[EXC_HANDLER_SERIAL] = e->slots[EXC_HANDLER_BLOCK] = VM.nil;
        a[0] = VM.nil;
        return PRIM_OK;
    }
    e->slots[EXC_HANDLER_FRAME] = ptr_value(x);
    e->slots[EXC_HANDLER_SERIAL] = int_value((int64_t)x->serial);
    e->slots[EXC_HANDLER_BLOCK] = x->args[2];
    gc_write_barrier(e, x->args[2]);
    a[0] = x->args[1];
    return PRIM_OK;
}

/* The innermost activation of a method with flag whose receiver is e. */
static Frame *activation_for(Value e, uint16_t flag)
{
    for (Frame *f = interp_current->fp; f && f->method; f = f->caller)
        if ((f->method->flags & flag) && f->self == e) return f;
    return NULL;
}

/* The on:do: activation whose handler is handling e now. */
static Frame *handling_on_do(Value e)
{
    Frame *m = activation_for(e, MF_EXC_HANDLER);
    return m ? unwind_frame_at(m->caller, m->args[2], m->args[3]) : NULL;
}

static PrimResult p_return(Value *a, uint32_t n)
{
    (void)n;
    Frame *x = handling_on_do(a[0]);
    if (!x) return prim_fail(a, "return: the exception is not being handled");
    return unwind_to(x, a[1], UNWIND_RETURN);
}

static PrimResult p_retry(Value *a, uint32_t n)
{
    (void)n;
    Frame *x = handling_on_do(a[0]);
    if (!x) return prim_fail(a, "retry: the exception is not being handled");
    return unwind_to(x, VM.nil, UNWIND_RESTART);
}

static PrimResult p_retry_using(Value *a, uint32_t n)
{
    (void)n;
    Frame *x = handling_on_do(a[0]);
    if (!x) return prim_fail(a, "retryUsing: the exception is not being handled");
    if (class_index_of(a[1]) != CLS_BLOCK1) return prim_fail(a, "retryUsing: needs a block without arguments");
    return unwind_to(x, a[1], UNWIND_RESTART);
}

static PrimResult p_resume_unchecked(Value *a, uint32_t n)
{
    (void)n;
    Frame *s = activation_for(a[0], MF_EXC_SIGNAL);
    if (!s) return prim_fail(a, "resume: the exception is not signalled");
    return unwind_to(s, a[1], UNWIND_RETURN);
}

/* From the frame that signalled: below the innermost signal of the exception and the
 * frames of the exception and its class under it. */
static PrimResult p_print_backtrace(Value *a, uint32_t n)
{
    (void)n;
    Frame *f = activation_for(a[0], MF_EXC_SIGNAL);
    f = signaller_of(a[0], f ? f : interp_current->fp);
    fflush(stdout);
    interp_print_backtrace_from(f);
    return PRIM_OK;
}

/* Block1>>unwindTo:serial:value:action:, the unwinder's last step: go on unwinding. */
static PrimResult p_unwind_continue(Value *a, uint32_t n)
{
    (void)n;
    if (!unwind_is_unwinder(interp_current->fp)) return prim_fail(a, "only the unwinder sends it");
    Frame *target = unwind_frame_at(interp_current->fp, a[1], a[2]);
    if (!target || !is_int(a[4])) return prim_fail(a, "the frame is not on the stack");
    return unwind_to(target, a[3], (int)int_val(a[4]));
}

const PrimDef prims_exception[] = {
    {"Exception", "nextHandler", p_next_handler},
    {"Exception", "return:", p_return},
    {"Exception", "retry", p_retry},
    {"Exception", "retryUsing:", p_retry_using},
    {"Exception", "resumeUnchecked:", p_resume_unchecked},
    {"Exception", "printBacktrace", p_print_backtrace},
    {"Block1", "unwindTo:serial:value:action:", p_unwind_continue},
    {NULL, NULL, NULL},
};

// SPDX-License-Identifier: BSD-2-Clause
/* unwind.c - unwinding a process's stack: running ensure: and ifCurtailed: blocks on
 * every way out of their frames (exception handlers' return:/retry/resume:, ^ from a
 * block, the end of a process), the stack reserve that lets a program handle its own
 * stack overflow, and the VM's errors turned into signals of Smalltalk Errors.
 *
 * Frames live one after another in the process's stack memory (interp.h), so unwinding
 * is cutting the chain: the process's frame pointer moves down to an older frame and
 * everything above it is gone. A pending ensure: block runs *after* the cut, from its
 * own ensure: activation: cut to that frame, mark its block as running (its first
 * temporary, nil until then), and push above it an activation of the library's
 * Block1>>unwind:to:serial:value:action:, which evaluates the block and then asks
 * for the rest of the unwinding (unwind_to again, from the primitive
 * Block1>>unwindTo:serial:value:action:). So an ensure: block runs in the exception
 * environment of its ensure:, never of the frames it is unwinding, and whatever it
 * does (a ^, an error, a retry of an outer handler) simply takes over from there. */
#include "unwind.h"
#include "gc.h"
#include "interrupt.h"
#include "loader.h"
#include "sched.h"
#include "symbol.h"
#include "vm.h"

/* ensure: and ifCurtailed: keep "complete" in their first temporary. */
enum { ENSURE_COMPLETE = 0 };

/* Block1>>unwind:to:serial:value:action:, once Block1 is defined. */
static Method *unwinder;

/* ---- Recognising the library's methods ---- */

void unwind_mark_methods(ClassInfo *c)
{
    static const struct { const char *cls, *sel; uint16_t flag, nargs; } marks[] = {
        {"Block1", "on:do:", MF_ON_DO, 2},
        {"Block1", "ensure:", MF_ENSURE, 1},
        {"Block1", "ifCurtailed:", MF_ENSURE, 1},
        {"Block1", "unwind:to:serial:value:action:", 0, 5},
        {"Exception", "signal", MF_EXC_SIGNAL, 0},
        {"Exception", "evaluateHandler:frame:serial:", MF_EXC_HANDLER, 3},
    };
    if (c->isMeta) return;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        if (strcmp(c->name, marks[i].cls) != 0) continue;
        Method *m = class_local_method(c, sym_intern_cstr(marks[i].sel));
        /* a class file from the class path may define them otherwise: then they are plain methods */
        if (!m || !m->code || m->nargs != marks[i].nargs) continue;
        if ((marks[i].flag & MF_ENSURE) && m->nlocals <= ENSURE_COMPLETE) continue;
        if (marks[i].flag) m->flags |= marks[i].flag;
        else unwinder = m;
    }
}

/* ---- Frame references ---- */

Frame *unwind_frame_at(Frame *from, Value frame, Value serial)
{
    if (!is_int(frame) || !is_int(serial)) return NULL;
    Frame *t = value_ptr(frame);
    /* callers sit below their callees: once below t, it is not on the chain */
    for (Frame *f = from; f && f >= t; f = f->caller)
        if (f == t) return f->serial == (uint64_t)int_val(serial) ? f : NULL;
    return NULL;
}

/* ---- The stack reserve ----
 * A process's stack limit stops short of the end of its stack memory by a reserve.
 * Hitting the limit is a Stack overflow Error whose handling (the signal, the handler
 * search, the handler, an unhandled error's report and ensure: blocks) may use the
 * reserve: the frame where the overflow happened is recorded, and while it is still
 * on the stack, activations past the limit go on, up to the end of the reserve.
 * Once that frame is gone (unwound by the handler), the next overflow is a new one. */

size_t unwind_stack_reserve(size_t stackWords)
{
    size_t r = stackWords / 8;
    return r < 16384 ? r : 16384;
}

bool unwind_overflow_allowed(Process *p, Value *top)
{
    if (!p->reserveFrame || top > p->stackEnd) return false;
    if (unwind_frame_at(p->fp, ptr_value(p->reserveFrame), int_value((int64_t)p->reserveSerial))) return true;
    p->reserveFrame = NULL; /* that overflow was handled long ago */
    return false;
}

/* Room for an activation of m just above slot: inside the limit, or inside the reserve
 * (which the first overflow claims for itself). */
static bool room_for(Process *p, Value *slot, Method *m)
{
    Value *top = ((Frame *)(slot + 1))->locals + m->nlocals + m->maxStack;
    if (top <= p->stackLimit || unwind_overflow_allowed(p, top)) return true;
    if (p->reserveFrame || top > p->stackEnd) return false; /* the reserve is used up */
    p->reserveFrame = p->fp;
    p->reserveSerial = p->fp->serial;
    return true;
}

/* ---- Unwinding ---- */

/* The innermost ensure: or ifCurtailed: activation above target whose block has not
 * run yet, or NULL. target NULL: down to the bottom frame. */
static Frame *pending_above(Frame *top, Frame *target)
{
    for (Frame *f = top; f != target && f->method; f = f->caller)
        if ((f->method->flags & MF_ENSURE) && f->locals[ENSURE_COMPLETE] == VM.nil) return f;
    return NULL;
}

/* Frames above f are gone; a tracer sees them return (not when a process ends: then
 * the depth the call probes count is recomputed at the next event). */
static void cut_to(Process *p, Frame *f, bool traced)
{
    if (traced) interp_trace_unwind(p->fp, f);
    else p->traceDepth = 0;
    __atomic_store_n(&p->fp, f, __ATOMIC_RELEASE);
}

/* f, now the top frame, runs its block from an activation of the unwinder above it;
 * the unwinder carries on to target afterwards. */
static void run_ensure_block(Frame *f, Frame *target, Value value, int action)
{
    f->locals[ENSURE_COMPLETE] = VM.trueObj;
    Value *a = f->sp;
    a[0] = f->args[0];
    a[1] = f->args[1];
    a[2] = ptr_value(target);
    a[3] = int_value((int64_t)target->serial);
    a[4] = value;
    a[5] = int_value(action);
    interp_activate(unwinder, a, VM.nil);
}

/* target returns value to its caller, as do_return would. When the caller is the
 * bottom frame, target's next instruction becomes a return of its stack top, so that
 * the interpreter's own return path ends the run or the process. */
static void return_from(Process *p, Frame *target, Value value)
{
    Frame *caller = target->caller;
    if (caller->method) {
        cut_to(p, caller, true);
        target->args[0] = value;
        caller->sp = target->args + 1;
        return;
    }
    static const uint8_t returnTop[] = {OP_RETURN_LOCAL};
    cut_to(p, target, true);
    *target->sp++ = value;
    target->ip = returnTop;
}

/* target starts over from its first instruction (retry); a non-nil receiver
 * replaces its own (retryUsing:). */
static void restart_at(Process *p, Frame *target, Value receiver)
{
    cut_to(p, target, true);
    if (receiver != VM.nil) target->args[0] = target->self = receiver;
    Method *m = target->method;
    for (uint32_t i = 0; i < m->nlocals; i++) target->locals[i] = VM.nil;
    target->ip = m->code;
    target->sp = target->locals + m->nlocals;
}

PrimResult unwind_to(Frame *target, Value value, int action)
{
    Process *p = interp_current;
    Frame *bottom = (Frame *)p->stackBase;
    Frame *f = pending_above(p->fp, action == UNWIND_TERMINATE ? NULL : target);
    if (f && unwinder) {
        cut_to(p, f, action != UNWIND_TERMINATE);
        run_ensure_block(f, action == UNWIND_TERMINATE ? bottom : target, value, action);
        return PRIM_ACTIVATED;
    }
    switch (action) {
    case UNWIND_RESTART: restart_at(p, target, value); break;
    case UNWIND_TERMINATE:
        if (p->isMain) vm_exit(is_int(value) ? (int)int_val(value) : 1);
        sched_process_finished();
        break;
    default: return_from(p, target, value); break;
    }
    return PRIM_ACTIVATED;
}

bool unwind_is_unwinder(const Frame *f) { return unwinder && f && f->method == unwinder; }

void unwind_nonlocal_return(Frame *home, Value result)
{
    unwind_to(home, result, UNWIND_RETURN);
}

/* ---- Ending a process ---- */

bool unwind_pending(Process *p) { return unwinder && p->fp && pending_above(p->fp, NULL) != NULL; }

PrimResult unwind_terminate_active(int status)
{
    return unwind_to(NULL, int_value(status), UNWIND_TERMINATE);
}

void unwind_terminate_other(Process *p)
{
    if (!unwind_pending(p)) return;
    Process *terminator = interp_current;
    interp_current = p;
    unwind_to(NULL, int_value(0), UNWIND_TERMINATE);
    interp_current = terminator;
    /* above the terminator, so that terminate answers once they have run */
    if (p->priority <= terminator->priority)
        p->priority = terminator->priority < PRIORITY_MAX ? terminator->priority + 1 : PRIORITY_MAX;
}

/* ---- The VM's errors as signals ---- */

static bool is_exception_class(ClassInfo *c)
{
    for (; c; c = c->super)
        if (!strcmp(c->name, "Exception")) return c->numFields >= EXC_NFIELDS;
    return false;
}

bool unwind_signal(Value *args, const char *className, const char *msg)
{
#ifdef SQVM_FUZZ
    interrupt_fuzz_spend(50); /* the message, the lookups, the signal: a VM error is work */
#endif
    Process *p = interp_current;
    if (!p || !p->fp || !p->fp->method) return false;
    ClassInfo *c = loader_load_class(className ? className : "Error");
    if (!c || !is_exception_class(c)) return false;
    Method *signal = class_lookup(c, sym_intern_cstr("signal"));
    if (!signal || !signal->code) return false;
    Frame *f = p->fp;
    /* A failed primitive's receiver slot, when args is one, else the top of the stack. */
    Value *slot = args && args >= f->locals + f->method->nlocals && args < f->sp ? args : f->sp;
    if (!room_for(p, slot, signal)) return false;
    Value text = str_from_cstr(msg);
    Value e = obj_instantiate(c, 0);
    as_obj(e)->slots[EXC_MESSAGE_TEXT] = text;
    gc_write_barrier(as_obj(e), text);
    slot[0] = e;
    f->sp = slot + 1;
    interp_activate(signal, slot, VM.nil);
    return true;
}

// SPDX-License-Identifier: BSD-2-Clause
/* unwind.h - exceptions and unwinding: handlers found on the frame chain, ensure:
 * blocks run on every way out of a frame, and the VM's own errors signalled as
 * Smalltalk Errors. docs/ARCHITECTURE.md, "Exceptions and unwinding", tells the story. */
#ifndef SQVM_UNWIND_H
#define SQVM_UNWIND_H

#include "interp.h"

/* Fields of the core library's Exception (vm/lib/Exception.som) that the VM uses:
 * the text, and the on:do: activation the handler search stands at (a frame
 * reference: the Frame * tagged as a small integer and its serial) with its
 * handler block. */
enum { EXC_MESSAGE_TEXT, EXC_HANDLER_FRAME, EXC_HANDLER_SERIAL, EXC_HANDLER_BLOCK, EXC_NFIELDS };

/* What happens at the frame an unwinding reaches: it answers the value, it starts
 * over (retry; the value, unless nil, is its new receiver), or, at the bottom
 * frame, the process ends (the value is the main process's exit status). */
enum { UNWIND_RETURN, UNWIND_RESTART, UNWIND_TERMINATE };

/* After a class is defined (loader.c): sets the method flags (method.h) of the
 * library methods the VM must recognise on the stack: Block1>>on:do:, ensure:,
 * ifCurtailed:, Exception>>signal, Exception>>evaluateHandler:frame:serial:. */
void unwind_mark_methods(ClassInfo *c);

/* Stack words kept back beyond a process's stack limit, for handling its stack
 * overflow (interp_process_init lowers the limit by this much). */
size_t unwind_stack_reserve(size_t stackWords);
/* An activation would end at top, past p's stack limit: answers true when p is
 * handling a stack overflow and top is inside the reserve, so it may go on. */
bool unwind_overflow_allowed(Process *p, Value *top);

/* Turns an error the VM found into a signal of an instance of className (an
 * Exception subclass; "Error" when NULL) with msg as its messageText: an activation
 * of Exception>>signal on top of the active process's stack, which the interpreter
 * then runs. args, when it is a failed primitive's receiver slot, is where the
 * signal's frame goes, so that a resumed exception answers the primitive's value.
 * Answers false when it cannot (no Exception class, no room left on the stack). */
bool unwind_signal(Value *args, const char *className, const char *msg);

/* A ^ from the active process's top frame (a block) to home crosses an ensure:
 * or ifCurtailed: activation: runs their blocks, then returns result from home. */
void unwind_nonlocal_return(Frame *home, Value result);

/* Unwinds the active process's stack down to target (a live frame below the top)
 * running the pending ensure: and ifCurtailed: blocks of the frames above it,
 * innermost first, then does action (UNWIND_*). Answers PRIM_ACTIVATED: the
 * interpreter continues in p->fp. */
PrimResult unwind_to(Frame *target, Value value, int action);

/* Is f an activation of Block1>>unwind:to:serial:value:action:? */
bool unwind_is_unwinder(const Frame *f);

/* Process termination (sched.c). Does p have ensure: blocks still to run? */
bool unwind_pending(Process *p);
/* Ends the active process after running its pending ensure: blocks (status: the
 * main process's exit status). */
PrimResult unwind_terminate_active(int status);
/* Sets up p (not the active process, not running) to run its pending ensure:
 * blocks and then end, when it next runs, and raises its priority above the active
 * process's (the scheduler makes it ready, and it runs at once). */
void unwind_terminate_other(Process *p);

/* A frame reference in Smalltalk: the frame (tagged) and its serial. Answers the
 * frame if it is still on the active process's stack at or below from, else NULL. */
Frame *unwind_frame_at(Frame *from, Value frame, Value serial);

#endif

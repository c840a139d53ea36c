// SPDX-License-Identifier: BSD-2-Clause
/* interrupt.h - ending a running program from outside it: Ctrl-C (SIGINT) on the
 * command line, the time budget in the fuzz targets. */
#ifndef SQVM_INTERRUPT_H
#define SQVM_INTERRUPT_H

#include "common.h"

#include <signal.h>

/* Why the program is asked to end (interrupt_pending), 0 while nobody asks. */
enum { INTERRUPT_SIGINT = 1, INTERRUPT_BUDGET = 2 };

/* Set by interrupt_request (a signal handler, a timer): the interpreter sees it at its
 * next safe point (sched_attention is set with it), the scheduler after a wait, and the
 * LargeInteger loops while they run (bigint.c's big_stop points here). */
extern volatile sig_atomic_t interrupt_pending;

/* The command line's SIGINT handler: the first Ctrl-C ends the program at its next
 * safe point with "ERROR: interrupted" and the backtrace (status 130); a second one
 * while the first is being handled kills the VM at once. A SIGINT ignored when the
 * VM started (a shell's background job) stays ignored. The fuzz targets leave SIGINT
 * to libFuzzer. */
void interrupt_install(void);

/* Async-signal-safe: asks the running program to end (why: INTERRUPT_*). */
void interrupt_request(int why);

/* Ends the program as asked: for SIGINT the error and backtrace, naming the primitive
 * in which it stopped (a primitive such as "Integer>>*"; NULL: between two), then exit status 130; for the budget vm_exit(3). */
NORETURN void interrupt_raise(const char *primitive);

/* At a safe point or after a wait: end the program if it was asked to. */
static inline void interrupt_check(void)
{
    if (UNLIKELY(interrupt_pending)) interrupt_raise(NULL);
}

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* interrupt.h - ending a running program from outside it: Ctrl-C (SIGINT) on the
 * command line, the budget of each input in the fuzz targets. */
#ifndef SQVM_INTERRUPT_H
#define SQVM_INTERRUPT_H

#include "vm.h"

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

/* Ends the program as asked: for SIGINT the error and the backtrace, naming the
 * primitive it stopped inside ("Integer>>*"; NULL: it stopped between two), then exit
 * status 130; for the fuzz budget vm_exit(3). */
NORETURN void interrupt_raise(const char *primitive);

#ifdef SQVM_FUZZ
/* Fuzz builds: a budget counted in safe points and in the LargeInteger loops' polls
 * (bigint.c's big_fuzz_poll), 0: none, so that a program ends at the same place on
 * every machine and a campaign with a fixed seed sees the same coverage; a wall-clock
 * budget stays for what neither counts. While it is set, every safe point polls
 * (sched_attention stays set). */
extern uint64_t interrupt_fuzz_fuel;
void interrupt_fuzz_spend(uint64_t units);  /* at 0 the budget is spent */
void interrupt_fuzz_spend_work(size_t digit_operations); /* bigint.c's big_fuzz_poll */
#endif

/* At a safe point or after a wait: end the program if it was asked to. */
static inline void interrupt_check(void)
{
#ifdef SQVM_FUZZ
    if (interrupt_fuzz_fuel) {
        interrupt_fuzz_spend(1);
        sched_attention = 1;
    }
#endif
    if (UNLIKELY(interrupt_pending)) interrupt_raise(NULL);
}

#endif

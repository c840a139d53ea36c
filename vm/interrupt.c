// SPDX-License-Identifier: BSD-2-Clause
/* interrupt.c - Ctrl-C and the fuzz budget: a flag a signal handler may set, seen at
 * the interpreter's safe points and inside long primitives (see interrupt.h). */
#include "interrupt.h"
#include "interp.h"
#include "vm.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile sig_atomic_t interrupt_pending;
#ifdef SQVM_FUZZ
uint64_t interrupt_fuzz_fuel;

void interrupt_fuzz_spend(uint64_t units)
{
    vm_fuzz_clock_ns += units * 1000; /* a unit of work is a microsecond of the fuzz clock */
    if (!interrupt_fuzz_fuel) return;
    if (units >= interrupt_fuzz_fuel) {
        interrupt_fuzz_fuel = 0;
        interrupt_pending = INTERRUPT_BUDGET;
        return;
    }
    interrupt_fuzz_fuel -= units;
}

/* A safe point costs about what 4 digit operations do (under ASan and coverage, as fuzzed). */
void interrupt_fuzz_spend_work(size_t digit_operations) { interrupt_fuzz_spend(1 + digit_operations / 4); }
#endif

void interrupt_request(int why)
{
    interrupt_pending = why;
    sched_attention = 1;
}

/* A second Ctrl-C before the first one was acted on (the program is stuck where it
 * does not poll, or is printing its backtrace): die of SIGINT as an unhandled one
 * would, so the shell sees the signal. */
static void on_sigint(int sig)
{
    if (interrupt_pending) {
        static const char msg[] = "sqvm: interrupted again: exiting\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    interrupt_request(INTERRUPT_SIGINT);
}

void interrupt_install(void)
{
    struct sigaction sa;
    /* Ignored when we started (a shell's background job, nohup-style wrappers): the
     * one who started us wants it ignored, so it stays so. */
    if (sigaction(SIGINT, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    /* Reads and writes restart (no output is lost to EINTR); sleeps and waits never
     * restart, so a program waiting on a Delay sees the interrupt at once. */
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
}

void interrupt_raise(const char *primitive)
{
    if (interrupt_pending == INTERRUPT_BUDGET) vm_exit(3);
    fflush(stdout);
    if (primitive) fprintf(stderr, "ERROR: interrupted (SIGINT) in %s\n", primitive);
    else fputs("ERROR: interrupted (SIGINT)\n", stderr);
    interp_print_backtrace();
    vm_exit(130);
}

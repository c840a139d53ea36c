// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_eval.c - libFuzzer target: statements evaluated as sqvm -e evaluates them, in one
 * VM for the whole run. Each input gets a fresh main process and bounds, so that an
 * input that loops, sleeps or allocates forever ends cleanly: 100,000 units of work
 * (safe points, LargeInteger digits, large objects, VM errors: the same on every
 * machine, and Delays run on the fuzz clock that work moves, so that a fixed seed
 * gives the same campaign); behind them 1 s of CPU time and 10 s of wall-clock time
 * (timers that make an interrupt request, interrupt.h: the program ends at its next
 * safe point, scheduler wait, or inside a LargeInteger loop); and the VM's 64 MiB heap
 * limit. Smalltalk errors, deadlocks, `system exit:` and an exhausted heap end the
 * program through vm_exit, which returns here in fuzz builds. A crash, a sanitizer
 * report, vm_fatal (an internal error) or a run that the budgets do not end (the
 * watchdog: 5 s of CPU time) is a finding. */
#include "ast.h"
#include "compiler.h"
#include "fuzz_vm.h"
#include "fuzz_watchdog.h"
#include "interp.h"
#include "interrupt.h"
#include "object.h"
#include "sched.h"
#include "symbol.h"
#include "vm.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Budget units per input (a safe point is one; LargeInteger digits, the bytes of a large
 * object and a VM error count too): a program ends here, at the same place on every
 * machine, before the time budgets behind it (20 to 40 ms for a plain loop on this
 * project's 2-core build machine, under ASan; at most about 700 ms seen). */
#define FUEL 100000
/* Behind it, for work the units do not count: 1 s of the
 * fuzzing thread's CPU time, which a loaded machine does not shorten, and 10 s of
 * wall-clock time for a program blocked in a system call. Delays do not sleep: they
 * run on the fuzz clock (vm.c), which work moves. */
#define CPU_MS 1000
#define WALL_MS 10000

static timer_t cpu_budget, wall_budget;

/* Not instrumented, and calls nothing that is: a signal lands in whatever input is
 * running, and code it ran would count as that input's coverage. */
__attribute__((no_sanitize("coverage"))) static void on_budget(int sig)
{
    (void)sig;
    interrupt_pending = INTERRUPT_BUDGET; /* interrupt_request, inlined */
    sched_attention = 1;
}

static void make_timer(clockid_t clock, timer_t *t)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGUSR2;
    if (timer_create(clock, &sev, t)) abort();
}

static void set_timer(timer_t t, long ms)
{
    struct itimerspec it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000000}};
    timer_settime(t, 0, &it, NULL);
}

/* Both time budgets on, or off. */
static void arm_budget(bool on)
{
    static int made;
    if (!made) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_budget;
        sigaction(SIGUSR2, &sa, NULL);
        make_timer(CLOCK_THREAD_CPUTIME_ID, &cpu_budget);
        make_timer(CLOCK_MONOTONIC, &wall_budget);
        made = 1;
    }
    set_timer(cpu_budget, on ? CPU_MS : 0);
    set_timer(wall_budget, on ? WALL_MS : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_vm_boot();
    if (size > 4096) return 0;    /* keep each run short: the budget is per input */
    /* The last input's budget may have expired after it ended: compiling this one
     * (a huge literal polls it) must not see that. */
    interrupt_pending = 0;
    sched_attention = 0;
    char *text = fuzz_cstring(data, size);
    void *arena;
    MethodDef *md = parse_expression_method(text, strlen(text), &arena);
    if (!md) { free(text); return 0; }
    Method *m = compile_method(md, class_at(CLS_NIL), "-e");
    ast_free(arena);
    if (!m) { free(text); return 0; }

    /* A fresh main process on the same stack; the previous program's processes and
     * Delays are forgotten. */
    static Process *p;
    static Value *stack;
    const size_t words = (256u << 10) / sizeof(Value);
    if (!p) {
        p = vm_xcalloc(1, sizeof(Process));
        stack = vm_xmalloc(words * sizeof(Value));
    }
    memset(p, 0, sizeof *p);
    interp_process_init(p, stack, words);
    interp_current = p;
    sched_fuzz_reset(p);
    interp_fuzz_reset();

    jmp_buf here;
    if (!setjmp(here)) {
        vm_fuzz_exit = &here;
        fuzz_watchdog_arm(5000);
        interrupt_fuzz_fuel = FUEL;
        sched_attention = 1;
        arm_budget(true);
        Value args[1] = {VM.nil};
        Value result = interp_run_method(p, m, args);
        args[0] = result;
        interp_run_send(p, sym_intern_cstr("asString"), args, 0);
    }
    arm_budget(false);
    interrupt_fuzz_fuel = 0;
    fuzz_watchdog_disarm();
    vm_fuzz_exit = NULL;
    free(text);
    return 0;
}

// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_watchdog.c - ends an input that hangs so that libFuzzer keeps it (see the header). */
#include "fuzz_watchdog.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static pthread_t fuzzing;
static clockid_t fuzzing_cpu;           /* the fuzzing thread's CPU-time clock */
static _Atomic uint64_t started_cpu, started_wall; /* started_wall 0: no input running */
static _Atomic unsigned limit;

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A hang is CPU time: on a shared machine a fuzzer that waits for a core is not hung.
 * Wall time backs it at 10 times the limit, for an input that blocks. */
static void *watch(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec tick = {0, 50 * 1000000};
        nanosleep(&tick, NULL);
        uint64_t wall = atomic_load(&started_wall), cpu = atomic_load(&started_cpu);
        uint64_t ms = atomic_load(&limit);
        if (!wall) continue;
        bool spun = now_ns(fuzzing_cpu) - cpu > ms * 1000000ull;
        bool stuck = now_ns(CLOCK_MONOTONIC) - wall > ms * 10000000ull;
        if ((spun || stuck) && atomic_load(&started_wall) == wall) {
            fprintf(stderr, "==fuzz watchdog: one input has run for more than %llu ms of %s: a hang\n",
                    (unsigned long long)(spun ? ms : ms * 10), spun ? "CPU time" : "wall-clock time");
            pthread_kill(fuzzing, SIGABRT);
            return NULL;
        }
    }
}

void fuzz_watchdog_arm(unsigned limit_ms)
{
    static int started;
    if (!started) {
        started = 1;
        fuzzing = pthread_self();
        if (pthread_getcpuclockid(fuzzing, &fuzzing_cpu)) fuzzing_cpu = CLOCK_PROCESS_CPUTIME_ID;
        /* The thread blocks every signal, so the target's timers reach the fuzzing thread */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t t;
        if (pthread_create(&t, NULL, watch, NULL) == 0) pthread_detach(t);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    atomic_store(&limit, limit_ms);
    atomic_store(&started_cpu, now_ns(fuzzing_cpu));
    atomic_store(&started_wall, now_ns(CLOCK_MONOTONIC));
}

void fuzz_watchdog_disarm(void) { atomic_store(&started_wall, 0); }

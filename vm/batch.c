// SPDX-License-Identifier: BSD-2-Clause
/* batch.c - the event batch buffer and its flush, the batch probes' sites (compiled, as
 * probes.c, without a red zone: Makefile). */
#include "batch.h"
#include "probes.h"
#include "vm.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if SQVM_PROBES

SqBatch sq_batch;

void batch_flush(void)
{
    uint32_t n = sq_batch.n;
    sq_batch.n = 0;
    if (!n) return;
    /* in registers: USDT arguments cannot be RIP-relative for libbpf */
    uintptr_t rec = (uintptr_t)sq_batch.rec;
    __asm__ volatile("" : "+r"(rec), "+r"(n));
    if (SQ_ENABLED(ALLOC_BATCH)) SQUEAK_ALLOC_BATCH(rec, n);
    if (SQ_ENABLED(CALL_BATCH)) SQUEAK_CALL_BATCH(rec, n);
    if (SQ_ENABLED(SCHED_BATCH)) SQUEAK_SCHED_BATCH(rec, n);
    if (SQ_ENABLED(REQ_BATCH)) SQUEAK_REQ_BATCH(rec, n);
    if (SQ_ENABLED(IO_BATCH)) SQUEAK_IO_BATCH(rec, n);
}

/* ---- The ticker ----
 * A VM that stops producing events while it computes would keep a partial batch to
 * itself until it next sleeps. While a batch probe is enabled (or records wait) a
 * one-shot timer signals the VM's own thread when the oldest record it saw would be
 * SQ_BATCH_AGE_NS old and, if it is still there, the handler asks the VM to flush at
 * its next safe point (the scheduler's attention flag, as the event loop's watcher
 * does: sched_poll calls batch_flush_pending). A VM that flushes its own batches (full,
 * or aged at its next record) needs no help: each time the handler finds a batch begun
 * since it last looked, or none at all, it waits twice as long, from four ages up to
 * 64 (128 ms), so that on a busy or an idle VM it runs about 8 times a second. Each
 * signal costs the VM an interrupt and a signal frame: at 1,000 a second (half an age)
 * they took 2% of a /hello server's throughput under sqsched in a VM guest. A VM that
 * stops right after a long wait keeps its records at most about 65 ages.
 *
 * A timer signal, not a thread: a process that has started a second thread makes glibc
 * take its multi-threaded path for the rest of its life (every cancellable system call
 * enables and disables asynchronous cancellation: 0.6% of a /hello request's samples).
 * The handler is installed with SA_RESTART, and the VM's blocking calls that a signal
 * interrupts anyway (epoll_wait, nanosleep) already go round again. The records are the
 * VM thread's; the handler, on that thread, only reads the count and the time. */
#define TICKER_SIGNAL (SIGRTMIN + 5) /* glibc keeps the first few for itself */

static timer_t ticker;
static int tickerMade;                 /* 1: ticker exists; -1: it could not be made */
static volatile sig_atomic_t tickerOn; /* 1 while armed; the handler clears it as it stops */
static uint64_t tickerSeenFirst;       /* the batch the handler saw last (0: none) */
static volatile uint64_t tickerLastNs; /* when it was last armed */
static uint64_t tickerBackoff;         /* the wait while the VM flushes by itself */

#define TICKER_MIN_WAIT (4 * SQ_BATCH_AGE_NS)
#define TICKER_MAX_WAIT (64 * SQ_BATCH_AGE_NS)

static void ticker_arm(uint64_t ns)
{
    tickerLastNs = batch_clock();
    struct itimerspec it = {{0, 0}, {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)}};
    timer_settime(ticker, 0, &it, NULL);
}

static void ticker_tick(int sig)
{
    (void)sig;
    int saved = errno;
    uint32_t n = sq_batch.n;
    if (!n && !SQ_ENABLED(ALLOC_BATCH) && !SQ_ENABLED(CALL_BATCH) && !sq_sched_batches() && !SQ_ENABLED(IO_BATCH)) {
        tickerOn = 0; /* the tools are gone; the next batch re-arms it */
        tickerSeenFirst = 0;
        errno = saved;
        return;
    }
    uint64_t first = sq_batch.firstNs, age = batch_clock() - first, next;
    if (!n || (tickerSeenFirst && first != tickerSeenFirst && age < SQ_BATCH_AGE_NS)) {
        /* nothing to flush, or it flushed a batch by itself since: wait longer */
        tickerBackoff = tickerBackoff ? 2 * tickerBackoff : TICKER_MIN_WAIT;
        if (tickerBackoff > TICKER_MAX_WAIT) tickerBackoff = TICKER_MAX_WAIT;
        next = tickerBackoff;
        if (!n) tickerSeenFirst = 0;
    } else if (age >= SQ_BATCH_AGE_NS) {
        tickerBackoff = 0;
        next = SQ_BATCH_AGE_NS;
        __atomic_store_n(&sched_attention, 1, __ATOMIC_RELEASE);
    } else { /* a batch it saw begin, or the first since an empty buffer: when it ages */
        tickerBackoff = 0;
        next = SQ_BATCH_AGE_NS - age + SQ_BATCH_AGE_NS / 16;
    }
    if (n) tickerSeenFirst = first;
    ticker_arm(next);
    errno = saved;
}

static void start_ticker(void)
{
    if (!tickerMade) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = ticker_tick;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID; /* the VM's thread, never a helper */
        ev.sigev_signo = TICKER_SIGNAL;
        ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
        tickerMade = sigaction(TICKER_SIGNAL, &sa, NULL) == 0 && timer_create(CLOCK_MONOTONIC, &ev, &ticker) == 0 ? 1 : -1;
    }
    if (tickerMade < 0) return; /* batches still flush when full, aged, idle or at exit */
    tickerOn = 1;
    ticker_arm(SQ_BATCH_AGE_NS);
}

/* batch_reserve's slow path: the first record of a batch (the ticker may need
 * arming), or a full or aged batch to flush first. */
__attribute__((noinline, cold)) uint32_t batch_make_room(uint64_t now, uint32_t n)
{
    if (n) {
        batch_flush();
        n = 0;
    }
    sq_batch.firstNs = now;
    /* not armed, or its signal lost (a tracer that stopped the VM with ptrace may
     * swallow a signal that arrived meanwhile): its last arming was at most 64 ages */
    if (UNLIKELY(!tickerOn || now - tickerLastNs > 2 * TICKER_MAX_WAIT)) start_ticker();
    return n;
}

#endif

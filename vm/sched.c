// SPDX-License-Identifier: BSD-2-Clause
/* sched.c - green processes on one OS thread: ready queues per priority, Semaphores, a
 * timer heap for Delays and I/O timeouts, waits on file descriptors, the idle wait in
 * the event loop (io.c), deadlock detection, and the process-activation probe site.
 * Scheduling follows Squeak: the highest-priority runnable process runs; a process
 * readied at a higher priority preempts the active one at once (the preempted one
 * keeps its turn at the front of its queue); equal priorities take turns only on
 * yield, wait or suspend. The VM owns no process-wide timer or signal: when no process
 * can run it sleeps in epoll_wait until I/O or the loop's alarm (a timerfd set to the
 * earliest timer), and a computing process is interrupted only through io_watch, while
 * some waiter outranks it. */
#include "sched.h"
#include "gc.h"
#include "interrupt.h"
#include "io.h"
#include "loader.h"
#include "prims.h"
#include "probes.h"
#include "request.h"
#include "symbol.h"
#include "unwind.h"
#include "vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define NUM_PRIORITIES (PRIORITY_MAX + 1)
/* Every this many picks the scheduler looks for I/O and expired timers even when
 * processes are ready, so that processes that keep passing the CPU among themselves
 * do not starve the waiters of their own priority. */
#define CHECK_EVERY_PICKS 64


/* How many processes of each priority are in some state, and a bitmap of the
 * priorities that have any. */
typedef struct PriorityCounts {
    uint32_t count[NUM_PRIORITIES];
    uint64_t bits[2];
} PriorityCounts;

static struct {
    Process *readyHead[NUM_PRIORITIES], *readyTail[NUM_PRIORITIES];
    uint64_t readyBits[2];         /* bit p set: queue p non-empty */
    Process **timers;              /* min-heap on (wakeNs, timerSeq) */
    int numTimers, capTimers;
    uint64_t timerSeq;
    /* What can wake without the running process doing anything (io_watch): the
     * processes in the timer heap, and those waiting on a descriptor. */
    PriorityCounts timerWaiters, ioWaiters;
    int picksToCheck;
    uint64_t nextId;
    size_t forkStackWords;
    ClassInfo *processClass;
    Value *spareStacks[64];        /* stacks of ended processes, reused (mmap is slow) */
    int numSpare;
} sched_state;

/* ---- Bookkeeping ---- */

/* Every live process, linked through allNext: global so that sqvm_debug_offsets can name
 * it for out-of-process samplers (sqprof --wall). */
Process *sched_all;

static void link_all(Process *p)
{
    p->allPrev = NULL;
    p->allNext = sched_all;
    if (sched_all) sched_all->allPrev = p;
    sched_all = p;
}

static void unlink_all(Process *p)
{
    if (p->allPrev) p->allPrev->allNext = p->allNext; else sched_all = p->allNext;
    if (p->allNext) p->allNext->allPrev = p->allPrev;
}

void sched_scan_roots(void (*visit)(Value *))
{
    for (Process *p = sched_all; p; p = p->allNext) {
        visit(&p->obj);
        visit(&p->waitingOn);
        for (Frame *f = p->fp; f; f = f->caller) {
            visit(&f->self);
            visit(&f->ctx);
            visit(&f->closure);
            for (Value *v = f->locals; v < f->sp; v++) visit(v);
        }
    }
}

Process *sched_all_processes(void) { return sched_all; }

const char *sched_process_name(Process *p)
{
    if (p->obj == VM.nil || p->obj == 0) return p->isMain ? "main" : "";
    Value n = as_obj(p->obj)->slots[PROC_NAME];
    return is_string_like(n) ? str_bytes(n) : "";
}

Process *sched_process_of(Value procObj)
{
    if (!is_ptr(procObj) || obj_class_index(as_obj(procObj)) != sched_state.processClass->index) return NULL;
    Value h = as_obj(procObj)->slots[PROC_HANDLE];
    return h == VM.nil || !is_int(h) ? NULL : value_ptr(h);
}

static int highest_bit(const uint64_t bits[2])
{
    if (bits[1]) return 64 + 63 - __builtin_clzll(bits[1]);
    if (bits[0]) return 63 - __builtin_clzll(bits[0]);
    return -1;
}

/* ---- Ready queues ---- */

static void make_ready(Process *p, bool front, int reason)
{
    int pr = p->priority;
    if (SQ_SCHED_ENABLED(PROCESS_READY)) probe_process_ready(p, reason);
    p->state = PS_READY;
    if (front) {
        p->prev = NULL;
        p->next = sched_state.readyHead[pr];
        if (p->next) p->next->prev = p; else sched_state.readyTail[pr] = p;
        sched_state.readyHead[pr] = p;
    } else {
        p->next = NULL;
        p->prev = sched_state.readyTail[pr];
        if (p->prev) p->prev->next = p; else sched_state.readyHead[pr] = p;
        sched_state.readyTail[pr] = p;
    }
    sched_state.readyBits[pr >> 6] |= 1ull << (pr & 63);
}

static void unready(Process *p)
{
    int pr = p->priority;
    if (p->prev) p->prev->next = p->next; else sched_state.readyHead[pr] = p->next;
    if (p->next) p->next->prev = p->prev; else sched_state.readyTail[pr] = p->prev;
    if (!sched_state.readyHead[pr]) sched_state.readyBits[pr >> 6] &= ~(1ull << (pr & 63));
    p->next = p->prev = NULL;
}

static int highest_ready(void) { return highest_bit(sched_state.readyBits); }

static void counts_add(PriorityCounts *c, int pr)
{
    if (c->count[pr]++ == 0) c->bits[pr >> 6] |= 1ull << (pr & 63);
}

static void counts_remove(PriorityCounts *c, int pr)
{
    if (--c->count[pr] == 0) c->bits[pr >> 6] &= ~(1ull << (pr & 63));
}

/* ---- The timer heap (Delays, I/O timeouts) ---- */

static bool timer_before(const Process *a, const Process *b)
{
    return a->wakeNs < b->wakeNs || (a->wakeNs == b->wakeNs && a->timerSeq < b->timerSeq);
}

static void timer_place(Process *p, int i)
{
    sched_state.timers[i] = p;
    p->timerSlot = i;
}

static void timer_sift_up(int i)
{
    Process *p = sched_state.timers[i];
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!timer_before(p, sched_state.timers[parent])) break;
        timer_place(sched_state.timers[parent], i);
        i = parent;
    }
    timer_place(p, i);
}

static void timer_sift_down(int i)
{
    Process *p = sched_state.timers[i];
    int n = sched_state.numTimers;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && timer_before(sched_state.timers[c + 1], sched_state.timers[c])) c++;
        if (!timer_before(sched_state.timers[c], p)) break;
        timer_place(sched_state.timers[c], i);
        i = c;
    }
    timer_place(p, i);
}

static void timer_add(Process *p, uint64_t wakeNs)
{
    if (sched_state.numTimers == sched_state.capTimers) {
        sched_state.capTimers = sched_state.capTimers ? 2 * sched_state.capTimers : 64;
        sched_state.timers = vm_xrealloc(sched_state.timers, (size_t)sched_state.capTimers * sizeof(Process *));
    }
    p->wakeNs = wakeNs;
    p->timerSeq = ++sched_state.timerSeq;
    counts_add(&sched_state.timerWaiters, p->priority);
    timer_place(p, sched_state.numTimers++);
    timer_sift_up(p->timerSlot);
}

static void timer_remove(Process *p)
{
    int i = p->timerSlot;
    if (i < 0) return;
    counts_remove(&sched_state.timerWaiters, p->priority);
    Process *last = sched_state.timers[--sched_state.numTimers];
    if (i < sched_state.numTimers) {
        timer_place(last, i);
        timer_sift_down(i);
        timer_sift_up(last->timerSlot);
    }
    p->timerSlot = -1;
}

static uint64_t earliest_timer(void) { return sched_state.numTimers ? sched_state.timers[0]->wakeNs : 0; }

/* The answer of the primitive that p is suspended in (suspend_active_at). */
static void set_wait_result(Process *p, Value v) { p->fp->sp[-1] = v; }

static void fire_io_ready(Process *p, int timedOut)
{
    if (SQ_IO_WAIT_ENABLED(IO_READY)) probe_io_ready(p, timedOut);
}

/* Readies every process whose timer has passed, in wake order. */
static void expire_timers(uint64_t now)
{
    while (sched_state.numTimers && sched_state.timers[0]->wakeNs <= now) {
        Process *p = sched_state.timers[0];
        timer_remove(p);
        if (p->state == PS_IO) {
            fire_io_ready(p, 1);
            io_cancel(p);
            p->ioFd = -1;
            set_wait_result(p, VM.falseObj);
            counts_remove(&sched_state.ioWaiters, p->priority);
            make_ready(p, false, READY_IO);
        } else {
            make_ready(p, false, READY_DELAY);
        }
    }
}

void sched_io_wake(Process *p)
{
    timer_remove(p);
    fire_io_ready(p, 0);
    p->ioFd = -1;
    set_wait_result(p, VM.trueObj);
    counts_remove(&sched_state.ioWaiters, p->priority);
    make_ready(p, false, READY_IO);
}

/* ---- Switching ---- */

/* The watcher is needed only while a process that wakes by itself outranks the one
 * that runs: only then can its wake-up preempt. A timer outranks it: the watcher
 * watches the alarm; a wait on a descriptor: every event. */
static void update_watch(void)
{
    int top = interp_current->priority;
#ifdef SQVM_FUZZ
    /* no wall-clock alarm: a timer is seen at the fuzz clock's time (vm.c), when the
     * scheduler next picks a process */
    bool timers = false;
#else
    bool timers = highest_bit(sched_state.timerWaiters.bits) > top;
#endif
    io_watch(highest_bit(sched_state.ioWaiters.bits) > top ? WATCH_EVENTS : timers ? WATCH_ALARM : WATCH_NONE);
    if (timers) io_alarm_by(earliest_timer());
}

/* p runs now, after from (NULL: p ran before too, the VM slept in between) */
static void fire_activate(Process *p, Process *from)
{
    if (SQ_ENABLED(PROCESS_ACTIVATE)) probe_process(PROBE_PROCESS_ACTIVATE, p);
    if (SQ_ACTIVATE_BATCHES()) probe_batch_activate(p, from);
}

static void transfer_to(Process *to)
{
    if (to != interp_current) {
        Process *from = interp_current;
        interp_current = to;
        vm_counters.process_switches++;
        fire_activate(to, from);
    } else if (to->state != PS_RUNNING) {
        /* It blocked and nothing else could run meanwhile: it gets the CPU back, which
         * is an activation too (the VM slept in between). */
        fire_activate(to, NULL);
    }
    to->state = PS_RUNNING;
    update_watch();
    /* A forked process's block is activated when the process is made; its block__entry
     * fires here, when it first runs, so call-flow tools see it in the right order. */
    if (UNLIKELY(!to->ran)) {
        to->ran = true;
        if (sq_call_probes_enabled()) interp_trace_entry(to->fp);
    }
}

NORETURN static void deadlock(void)
{
    fflush(stdout);
    fprintf(stderr, "ERROR: deadlock: no process can run\n");
    for (Process *p = sched_all; p; p = p->allNext)
        if (p->state == PS_WAITING)
            fprintf(stderr, "    process %s (id %llu, priority %d) waits on a Semaphore\n", sched_process_name(p),
                    (unsigned long long)p->id, p->priority);
    vm_exit(1);
}

/* Without blocking: the processes whose I/O is ready or whose timer has passed join
 * their ready queues. */
static void check_events(void)
{
    if (io_has_waiters()) io_poll(false);
    if (sched_state.numTimers) expire_timers(vm_now_ns());
}

/* The next process to run. When none is ready, the VM sleeps in the event loop until
 * I/O is ready or the earliest timer passes; a process waiting on I/O can still be
 * woken, so only when nothing waits on a timer or a descriptor is it a deadlock. */
static Process *pick_next(void)
{
    if (--sched_state.picksToCheck <= 0) {
        sched_state.picksToCheck = CHECK_EVERY_PICKS;
        check_events();
    }
    for (;;) {
        int pr = highest_ready();
        if (pr >= 0) {
            Process *p = sched_state.readyHead[pr];
            unready(p);
            return p;
        }
        if (!sched_state.numTimers && !io_has_waiters()) deadlock();
#ifdef SQVM_FUZZ
        if (!io_has_waiters()) { /* only timers: the fuzz clock jumps to the first (vm.c) */
            if (earliest_timer() > vm_fuzz_clock_ns) vm_fuzz_clock_ns = earliest_timer();
            interrupt_check();
            expire_timers(vm_now_ns());
            continue;
        }
#endif
        if (record_pending()) {
            /* A tool's records wait: before a flush (a uprobe hit) and a sleep, a look
             * without blocking. On a busy server the next requests are often there
             * already, and the batch goes on filling instead of costing a hit a round. */
            check_events();
            if (highest_ready() >= 0) continue;
        }
        io_watch(WATCH_NONE);
        if (sched_state.numTimers) io_alarm_by(earliest_timer());
        record_flush_pending(); /* the VM sleeps: what it traced is out first */
        io_poll(true);
        interrupt_check();
        if (sched_state.numTimers) expire_timers(vm_now_ns());
    }
}

/* The active process stops here (in a primitive whose receiver args[0] is the result). */
static void suspend_active_at(Value *args, int newState)
{
    Process *cur = interp_current;
    cur->fp->sp = args + 1;
    cur->state = newState;
}

static PrimResult switch_away(void)
{
    transfer_to(pick_next());
    return PRIM_ACTIVATED;
}

/* p became ready (why: a READY_* reason): run it now if it outranks the active process. */
static PrimResult ready_and_maybe_preempt(Process *p, Value *args, int why)
{
    Process *cur = interp_current;
    make_ready(p, false, why);
    if (p->priority <= cur->priority) return PRIM_OK;
    suspend_active_at(args, PS_READY);
    make_ready(cur, true, READY_PREEMPTED);
    unready(p);
    transfer_to(p);
    return PRIM_ACTIVATED;
}

bool sched_poll(void)
{
    sched_attention = 0;
    record_flush_pending(); /* the batch ticker may have asked (vm/record.c) */
    interrupt_check();
    io_watch_rearm();
    check_events();
    Process *cur = interp_current;
    if (highest_ready() <= cur->priority) {
        update_watch();
        return false;
    }
    cur->state = PS_READY;
    make_ready(cur, true, READY_PREEMPTED);
    transfer_to(pick_next());
    return true;
}

/* ---- Creating and ending processes ---- */

static void init_sched_fields(Process *p)
{
    p->obj = p->waitingOn = VM.nil;
    p->id = ++sched_state.nextId;
    p->timerSlot = -1;
    p->ioFd = -1;
    p->requestsOpen = 0; /* the fuzzer's main process is reused: its requests were dropped */
    p->trace.span = 0;
}

static Process *new_process(size_t stackWords)
{
    Process *p = vm_xcalloc(1, sizeof(Process));
    void *stack = sched_state.numSpare ? sched_state.spareStacks[--sched_state.numSpare]
                              : mmap(NULL, stackWords * sizeof(Value), PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED) vm_out_of_memory("cannot map a process stack");
    interp_process_init(p, stack, stackWords);
    init_sched_fields(p);
    link_all(p);
    return p;
}

#ifdef SQVM_FUZZ
/* Between two fuzzed programs: forget every process but the new main one, and every
 * timer and I/O wait. */
void sched_fuzz_reset(Process *main)
{
    memset(sched_state.readyHead, 0, sizeof sched_state.readyHead);
    memset(sched_state.readyTail, 0, sizeof sched_state.readyTail);
    memset(sched_state.readyBits, 0, sizeof sched_state.readyBits);
    memset(&sched_state.timerWaiters, 0, sizeof sched_state.timerWaiters);
    memset(&sched_state.ioWaiters, 0, sizeof sched_state.ioWaiters);
    sched_state.numTimers = 0;
    sched_all = NULL;
    io_fuzz_reset();
    request_fuzz_reset();
    sched_init(main);
    sched_main_object();
}
#endif

void sched_init(Process *main)
{
    init_sched_fields(main);
    main->priority = PRIORITY_USER;
    main->state = PS_RUNNING;
    main->isMain = true;
    main->started = main->ran = true;
    link_all(main);
    sched_state.forkStackWords = (4u << 20) / sizeof(Value);
    sched_state.picksToCheck = CHECK_EVERY_PICKS;
    io_init();
}

static Value new_process_object(Process *p, Value name)
{
    Obj *o = obj_new(sched_state.processClass->index, FMT_FIXED, sched_state.processClass->numFields);
    o->slots[PROC_HANDLE] = ptr_value(p);
    o->slots[PROC_NAME] = name;
    p->obj = obj_value(o);
    return p->obj;
}

void sched_main_object(void)
{
    sched_state.processClass = loader_load_class("Process");
    if (!sched_state.processClass || sched_state.processClass->numFields < PROC_NFIELDS) vm_fatal("core class Process missing or malformed");
    new_process_object(interp_current, str_new_perm("main", 4));
    if (SQ_SCHED_ENABLED(PROCESS_CREATE)) probe_process(PROBE_PROCESS_CREATE, interp_current); /* "main" */
    fire_activate(interp_current, NULL);
}

static void remove_from_semaphore(Process *p)
{
    Obj *sem = as_obj(p->waitingOn);
    Value prev = VM.nil;
    for (Value v = sem->slots[SEM_FIRST]; v != VM.nil; prev = v, v = as_obj(v)->slots[PROC_NEXT_LINK]) {
        if (v != p->obj) continue;
        Value next = as_obj(v)->slots[PROC_NEXT_LINK];
        if (prev == VM.nil) sem->slots[SEM_FIRST] = next;
        else { as_obj(prev)->slots[PROC_NEXT_LINK] = next; gc_write_barrier(as_obj(prev), next); }
        gc_write_barrier(sem, next);
        if (sem->slots[SEM_LAST] == v) { sem->slots[SEM_LAST] = prev; gc_write_barrier(sem, prev); }
        break;
    }
    as_obj(p->obj)->slots[PROC_NEXT_LINK] = VM.nil;
    p->waitingOn = VM.nil;
}

/* Takes p off whatever list, heap or descriptor holds it. */
static void detach(Process *p)
{
    if (p->state == PS_READY) unready(p);
    else if (p->state == PS_WAITING && p->waitingOn != VM.nil) remove_from_semaphore(p);
    if (p->state == PS_IO) {
        io_cancel(p);
        p->ioFd = -1;
        counts_remove(&sched_state.ioWaiters, p->priority);
    }
    timer_remove(p);
}

static void end_process(Process *p)
{
    request_process_ended(p);
    if (SQ_SCHED_ENABLED(PROCESS_EXIT)) probe_process(PROBE_PROCESS_EXIT, p);
    detach(p);
    p->state = PS_TERMINATED;
    unlink_all(p);
    if (p->obj != VM.nil) as_obj(p->obj)->slots[PROC_HANDLE] = VM.nil;
    if (sched_state.numSpare < 64 && p->stackWords == sched_state.forkStackWords) sched_state.spareStacks[sched_state.numSpare++] = p->stackBase;
    else munmap(p->stackBase, p->stackWords * sizeof(Value));
    free(p);
}

void sched_process_finished(void)
{
    Process *p = interp_current;
    p->state = PS_TERMINATED;
    Process *next = pick_next();
    end_process(p);
    interp_current = NULL; /* freed: the switch is from no process (probe_batch_activate) */
    transfer_to(next);
}

void sched_terminate_active(void)
{
    if (interp_current->isMain) vm_exit(1);
    sched_process_finished();
}

bool sched_active_is_main(void) { return !interp_current || interp_current->isMain; }

/* ---- What the primitives do ---- */

Value sched_new_process(Value block)
{
    Method *bm = value_ptr(as_obj(block)->slots[BLK_METHOD]);
    Process *p = new_process(sched_state.forkStackWords);
    p->priority = interp_current->priority;
    p->state = PS_SUSPENDED;
    /* bottom frame holding the block, then the block's activation above it */
    Frame *base = (Frame *)p->stackBase;
    memset(base, 0, sizeof(Frame));
    base->self = base->ctx = base->closure = VM.nil;
    base->locals[0] = block;
    base->sp = base->locals + 1;
    p->fp = base;
    Process *saved = interp_current;
    interp_current = p;
    interp_activate(bm, base->locals, block);
    interp_current = saved;
    return new_process_object(p, VM.nil);
}

PrimResult sched_resume(Process *p, Value *args)
{
    if (!p || p->state != PS_SUSPENDED) return PRIM_OK; /* terminated, or already scheduled */
    /* process__create fires at the first resume, when fork/forkNamed: has set the name */
    if (!p->started) {
        p->started = true;
        if (SQ_SCHED_ENABLED(PROCESS_CREATE)) probe_process(PROBE_PROCESS_CREATE, p);
    }
    return ready_and_maybe_preempt(p, args, READY_RESUMED);
}

PrimResult sched_suspend(Process *p, Value *args)
{
    if (!p || p->state == PS_SUSPENDED) return PRIM_OK;
    if (p == interp_current) {
        suspend_active_at(args, PS_SUSPENDED);
        return switch_away();
    }
    detach(p);
    p->state = PS_SUSPENDED;
    return PRIM_OK;
}

PrimResult sched_terminate(Process *p, Value *args)
{
    if (!p) return PRIM_OK;
    if (p == interp_current) {
        if (unwind_pending(p)) return unwind_terminate_active(0); /* its ensure: blocks first */
        if (p->isMain) vm_exit(0);
        sched_process_finished();
        return PRIM_ACTIVATED;
    }
    if (p->isMain) return prim_fail(args, "the main process cannot be terminated by another process");
    if (unwind_pending(p)) { /* it runs its ensure: blocks first, and at once */
        detach(p);
        unwind_terminate_other(p);
        return ready_and_maybe_preempt(p, args, READY_RESUMED);
    }
    end_process(p);
    return PRIM_OK;
}

PrimResult sched_set_priority(Process *p, int pr, Value *args)
{
    if (!p) return PRIM_OK;
    if (p->state == PS_READY) {
        unready(p);
        p->priority = pr;
        return ready_and_maybe_preempt(p, args, READY_PREEMPTED);
    }
    /* a waiter counts at its new priority */
    bool timed = p->timerSlot >= 0, io = p->state == PS_IO;
    if (timed) counts_remove(&sched_state.timerWaiters, p->priority);
    if (io) counts_remove(&sched_state.ioWaiters, p->priority);
    p->priority = pr;
    if (timed) counts_add(&sched_state.timerWaiters, pr);
    if (io) counts_add(&sched_state.ioWaiters, pr);
    if (p == interp_current && highest_ready() > pr) {
        suspend_active_at(args, PS_READY);
        make_ready(p, true, READY_PREEMPTED);
        return switch_away();
    }
    update_watch();
    return PRIM_OK;
}

PrimResult sched_give_turn(Value *args)
{
    Process *cur = interp_current;
    check_events();
    if (!sched_state.readyHead[cur->priority] && highest_ready() <= cur->priority) return PRIM_OK;
    suspend_active_at(args, PS_READY);
    make_ready(cur, false, READY_PREEMPTED);
    return switch_away();
}

PrimResult sched_terminate_active_prim(void)
{
    if (unwind_pending(interp_current)) return unwind_terminate_active(1); /* its ensure: blocks first */
    if (interp_current->isMain) vm_exit(1);
    sched_process_finished();
    return PRIM_ACTIVATED;
}

/* p took a signal of sem (a SmallInteger: no barrier). A Semaphore of a class that
 * has not the field (a program's own) keeps none. */
static void took(Value semv, Obj *sem, const Process *p)
{
    if (class_of(semv)->numFields > SEM_TAKER) sem->slots[SEM_TAKER] = int_value((int64_t)(p->id & INT32_MAX));
}

/* The process that last took a signal of sem, 0 if unknown: the one a waiter waits for,
 * when sem is a mutex (the wait's record carries it). */
static uint32_t taker(Value semv, const Obj *sem)
{
    Value t = class_of(semv)->numFields > SEM_TAKER ? sem->slots[SEM_TAKER] : VM.nil;
    return is_int(t) ? (uint32_t)int_val(t) : 0;
}

PrimResult sched_semaphore_wait(Value *args)
{
    Obj *sem = as_obj(args[0]);
    Value excess = sem->slots[SEM_EXCESS];
    if (is_int(excess) && int_val(excess) > 0) {
        sem->slots[SEM_EXCESS] = int_value(int_val(excess) - 1);
        took(args[0], sem, interp_current);
        return PRIM_OK;
    }
    Process *cur = interp_current;
    Value me = cur->obj;
    as_obj(me)->slots[PROC_NEXT_LINK] = VM.nil;
    if (sem->slots[SEM_FIRST] == VM.nil) {
        sem->slots[SEM_FIRST] = me;
    } else {
        Obj *last = as_obj(sem->slots[SEM_LAST]);
        last->slots[PROC_NEXT_LINK] = me;
        gc_write_barrier(last, me);
    }
    sem->slots[SEM_LAST] = me;
    gc_write_barrier(sem, me);
    cur->waitingOn = args[0];
    if (SQ_SCHED_ENABLED(PROCESS_WAIT)) probe_process_wait(cur, obj_hash(sem), 0, 0, taker(args[0], sem));
    suspend_active_at(args, PS_WAITING);
    return switch_away();
}

PrimResult sched_semaphore_signal(Value *args)
{
    Obj *sem = as_obj(args[0]);
    Value first = sem->slots[SEM_FIRST];
    if (first == VM.nil) {
        Value excess = sem->slots[SEM_EXCESS];
        sem->slots[SEM_EXCESS] = int_value((is_int(excess) ? int_val(excess) : 0) + 1);
        return PRIM_OK;
    }
    Value next = as_obj(first)->slots[PROC_NEXT_LINK];
    sem->slots[SEM_FIRST] = next;
    gc_write_barrier(sem, next);
    if (next == VM.nil) sem->slots[SEM_LAST] = VM.nil;
    as_obj(first)->slots[PROC_NEXT_LINK] = VM.nil;
    Process *p = sched_process_of(first);
    if (!p) return PRIM_OK;
    p->waitingOn = VM.nil;
    took(args[0], sem, p);
    return ready_and_maybe_preempt(p, args, READY_SIGNALLED);
}

PrimResult sched_delay(Value *args, uint64_t ns)
{
    Process *cur = interp_current;
    uint64_t now = vm_now_ns(); /* the deadline's, and the probe's record's */
    if (SQ_SCHED_ENABLED(PROCESS_WAIT)) probe_process_wait(cur, 0, ns, now, 0);
    suspend_active_at(args, PS_WAITING);
    timer_add(cur, now + ns);
    return switch_away();
}

PrimResult sched_io_wait(Value *args, int fd, int op, uint64_t timeoutNs)
{
    Process *cur = interp_current;
    cur->ioFd = fd;
    cur->ioOp = op;
    uint64_t now = timeoutNs ? vm_now_ns() : 0; /* the deadline's, and the probe's record's */
    if (SQ_IO_WAIT_ENABLED(IO_WAIT)) probe_io_wait(cur, fd, op, timeoutNs, now);
    args[0] = VM.trueObj;
    suspend_active_at(args, PS_IO);
    if (timeoutNs) timer_add(cur, now + timeoutNs);
    counts_add(&sched_state.ioWaiters, cur->priority);
    return switch_away();
}

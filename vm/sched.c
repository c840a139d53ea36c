// SPDX-License-Identifier: BSD-2-Clause
/* sched.c - green processes on one OS thread: ready queues per priority, Semaphores,
 * Delays driven by an interval timer, deadlock detection, and the process-activation
 * probe site. Scheduling follows Squeak: the highest-priority runnable process runs; a
 * process readied at a higher priority preempts the active one at once (the preempted
 * one keeps its turn at the front of its queue); equal priorities take turns only on
 * yield, wait or suspend. */
#include "sched.h"
#include "gc.h"
#include "loader.h"
#include "prims.h"
#include "probes.h"
#include "symbol.h"
#include "unwind.h"
#include "vm.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>

#define NUM_PRIORITIES (PRIORITY_MAX + 1)


static struct {
    Process *readyHead[NUM_PRIORITIES], *readyTail[NUM_PRIORITIES];
    uint64_t readyBits[2];         /* bit p set: queue p non-empty */
    Process *delays;               /* waiting on a Delay, earliest first */
    Process *all;                  /* every live process */
    uint64_t nextId;
    size_t forkStackWords;
    ClassInfo *processClass;
    Value *spareStacks[64];        /* stacks of ended processes, reused (mmap is slow) */
    int numSpare;
} sched_state;

/* ---- Bookkeeping ---- */

static void link_all(Process *p)
{
    p->allPrev = NULL;
    p->allNext = sched_state.all;
    if (sched_state.all) sched_state.all->allPrev = p;
    sched_state.all = p;
}

static void unlink_all(Process *p)
{
    if (p->allPrev) p->allPrev->allNext = p->allNext; else sched_state.all = p->allNext;
    if (p->allNext) p->allNext->allPrev = p->allPrev;
}

void sched_scan_roots(void (*visit)(Value *))
{
    for (Process *p = sched_state.all; p; p = p->allNext) {
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

Process *sched_all_processes(void) { return sched_state.all; }

const char *sched_process_name(Process *p)
{
    if (p->obj == G.nil || p->obj == 0) return p->isMain ? "main" : "";
    Value n = as_obj(p->obj)->slots[PROC_NAME];
    return is_string_like(n) ? str_bytes(n) : "";
}

static Process *handle_of(Value procObj)
{
    if (!is_ptr(procObj) || obj_class_index(as_obj(procObj)) != sched_state.processClass->index) return NULL;
    Value h = as_obj(procObj)->slots[PROC_HANDLE];
    return h == G.nil || !is_int(h) ? NULL : value_ptr(h);
}

/* ---- Ready queues ---- */

static void make_ready(Process *p, bool front, int reason)
{
    int pr = p->priority;
    if (SQ_ENABLED(PROCESS_READY)) probe_process_ready(p->id, sched_process_name(p), reason);
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

static int highest_ready(void)
{
    if (sched_state.readyBits[1]) return 64 + 63 - __builtin_clzll(sched_state.readyBits[1]);
    if (sched_state.readyBits[0]) return 63 - __builtin_clzll(sched_state.readyBits[0]);
    return -1;
}

/* ---- Delays and the timer ---- */

static void on_alarm(int sig)
{
    (void)sig;
    sched_attention = 1;
}

static void arm_timer(void)
{
    struct itimerval it = {{0, 0}, {0, 0}};
    if (sched_state.delays) {
        uint64_t now = vm_now_ns(), wake = sched_state.delays->wakeNs;
        uint64_t us = wake > now ? (wake - now + 999) / 1000 : 1;
        it.it_value.tv_sec = (time_t)(us / 1000000);
        it.it_value.tv_usec = (suseconds_t)(us % 1000000);
    }
    setitimer(ITIMER_REAL, &it, NULL);
}

static void add_delay(Process *p, uint64_t wakeNs)
{
    p->wakeNs = wakeNs;
    Process **pp = &sched_state.delays;
    while (*pp && (*pp)->wakeNs <= wakeNs) pp = &(*pp)->next;
    p->next = *pp;
    p->prev = NULL;
    *pp = p;
    if (sched_state.delays == p) arm_timer();
}

static void remove_delay(Process *p)
{
    for (Process **pp = &sched_state.delays; *pp; pp = &(*pp)->next)
        if (*pp == p) { *pp = p->next; break; }
    p->next = NULL;
}

/* Moves every expired Delay's process to its ready queue (in wake order). */
static void wake_expired(void)
{
    uint64_t now = vm_now_ns();
    while (sched_state.delays && sched_state.delays->wakeNs <= now) {
        Process *p = sched_state.delays;
        sched_state.delays = p->next;
        make_ready(p, false, READY_DELAY);
    }
    arm_timer();
}

/* ---- Switching ---- */

static void fire_activate(Process *p)
{
    if (SQ_ENABLED(PROCESS_ACTIVATE)) probe_process(PROBE_PROCESS_ACTIVATE, p->id, sched_process_name(p), p->priority);
}

static void transfer_to(Process *to)
{
    if (to != interp_current) {
        interp_current = to;
        vm_counters.process_switches++;
        fire_activate(to);
    } else if (to->state != PS_RUNNING) {
        /* It blocked and nothing else could run meanwhile: it gets the CPU back, which
         * is an activation too (the VM slept in between). */
        fire_activate(to);
    }
    to->state = PS_RUNNING;
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
    for (Process *p = sched_state.all; p; p = p->allNext)
        if (p->state == PS_WAITING)
            fprintf(stderr, "    process %s (id %llu, priority %d) waits on a Semaphore\n", sched_process_name(p),
                    (unsigned long long)p->id, p->priority);
    vm_exit(1);
}

/* The next process to run; sleeps while every process waits on a Delay. */
static Process *pick_next(void)
{
    for (;;) {
        int pr = highest_ready();
        if (pr >= 0) {
            Process *p = sched_state.readyHead[pr];
            unready(p);
            return p;
        }
        if (!sched_state.delays) deadlock();
        struct timespec ts = {(time_t)(sched_state.delays->wakeNs / 1000000000ull), (long)(sched_state.delays->wakeNs % 1000000000ull)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
#ifdef SQVM_FUZZ
        vm_fuzz_check();
#endif
        wake_expired();
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
#ifdef SQVM_FUZZ
    vm_fuzz_check();
#endif
    if (!sched_state.delays || sched_state.delays->wakeNs > vm_now_ns()) return false;
    wake_expired();
    Process *cur = interp_current;
    int pr = highest_ready();
    if (pr <= cur->priority) return false;
    cur->state = PS_READY;
    make_ready(cur, true, READY_PREEMPTED);
    transfer_to(pick_next());
    return true;
}

/* ---- Creating and ending processes ---- */

static Process *new_process(size_t stackWords)
{
    Process *p = vm_xcalloc(1, sizeof(Process));
    void *stack = sched_state.numSpare ? sched_state.spareStacks[--sched_state.numSpare]
                              : mmap(NULL, stackWords * sizeof(Value), PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED) vm_out_of_memory("cannot map a process stack");
    interp_process_init(p, stack, stackWords);
    p->obj = p->waitingOn = G.nil;
    p->id = ++sched_state.nextId;
    link_all(p);
    return p;
}

#ifdef SQVM_FUZZ
/* Between two fuzzed programs: forget every process but the new main one, and any Delay. */
void sched_fuzz_reset(Process *main)
{
    memset(sched_state.readyHead, 0, sizeof sched_state.readyHead);
    memset(sched_state.readyTail, 0, sizeof sched_state.readyTail);
    memset(sched_state.readyBits, 0, sizeof sched_state.readyBits);
    sched_state.delays = NULL;
    sched_state.all = NULL;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    sched_init(main);
    sched_main_object();
}
#endif

void sched_init(Process *main)
{
    main->obj = main->waitingOn = G.nil;
    main->id = ++sched_state.nextId;
    main->priority = PRIORITY_USER;
    main->state = PS_RUNNING;
    main->isMain = true;
    main->started = main->ran = true;
    link_all(main);
    sched_state.forkStackWords = (4u << 20) / sizeof(Value);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
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
    if (SQ_ENABLED(PROCESS_CREATE)) probe_process(PROBE_PROCESS_CREATE, interp_current->id, "main", PRIORITY_USER);
    fire_activate(interp_current);
}

static void remove_from_semaphore(Process *p)
{
    if (p->waitingOn == G.nil) return;
    Obj *sem = as_obj(p->waitingOn);
    Value prev = G.nil;
    for (Value v = sem->slots[SEM_FIRST]; v != G.nil; prev = v, v = as_obj(v)->slots[PROC_NEXT_LINK]) {
        if (v != p->obj) continue;
        Value next = as_obj(v)->slots[PROC_NEXT_LINK];
        if (prev == G.nil) sem->slots[SEM_FIRST] = next;
        else { as_obj(prev)->slots[PROC_NEXT_LINK] = next; gc_write_barrier(as_obj(prev), next); }
        gc_write_barrier(sem, next);
        if (sem->slots[SEM_LAST] == v) { sem->slots[SEM_LAST] = prev; gc_write_barrier(sem, prev); }
        break;
    }
    as_obj(p->obj)->slots[PROC_NEXT_LINK] = G.nil;
    p->waitingOn = G.nil;
}

/* Takes p off whatever list holds it. */
static void detach(Process *p)
{
    if (p->state == PS_READY) unready(p);
    else if (p->state == PS_WAITING) {
        if (p->waitingOn != G.nil) remove_from_semaphore(p);
        else remove_delay(p);
    }
}

static void end_process(Process *p)
{
    if (SQ_ENABLED(PROCESS_EXIT)) probe_process(PROBE_PROCESS_EXIT, p->id, sched_process_name(p), 0);
    detach(p);
    p->state = PS_TERMINATED;
    unlink_all(p);
    if (p->obj != G.nil) as_obj(p->obj)->slots[PROC_HANDLE] = G.nil;
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
    transfer_to(next);
}

void sched_terminate_active(void)
{
    if (interp_current->isMain) vm_exit(1);
    sched_process_finished();
}

bool sched_active_is_main(void) { return !interp_current || interp_current->isMain; }

/* ---- Primitives ---- */

static PrimResult p_new_process(Value *a, uint32_t n)
{
    (void)n;
    Method *bm = value_ptr(as_obj(a[0])->slots[BLK_METHOD]);
    if (bm->nargs != 0) return prim_fail(a, "newProcess needs a block without arguments");
    Process *p = new_process(sched_state.forkStackWords);
    p->priority = interp_current->priority;
    p->state = PS_SUSPENDED;
    /* bottom frame holding the block, then the block's activation above it */
    Frame *base = (Frame *)p->stackBase;
    memset(base, 0, sizeof(Frame));
    base->self = base->ctx = base->closure = G.nil;
    base->locals[0] = a[0];
    base->sp = base->locals + 1;
    p->fp = base;
    Process *saved = interp_current;
    interp_current = p;
    interp_activate(bm, base->locals, a[0]);
    interp_current = saved;
    a[0] = new_process_object(p, G.nil);
    return PRIM_OK;
}

static Process *rcvr_process(Value *a) { return handle_of(a[0]); }

static PrimResult p_resume(Value *a, uint32_t n)
{
    (void)n;
    Process *p = rcvr_process(a);
    if (!p || p->state != PS_SUSPENDED) return PRIM_OK; /* terminated, or already scheduled */
    /* process__create fires at the first resume, when fork/forkNamed: has set the name */
    if (!p->started) {
        p->started = true;
        if (SQ_ENABLED(PROCESS_CREATE)) probe_process(PROBE_PROCESS_CREATE, p->id, sched_process_name(p), p->priority);
    }
    return ready_and_maybe_preempt(p, a, READY_RESUMED);
}

static PrimResult p_suspend(Value *a, uint32_t n)
{
    (void)n;
    Process *p = rcvr_process(a);
    if (!p || p->state == PS_SUSPENDED) return PRIM_OK;
    if (p == interp_current) {
        suspend_active_at(a, PS_SUSPENDED);
        return switch_away();
    }
    detach(p);
    p->state = PS_SUSPENDED;
    return PRIM_OK;
}

static PrimResult p_terminate(Value *a, uint32_t n)
{
    (void)n;
    Process *p = rcvr_process(a);
    if (!p) return PRIM_OK;
    if (p == interp_current) {
        if (unwind_pending(p)) return unwind_terminate_active(0); /* its ensure: blocks first */
        if (p->isMain) vm_exit(0);
        sched_process_finished();
        return PRIM_ACTIVATED;
    }
    if (p->isMain) return prim_fail(a, "the main process cannot be terminated by another process");
    if (unwind_pending(p)) { /* it runs its ensure: blocks first, and at once */
        detach(p);
        unwind_terminate_other(p);
        return ready_and_maybe_preempt(p, a, READY_RESUMED);
    }
    end_process(p);
    return PRIM_OK;
}

static PrimResult p_priority(Value *a, uint32_t n)
{
    (void)n;
    Process *p = rcvr_process(a);
    a[0] = int_value(p ? p->priority : 0);
    return PRIM_OK;
}

static PrimResult p_set_priority(Value *a, uint32_t n)
{
    (void)n;
    Process *p = rcvr_process(a);
    if (!is_int(a[1]) || int_val(a[1]) < PRIORITY_MIN || int_val(a[1]) > PRIORITY_MAX)
        return prim_fail(a, "priority: needs an Integer from 1 to 80");
    if (!p) return PRIM_OK;
    int pr = (int)int_val(a[1]);
    if (p->state == PS_READY) {
        unready(p);
        p->priority = pr;
        return ready_and_maybe_preempt(p, a, READY_PREEMPTED);
    }
    p->priority = pr;
    if (p == interp_current && highest_ready() > pr) {
        suspend_active_at(a, PS_READY);
        make_ready(p, true, READY_PREEMPTED);
        return switch_away();
    }
    return PRIM_OK;
}

static PrimResult p_is_terminated(Value *a, uint32_t n) { (void)n; a[0] = bool_value(rcvr_process(a) == NULL); return PRIM_OK; }
static PrimResult p_is_main(Value *a, uint32_t n) { (void)n; Process *p = rcvr_process(a); a[0] = bool_value(p && p->isMain); return PRIM_OK; }

static PrimResult p_id(Value *a, uint32_t n)
{
    (void)n;
    Process *p = rcvr_process(a);
    a[0] = p ? int_value((int64_t)p->id) : G.nil;
    return PRIM_OK;
}

static PrimResult p_state(Value *a, uint32_t n)
{
    (void)n;
    static const char *const names[] = {"running", "ready", "waiting", "suspended", "terminated"};
    Process *p = rcvr_process(a);
    a[0] = sym_intern_cstr(names[p ? p->state : PS_TERMINATED]);
    return PRIM_OK;
}

static PrimResult p_active(Value *a, uint32_t n) { (void)n; a[0] = interp_current->obj; return PRIM_OK; }

static PrimResult p_yield(Value *a, uint32_t n)
{
    (void)n;
    Process *cur = interp_current;
    if (!sched_state.readyHead[cur->priority] && highest_ready() <= cur->priority) return PRIM_OK;
    suspend_active_at(a, PS_READY);
    make_ready(cur, false, READY_PREEMPTED);
    return switch_away();
}

static PrimResult p_terminate_active(Value *a, uint32_t n)
{
    (void)a; (void)n;
    if (unwind_pending(interp_current)) return unwind_terminate_active(1); /* its ensure: blocks first */
    if (interp_current->isMain) vm_exit(1);
    sched_process_finished();
    return PRIM_ACTIVATED;
}

static PrimResult p_wait(Value *a, uint32_t n)
{
    (void)n;
    Obj *sem = as_obj(a[0]);
    Value excess = sem->slots[SEM_EXCESS];
    if (is_int(excess) && int_val(excess) > 0) {
        sem->slots[SEM_EXCESS] = int_value(int_val(excess) - 1);
        return PRIM_OK;
    }
    Process *cur = interp_current;
    Value me = cur->obj;
    as_obj(me)->slots[PROC_NEXT_LINK] = G.nil;
    if (sem->slots[SEM_FIRST] == G.nil) {
        sem->slots[SEM_FIRST] = me;
    } else {
        Obj *last = as_obj(sem->slots[SEM_LAST]);
        last->slots[PROC_NEXT_LINK] = me;
        gc_write_barrier(last, me);
    }
    sem->slots[SEM_LAST] = me;
    gc_write_barrier(sem, me);
    cur->waitingOn = a[0];
    if (SQ_ENABLED(PROCESS_WAIT)) probe_process_wait(cur->id, sched_process_name(cur), obj_hash(sem), 0);
    suspend_active_at(a, PS_WAITING);
    return switch_away();
}

static PrimResult p_signal(Value *a, uint32_t n)
{
    (void)n;
    Obj *sem = as_obj(a[0]);
    Value first = sem->slots[SEM_FIRST];
    if (first == G.nil) {
        Value excess = sem->slots[SEM_EXCESS];
        sem->slots[SEM_EXCESS] = int_value((is_int(excess) ? int_val(excess) : 0) + 1);
        return PRIM_OK;
    }
    Value next = as_obj(first)->slots[PROC_NEXT_LINK];
    sem->slots[SEM_FIRST] = next;
    gc_write_barrier(sem, next);
    if (next == G.nil) sem->slots[SEM_LAST] = G.nil;
    as_obj(first)->slots[PROC_NEXT_LINK] = G.nil;
    Process *p = handle_of(first);
    if (!p) return PRIM_OK;
    p->waitingOn = G.nil;
    return ready_and_maybe_preempt(p, a, READY_SIGNALLED);
}

static PrimResult p_delay_wait(Value *a, uint32_t n)
{
    (void)n;
    Value ms = as_obj(a[0])->slots[0];
    if (!is_int(ms)) return prim_fail(a, "a Delay needs an Integer number of milliseconds");
    if (int_val(ms) <= 0) return PRIM_OK;
    Process *cur = interp_current;
    if (SQ_ENABLED(PROCESS_WAIT))
        probe_process_wait(cur->id, sched_process_name(cur), 0, (uint64_t)int_val(ms) * 1000000ull);
    suspend_active_at(a, PS_WAITING);
    add_delay(cur, vm_now_ns() + (uint64_t)int_val(ms) * 1000000ull);
    return switch_away();
}

const PrimDef prims_process[] = {
    {"Block1", "newProcess", p_new_process},
    {"Process", "resume", p_resume}, {"Process", "suspend", p_suspend}, {"Process", "terminate", p_terminate},
    {"Process", "priority", p_priority}, {"Process", "priority:", p_set_priority},
    {"Process", "isTerminated", p_is_terminated}, {"Process", "isMain", p_is_main}, {"Process", "id", p_id},
    {"Process", "state", p_state},
    {"ProcessorScheduler", "activeProcess", p_active}, {"ProcessorScheduler", "yield", p_yield},
    {"ProcessorScheduler", "terminateActive", p_terminate_active},
    {"Semaphore", "wait", p_wait}, {"Semaphore", "signal", p_signal},
    {"Delay", "wait", p_delay_wait},
    {NULL, NULL, NULL},
};

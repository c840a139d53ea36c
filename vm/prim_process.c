// SPDX-License-Identifier: BSD-2-Clause
/* prim_process.c - the primitives of Process, ProcessorScheduler, Semaphore and Delay:
 * they check their arguments and hand the work to the scheduler (sched.c). */
#include "prims.h"
#include "sched.h"
#include "symbol.h"

static Process *rcvr_process(Value *a) { return sched_process_of(a[0]); }

static PrimResult p_new_process(Value *a, uint32_t n)
{
    (void)n;
    Method *bm = value_ptr(as_obj(a[0])->slots[BLK_METHOD]);
    if (bm->nargs != 0) return prim_fail(a, "newProcess needs a block without arguments");
    a[0] = sched_new_process(a[0]);
    return PRIM_OK;
}

static PrimResult p_resume(Value *a, uint32_t n) { (void)n; return sched_resume(rcvr_process(a), a); }
static PrimResult p_suspend(Value *a, uint32_t n) { (void)n; return sched_suspend(rcvr_process(a), a); }
static PrimResult p_terminate(Value *a, uint32_t n) { (void)n; return sched_terminate(rcvr_process(a), a); }

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
    if (!is_int(a[1]) || int_val(a[1]) < PRIORITY_MIN || int_val(a[1]) > PRIORITY_MAX)
        return prim_fail(a, "priority: needs an Integer from 1 to 80");
    return sched_set_priority(rcvr_process(a), (int)int_val(a[1]), a);
}

static PrimResult p_is_terminated(Value *a, uint32_t n) { (void)n; a[0] = bool_value(rcvr_process(a) == NULL); return PRIM_OK; }
static PrimResult p_is_main(Value *a, uint32_t n) { (void)n; Process *p = rcvr_process(a); a[0] = bool_value(p && p->isMain); return PRIM_OK; }

static PrimResult p_id(Value *a, uint32_t n)
{
    (void)n;
    Process *p = rcvr_process(a);
    a[0] = p ? int_value((int64_t)p->id) : VM.nil;
    return PRIM_OK;
}

static PrimResult p_state(Value *a, uint32_t n)
{
    (void)n;
    /* indexed by PS_* (sched.h) */
    static const char *const names[] = {"running", "ready", "waiting", "io", "suspended", "terminated"};
    Process *p = rcvr_process(a);
    a[0] = sym_intern_cstr(names[p ? p->state : PS_TERMINATED]);
    return PRIM_OK;
}

static PrimResult p_active(Value *a, uint32_t n) { (void)n; a[0] = interp_current->obj; return PRIM_OK; }
static PrimResult p_yield(Value *a, uint32_t n) { (void)n; return sched_give_turn(a); }
static PrimResult p_terminate_active(Value *a, uint32_t n) { (void)a; (void)n; return sched_terminate_active_prim(); }
static PrimResult p_wait(Value *a, uint32_t n) { (void)n; return sched_semaphore_wait(a); }
static PrimResult p_signal(Value *a, uint32_t n) { (void)n; return sched_semaphore_signal(a); }

static PrimResult p_delay_wait(Value *a, uint32_t n)
{
    (void)n;
    Value ms = as_obj(a[0])->slots[0];
    if (!is_int(ms) || int_val(ms) > (INT64_C(1) << 40))
        return prim_fail(a, "a Delay needs an Integer number of milliseconds");
    if (int_val(ms) <= 0) return PRIM_OK;
    return sched_delay(a, (uint64_t)int_val(ms) * 1000000u);
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

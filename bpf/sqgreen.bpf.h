// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqgreen.bpf.h - the state of every green process, kept from the probes (or their
 * records in squeak:sched__batch or req__batch, each with its own time), for the tools
 * that charge time to what a process was doing (sqsched per process, sqreq per request:
 * it keeps only the processes with a request open, whose records req__batch has):
 *
 *   process__activate   -> running (and the process that ran before on that VM thread,
 *                          if nothing said it stopped, e.g. suspended -> unknown)
 *   process__ready      -> ready        process__wait -> semaphore or delay
 *   io__wait            -> io           (io__ready is followed by process__ready)
 *   gc__*__begin        -> gc (the running process), gc__*__end -> running again
 *   process__exit       -> gone
 *
 * sq_green_move() puts a process in a state and answers the one it leaves and how long
 * it was in it, so that a tool charges every nanosecond to exactly one state. */
#ifndef SQGREEN_BPF_H
#define SQGREEN_BPF_H

#include "sqvm.bpf.h"
#include "sqgreen.h"
#include "event_batch.h"

#include "sqslots.bpf.h"


/* Every process's state: a slot table (bpf/sqslots.bpf.h), green_find(pid, id). */
struct green_slot {
	struct sq_slot h;
	struct sq_green v;
};

SQ_SLOT_MAPS(green_slots, green_spill, green_spilled, struct green_slot, SQ_GREEN_SLOTS, SQ_GREEN_MAX_PROCS)

static __always_inline struct sq_green *green_find(__u32 pid, __u64 id)
{
	return sq_slots_find(&green_slots, &green_spill, &green_spilled, SQ_GREEN_SLOTS, pid, id);
}

static __always_inline struct sq_green *green_insert(__u32 pid, __u64 id, const struct sq_green *init)
{
	return sq_slots_insert(&green_slots, &green_spill, &green_spilled, SQ_GREEN_SLOTS, sizeof(*init), pid, id, init);
}

static __always_inline void green_delete(__u32 pid, __u64 id)
{
	sq_slots_delete(&green_slots, &green_spill, &green_spilled, SQ_GREEN_SLOTS, pid, id);
}

/* Per VM thread: the process it runs (known 0: none since its last stop). */
struct sq_green_running {
	__u64 id;
	__u32 known;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct sq_green_running);
} green_running SEC(".maps");

static __always_inline bool sq_green_runs(__u32 state)
{
	return state == SQ_GREEN_RUNNING || state == SQ_GREEN_GC;
}

/* Process id of VM pid, whose entry is g (NULL: none) in state from since its run began
 * at run_ns, enters state to (SQ_GREEN_NSTATES: it is gone) at now. A run begins where
 * it enters running from anything but gc. Answers its entry now (NULL: gone, or no
 * room). */
static __always_inline struct sq_green *sq_green_put(__u32 pid, __u64 id, struct sq_green *g, __u32 from,
						     __u64 run_ns, __u32 to, __u64 now)
{
	struct sq_green fresh = { .since_ns = now, .state = to };

	if (to == SQ_GREEN_RUNNING && from != SQ_GREEN_GC)
		fresh.run_ns = now;
	else if (sq_green_runs(to) && sq_green_runs(from))
		fresh.run_ns = run_ns;
	if (to == SQ_GREEN_NSTATES) {
		green_delete(pid, id);
		return 0;
	}
	if (!g)
		return green_insert(pid, id, &fresh);
	/* the run first: sqsched's user space reads the table as it changes, and must not
	 * see a state of running with an older run's start (the JITs keep the order of
	 * stores on x86-64: bpf/sqslots.bpf.h) */
	g->run_ns = fresh.run_ns;
	asm volatile("" ::: "memory");
	g->since_ns = now;
	g->state = to;
	return g;
}

/* Process id of VM pid enters state to (SQ_GREEN_NSTATES: it is gone) at now. *old gets
 * its entry as it was (state SQ_GREEN_UNKNOWN and all 0 if it had none). Answers its
 * entry now (NULL: gone, or no room), whose wait_* fields the caller may set. */
static __always_inline struct sq_green *sq_green_enter(__u32 pid, __u64 id, __u32 to, __u64 now,
						       struct sq_green *old)
{
	struct sq_green *g = green_find(pid, id);

	if (g)
		*old = *g;
	else
		__builtin_memset(old, 0, sizeof(*old));
	return sq_green_put(pid, id, g, old->state, old->run_ns, to, now);
}

/* Process id of VM pid enters state to (SQ_GREEN_NSTATES: it is gone) at now. Answers
 * the state it leaves, and in *ns how long it was in it (0 for SQ_GREEN_UNKNOWN). */
static __always_inline __u32 sq_green_move(__u32 pid, __u64 id, __u32 to, __u64 now, __u64 *ns)
{
	struct sq_green *g = green_find(pid, id);
	__u32 from = SQ_GREEN_UNKNOWN;

	*ns = 0;
	if (g) {
		from = g->state;
		*ns = from == SQ_GREEN_UNKNOWN ? 0 : now - g->since_ns;
	}
	sq_green_put(pid, id, g, from, g ? g->run_ns : 0, to, now);
	return from;
}

/* The state process id of VM pid is in (SQ_GREEN_UNKNOWN: not seen). */
static __always_inline __u32 sq_green_state(__u32 pid, __u64 id)
{
	struct sq_green *g = green_find(pid, id);

	return g ? g->state : SQ_GREEN_UNKNOWN;
}

/* A batch's consumer keeps its VM thread's running process on its stack while it walks
 * the records (they are all that thread's): one lookup and one update a batch instead
 * of one or two a record. */
static __always_inline void sq_green_running_load(__u32 tid, struct sq_green_running *cur)
{
	struct sq_green_running *r = bpf_map_lookup_elem(&green_running, &tid);

	cur->id = r ? r->id : 0;
	cur->known = r ? r->known : 0;
	cur->pad = 0;
}

static __always_inline void sq_green_running_store(__u32 tid, const struct sq_green_running *cur)
{
	bpf_map_update_elem(&green_running, &tid, cur, BPF_ANY);
}

/* process__activate of id on a thread whose running process is *cur: *prev gets the
 * one that ran there until now without a probe saying it stopped (0: none), which the
 * caller moves to SQ_GREEN_UNKNOWN (it was suspended) after charging it. */
static __always_inline void sq_green_activate_in(struct sq_green_running *cur, __u64 id, __u64 *prev)
{
	*prev = cur->known && cur->id != id ? cur->id : 0;
	cur->id = id;
	cur->known = 1;
}

/* The running process id stops running (for another process it changes nothing). */
static __always_inline void sq_green_stop_in(struct sq_green_running *cur, __u64 id)
{
	if (cur->known && cur->id == id)
		cur->known = 0;
}

/* The process the VM thread tid runs now (false: none known). */
static __always_inline bool sq_green_current(__u32 tid, __u64 *id)
{
	struct sq_green_running *r = bpf_map_lookup_elem(&green_running, &tid);

	if (!r || !r->known)
		return false;
	*id = r->id;
	return true;
}

/* process__activate of id on thread tid: *prev gets the process that ran there until
 * now without a probe saying it stopped (0: none), which the caller moves to
 * SQ_GREEN_UNKNOWN (it was suspended) after charging it; the running map is updated. */
static __always_inline void sq_green_activate(__u32 tid, __u64 id, __u64 *prev)
{
	struct sq_green_running *r = bpf_map_lookup_elem(&green_running, &tid), fresh = { .id = id, .known = 1 };

	*prev = r && r->known && r->id != id ? r->id : 0;
	bpf_map_update_elem(&green_running, &tid, &fresh, BPF_ANY);
}

/* A probe of the running process id (a wait, a yield or a preemption names it) on
 * thread tid: if no process is known to run there yet (the tool attached after the
 * last activation), it is this one. For tools that need to know whose frames run
 * before the first switch they see (sqflow). */
static __always_inline void sq_green_learn(__u32 tid, __u64 id)
{
	struct sq_green_running fresh = { .id = id, .known = 1 };

	bpf_map_update_elem(&green_running, &tid, &fresh, BPF_NOEXIST);
}

/* process__wait's state: a Semaphore's identity hash is never 0, a Delay passes 0. */
static __always_inline __u32 sq_green_wait_state(__u64 semaphore)
{
	return semaphore ? SQ_GREEN_SEMAPHORE : SQ_GREEN_DELAY;
}

/* The state a scheduler record (sched__batch, req__batch: probes/event_batch.h) moves its
 * process into, as the table at the top of this file says: *id the process, *to the
 * state (SQ_GREEN_NSTATES: it exits). False: r is not a scheduler record. The one
 * reading of the scheduler's records for the tools that follow them (sqsched, sqreq). */
static __always_inline bool sq_green_transition(const SqEventRecord *r, __u64 *id, __u32 *to)
{
	switch (r->kind) {
	case SQ_EV_PROCESS_ACTIVATE:
		*to = SQ_GREEN_RUNNING;
		break;
	case SQ_EV_PROCESS_READY:
		*to = SQ_GREEN_READY;
		break;
	case SQ_EV_PROCESS_WAIT:
		*to = sq_green_wait_state(r->process.semaphore);
		break;
	case SQ_EV_IO_WAIT:
		*to = SQ_GREEN_IO;
		break;
	case SQ_EV_PROCESS_EXIT:
		*to = SQ_GREEN_NSTATES;
		break;
	default:
		return false;
	}
	*id = r->process.id;
	return true;
}

/* A wait's state (the record names the method it waits in). */
static __always_inline bool sq_green_waiting(__u32 state)
{
	return state == SQ_GREEN_SEMAPHORE || state == SQ_GREEN_DELAY || state == SQ_GREEN_IO;
}

#endif

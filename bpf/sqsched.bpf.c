// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqsched.bpf.c - green-process scheduling of sqvm processes, from the process, I/O and
 * GC probes (the process and I/O events in batches, squeak:sched__batch): per process, activations, time on the CPU, the run-queue latency
 * (process__ready to process__activate, as runqlat measures it for threads) as a
 * histogram, and the time spent blocked on Semaphores, Delays and descriptors and
 * paused by collections; its longest run and how late its Delays let it run again;
 * and the Semaphore waits by Semaphore, method, waiter and the process whose signal
 * ended them. The states are bpf/sqgreen.bpf.h's; every interval of a
 * process's life is charged to the one state it was in. All of it is aggregated here;
 * -e also sends one event per switch. */
#include "sqvm.bpf.h"
#include "sqgreen.bpf.h"
#include "sqbatch.bpf.h"
#include "sqsched.h"

const volatile bool millis = false;	/* -m */
const volatile bool events = false;	/* -e */

/* Looked up on every record: a slot table (bpf/sqslots.bpf.h), stats_find(pid, id). */
struct stats_slot {
	struct sq_slot h;
	struct sqsched_stats v;
};

SQ_SLOT_MAPS(stats_slots, stats_spill, stats_spilled, struct stats_slot, SQSCHED_SLOTS, SQSCHED_MAX_PROCS)
_Static_assert(sizeof(struct stats_slot) == sizeof(struct sqsched_slot), "sqsched.h: the slot's layout");
_Static_assert(sizeof(struct green_slot) == sizeof(struct sqsched_green_slot), "sqsched.h: the green slot's layout");

static __always_inline struct sqsched_stats *stats_find(__u32 pid, __u64 id)
{
	return sq_slots_find(&stats_slots, &stats_spill, &stats_spilled, SQSCHED_SLOTS, pid, id);
}

static __always_inline struct sqsched_stats *stats_insert(__u32 pid, __u64 id, const struct sqsched_stats *init)
{
	return sq_slots_insert(&stats_slots, &stats_spill, &stats_spilled, SQSCHED_SLOTS, sizeof(*init), pid, id, init);
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sqsched_stats);
} zero_stats SEC(".maps");

/* The Semaphore waits (sqsched.h): a row per (VM, Semaphore, method, waiter, signaller). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQSCHED_MAX_SEM_ROWS);
	__type(key, struct sqsched_sem_key);
	__type(value, struct sqsched_sem_stats);
} sems SEC(".maps");

/* Per VM thread: the process that ran there last (for -e's "from"). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} last_ran SEC(".maps");

__u64 lost = 0;		/* processes or events that found no room */

static __always_inline struct sqsched_stats *stats_of(__u32 pid, __u64 id, const char *name)
{
	struct sqsched_stats *s = stats_find(pid, id), *z;
	__u32 zero = 0;

	if (s)
		return s;
	z = bpf_map_lookup_elem(&zero_stats, &zero);
	if (!z)
		return NULL;
	/* z is per-CPU scratch: it still holds the name of the last row made on this CPU,
	 * which a row made without a name must not inherit (review finding 20). */
	__builtin_memset(z->name, 0, sizeof(z->name));
	if (name)
		bpf_probe_read_user_str(z->name, sizeof(z->name), name);
	s = stats_insert(pid, id, z);
	if (!s)
		__sync_fetch_and_add(&lost, 1);
	return s;
}

/* process__ready's reason when a Semaphore's signal made the process ready
 * (probes/README.md: 0 resumed, 1 signalled, 2 its Delay expired, 3 yielded, 4 io). */
#define READY_SIGNALLED 1

/* The records are the probes' events, handled in order with each record's own time
 * (the VM's, when the event happened; the batch arrives later). They are all one VM
 * thread's: its running process and the one that ran last stay here while the batch
 * is walked, and go back to their maps after it. */
struct batch_state {
	__u32 pid, tid;
	struct sq_green_running cur;
	__u64 last;		/* the process that ran last on the thread (0: none seen) */
};

/* A batch's Semaphore waits, added up here before they go to the sems map: a handoff
 * between a few processes makes the same few rows over and over, and comparing a key
 * with a few others costs less than hashing it into the map (tests/bench/tools.sh's
 * sqsched row, a ping-pong of two processes: 47.5 ns of BPF a switch without it, 38.4
 * with it, kernel.bpf_stats_enabled; 28.3 before the table). Flushed at the end
 * of every batch. */
#define SEM_PENDING 4

struct sem_pending {
	__u32 n;
	__u32 pad;
	struct {
		struct sqsched_sem_key key;
		struct sqsched_sem_stats st;
	} e[SEM_PENDING];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sem_pending);
} sem_pendings SEC(".maps");

/* add into k's row of the sems map. Verified once (bpf/sqvm.bpf.h), as the two below. */
SQ_VERIFIED_ONCE int sem_row_add(const struct sqsched_sem_key *k, const struct sqsched_sem_stats *add)
{
	static const struct sqsched_sem_stats zero;
	struct sqsched_sem_stats *s;
	struct sq_vm_offsets *vm;
	bool created = false;
	__u32 pid;

	if (!k || !add)
		return 0;
	s = sq_lookup_or_init(&sems, k, &zero, &created);
	if (!s) {
		__sync_fetch_and_add(&lost, add->waits);
		return 0;
	}
	pid = k->pid;
	if (created && (vm = bpf_map_lookup_elem(&vms, &pid)))
		sq_remember_method(pid, k->method, vm->method_print_name);
	/* plain adds: a row is one VM's, whose one thread runs this */
	s->waits += add->waits;
	s->wait_ns += add->wait_ns;
	if (add->max_ns > s->max_ns)
		s->max_ns = add->max_ns;
	return 0;
}

/* This CPU's pending Semaphore rows into the sems map. */
SQ_VERIFIED_ONCE int sem_flush(void)
{
	__u32 zero = 0;
	struct sem_pending *p = bpf_map_lookup_elem(&sem_pendings, &zero);

	if (!p)
		return 0;
	for (__u32 i = 0; i < SEM_PENDING; i++) {
		if (i >= p->n)
			break;
		sem_row_add(&p->e[i].key, &p->e[i].st);
	}
	p->n = 0;
	return 0;
}

static __always_inline bool same_sem_key(const struct sqsched_sem_key *a, const struct sqsched_sem_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	for (int i = 0; i < sizeof(*a) / 8; i++)
		if (x[i] != y[i])
			return false;
	return true;
}

/* A Semaphore wait that ended after ns: into its pending row (a new one, the table
 * flushed first if it is full). */
SQ_VERIFIED_ONCE int sem_wait_end(const struct sqsched_sem_key *k, __u64 ns)
{
	__u32 zero = 0, n, i, at = SEM_PENDING;
	struct sem_pending *p = bpf_map_lookup_elem(&sem_pendings, &zero);

	if (!p || !k)
		return 0;
	n = p->n;
	for (i = 0; i < SEM_PENDING; i++) {
		if (i >= n)
			break;
		if (same_sem_key(&p->e[i].key, k)) {
			at = i;
			break;
		}
	}
	if (at == SEM_PENDING) {
		if (n >= SEM_PENDING) {
			sem_flush();
			n = 0;
		}
		at = n & (SEM_PENDING - 1);
		p->e[at].key = *k;
		__builtin_memset(&p->e[at].st, 0, sizeof(p->e[at].st));
		p->n = at + 1;
	}
	at &= SEM_PENDING - 1;
	p->e[at].st.waits++;
	p->e[at].st.wait_ns += ns;
	if (ns > p->e[at].st.max_ns)
		p->e[at].st.max_ns = ns;
	return 0;
}

/* A move of a process into a state (move() below): global subprograms take at most
 * five arguments. */
struct move {
	__u64 id;		/* the process */
	__u64 now;
	__u64 name;		/* the address of its name in the VM (0: none) */
	__u32 pid;		/* its VM */
	__u32 to;		/* the state it enters */
	__u32 activation;	/* it is an activation: counted */
	__u32 pad;
};

/* Process m->id enters state m->to: the time in the state it leaves goes to its stats
 * (and an activation, if it is one: one stats lookup for both). r is the record that
 * moves it (NULL: a collection's edge, or another process's activation), b the batch's
 * state (NULL outside a batch). Answers that time if it was ready (its run-queue
 * latency), else 0. Verified once (bpf/sqvm.bpf.h): inlined in its five callers, the
 * verifier walked its paths again in each of theirs (sched_batch: 42,201 verified
 * instructions). */
SQ_VERIFIED_ONCE __u64 move(const struct batch_state *b, const SqEventRecord *r, const struct move *m)
{
	if (!m)
		return 0;
	__u32 pid = m->pid, to = m->to;
	__u64 id = m->id, now = m->now;
	const char *name = (const char *)m->name;
	bool activation = m->activation;
	struct sq_green old;
	struct sq_green *g = sq_green_enter(pid, id, to, now, &old);
	__u32 from = old.state;
	__u64 ns = from == SQ_GREEN_UNKNOWN ? 0 : now - old.since_ns, t;
	struct sqsched_stats *s;

	/* What it waits on, for the end of the wait; a Delay's end stays until it runs. */
	if (g && r && r->kind == SQ_EV_PROCESS_WAIT) {
		g->wait_on = r->process.semaphore;
		g->wait_method = r->process.method;
		g->wait_until_ns = r->process.semaphore ? 0 : r->ts + r->process.timeout;
	} else if (g && old.wait_until_ns && !(from == SQ_GREEN_DELAY && to == SQ_GREEN_READY)) {
		g->wait_until_ns = 0;
	}
	if (from == SQ_GREEN_UNKNOWN && !name)
		return 0;
	s = stats_of(pid, id, name);
	if (!s)
		return 0;
	/* Plain adds: a process's row is written by its VM's one thread. */
	if (activation)
		s->activations++;
	if (sq_green_runs(from) && !sq_green_runs(to) && old.run_ns) {
		t = now - old.run_ns;
		if (t > s->max_run_ns)
			s->max_run_ns = t;
	}
	if (from == SQ_GREEN_READY && to == SQ_GREEN_RUNNING && old.wait_until_ns) {
		t = now > old.wait_until_ns ? now - old.wait_until_ns : 0;
		s->delay_overshoots++;
		s->delay_overshoot_ns += t;
		if (t > s->delay_overshoot_max_ns)
			s->delay_overshoot_max_ns = t;
	}
	switch (from) {
	case SQ_GREEN_RUNNING:
		s->cpu_ns += ns;
		break;
	case SQ_GREEN_READY:
		if (to != SQ_GREEN_RUNNING)
			break;	/* suspended or ended while ready: not a run-queue latency */
		s->runq_count++;
		s->runq_ns += ns;
		if (ns > s->runq_max_ns)
			s->runq_max_ns = ns;
		s->slots[sq_hist_slot(millis ? ns / 1000000 : ns / 1000)]++;
		return ns;
	case SQ_GREEN_SEMAPHORE: {
		struct sqsched_sem_key k = { .pid = pid, .semaphore = old.wait_on, .method = old.wait_method,
					     .waiter = id };

		s->sem_waits++;
		s->sem_wait_ns += ns;
		/* the process that signalled runs on the thread when the waiter is readied */
		if (b && r && r->kind == SQ_EV_PROCESS_READY && r->arg == READY_SIGNALLED && b->cur.known)
			k.signaller = b->cur.id;
		sem_wait_end(&k, ns);
		if (!b)		/* outside a batch: no flush follows */
			sem_flush();
		break;
	}
	case SQ_GREEN_DELAY:
		s->delay_waits++;
		s->delay_wait_ns += ns;
		break;
	case SQ_GREEN_IO:
		s->io_waits++;
		s->io_wait_ns += ns;
		break;
	case SQ_GREEN_GC:
		s->gcs++;
		s->gc_ns += ns;
		break;
	}
	return 0;
}

static __always_inline void on_activate(struct batch_state *b, const SqEventRecord *r, __u64 id, const char *name,
					__u64 now)
{
	struct move m = { .now = now, .pid = b->pid, .to = SQ_GREEN_UNKNOWN };
	__u64 lat, from, prev;
	__u32 tid = b->tid;

	sq_green_activate_in(&b->cur, id, &prev);
	if (prev) {
		m.id = prev;
		move(b, NULL, &m);
	}
	m.id = id;
	m.name = (__u64)name;
	m.to = SQ_GREEN_RUNNING;
	m.activation = 1;
	lat = move(b, r, &m);
	/* The process that ran last on this VM thread, even if it has stopped running
	 * (blocked, ended): 0 only before the first activation seen. */
	from = b->last;
	b->last = id;
	if (events) {
		struct sqsched_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
		if (!e) {
			__sync_fetch_and_add(&lost, 1);
			return;
		}
		e->ts_ns = now;
		e->from = from;
		e->to = id;
		e->runq_ns = lat;
		e->pid = b->pid;
		e->tid = tid;
		bpf_probe_read_user_str(e->to_name, sizeof(e->to_name), name);
		bpf_ringbuf_submit(e, 0);
	}
}

/* id (r's process) stops running (if it was) and enters state to. */
static __always_inline void stop_into(struct batch_state *b, const SqEventRecord *r, __u64 id, const char *name,
				      __u32 to, __u64 now)
{
	sq_green_stop_in(&b->cur, id);
	struct move m = { .id = id, .now = now, .name = (__u64)name, .pid = b->pid, .to = to };

	move(b, r, &m);
}

static __always_inline void on_exit(struct batch_state *b, const SqEventRecord *r, __u64 id, __u64 now)
{
	struct sqsched_stats *s;

	stop_into(b, r, id, NULL, SQ_GREEN_NSTATES, now);
	s = stats_find(b->pid, id);
	if (s)
		s->exited = 1;
}

static long on_record(__u32 i, void *ctx)
{
	const SqEventRecord *r = sq_batch_record(i);
	struct batch_state *b = ctx;
	const char *name;
	__u64 id;
	__u32 to;

	if (!r)
		return 1;
	if (!sq_green_transition(r, &id, &to))
		return 0;
	name = (const char *)r->process.name;
	if (to == SQ_GREEN_RUNNING)
		on_activate(b, r, id, name, r->ts);
	else if (to == SQ_GREEN_NSTATES)
		on_exit(b, r, id, r->ts);
	else
		stop_into(b, r, id, name, to, r->ts);
	return 0;
}

SEC("usdt")
int BPF_USDT(sched_batch, __u64 records, __u32 count)
{
	__u64 pt = bpf_get_current_pid_tgid();
	struct batch_state b = { .pid = pt >> 32, .tid = (__u32)pt };
	__u32 n = sq_batch_load(records, count);
	__u64 *last;

	if (!n)
		return 0;
	sq_green_running_load(b.tid, &b.cur);
	last = bpf_map_lookup_elem(&last_ran, &b.tid);
	b.last = last ? *last : 0;
	bpf_loop(n, on_record, &b, 0);
	sem_flush();
	sq_green_running_store(b.tid, &b.cur);
	if (b.last)
		bpf_map_update_elem(&last_ran, &b.tid, &b.last, BPF_ANY);
	return 0;
}

/* A collection pauses the running process (it runs at that process's safe point). */
static __always_inline int gc_edge(bool begin)
{
	__u64 pt = bpf_get_current_pid_tgid(), id;

	if (sq_green_current((__u32)pt, &id)) {
		struct move m = { .id = id, .now = bpf_ktime_get_ns(), .pid = pt >> 32,
				  .to = begin ? SQ_GREEN_GC : SQ_GREEN_RUNNING };

		move(NULL, NULL, &m);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(gc_begin) { return gc_edge(true); }

SEC("usdt")
int BPF_USDT(gc_end) { return gc_edge(false); }

/* A VM that starts while sqsched traces: where its Methods keep their names. */
SEC("usdt")
int BPF_USDT(vm_start, char *version, __u64 offsets)
{
	sq_learn_vm(offsets);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

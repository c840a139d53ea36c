// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqsched.bpf.c - green-process scheduling of sqvm processes, from the process probes:
 * per process, activations, time on the CPU, the run-queue latency (process__ready to
 * process__activate, as runqlat measures it for threads) as a histogram, and the time
 * spent blocked on Semaphores and on Delays (process__wait to process__ready). All of
 * it is aggregated here; -e also sends one event per switch. */
#include "sqvm.bpf.h"
#include "sqsched.h"

const volatile bool millis = false;	/* -m */
const volatile bool events = false;	/* -e */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQSCHED_MAX_PROCS);
	__type(key, struct sqsched_key);
	__type(value, struct sqsched_stats);
} stats SEC(".maps");

/* Per process: since when it is ready, or blocked (and on what). */
struct proc_state {
	__u64 ready_ns;
	__u64 wait_ns;
	__u32 wait_delay;	/* 1: a Delay, 0: a Semaphore */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SQSCHED_MAX_PROCS);
	__type(key, struct sqsched_key);
	__type(value, struct proc_state);
} states SEC(".maps");

/* Per VM thread: the running process, and since when. */
struct proc_running {
	__u64 id;
	__u64 since_ns;
	__u32 known;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct proc_running);
} runnings SEC(".maps");

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

__u64 lost = 0;		/* processes or events that found no room */

static __always_inline struct sqsched_stats *stats_of(__u32 pid, __u64 id, const char *name)
{
	struct sqsched_key k = { .pid = pid, .id = id };
	struct sqsched_stats *s = bpf_map_lookup_elem(&stats, &k), *z;
	__u32 zero = 0;

	if (s)
		return s;
	z = bpf_map_lookup_elem(&zero_stats, &zero);
	if (!z)
		return NULL;
	if (name)
		bpf_probe_read_user_str(z->name, sizeof(z->name), name);
	s = sq_lookup_or_init(&stats, &k, z, NULL);
	if (!s)
		__sync_fetch_and_add(&lost, 1);
	return s;
}

static __always_inline struct proc_state *state_of(__u32 pid, __u64 id)
{
	struct sqsched_key k = { .pid = pid, .id = id };
	struct proc_state fresh = {}, *st = bpf_map_lookup_elem(&states, &k);

	if (st)
		return st;
	bpf_map_update_elem(&states, &k, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&states, &k);
}

/* The running process's CPU time up to now. */
static __always_inline void charge_running(__u32 pid, __u32 tid, __u64 now)
{
	struct proc_running *r = bpf_map_lookup_elem(&runnings, &tid);
	struct sqsched_stats *s;

	if (!r || !r->known)
		return;
	s = stats_of(pid, r->id, NULL);
	if (s)
		__sync_fetch_and_add(&s->cpu_ns, now - r->since_ns);
	r->since_ns = now;
}

SEC("usdt")
int BPF_USDT(process_activate, __u64 id, char *name, int priority)
{
	__u64 pt = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), lat = 0, from = 0, max;
	__u32 pid = pt >> 32, tid = (__u32)pt;
	struct proc_running *r = bpf_map_lookup_elem(&runnings, &tid), fresh = {};
	struct sqsched_stats *s;
	struct proc_state *st;

	/* The process that ran last on this VM thread, even if it has stopped running
	 * (blocked, ended): 0 only before the first activation seen. */
	if (r)
		from = r->id;
	charge_running(pid, tid, now);
	s = stats_of(pid, id, name);
	st = state_of(pid, id);
	if (s) {
		__sync_fetch_and_add(&s->activations, 1);
		if (st && st->ready_ns) {
			lat = now - st->ready_ns;
			__sync_fetch_and_add(&s->runq_count, 1);
			__sync_fetch_and_add(&s->runq_ns, lat);
			max = s->runq_max_ns;
			if (lat > max)
				s->runq_max_ns = lat;	/* one VM thread per key: no race */
			__sync_fetch_and_add(&s->slots[sq_hist_slot(millis ? lat / 1000000 : lat / 1000)], 1);
		}
	}
	if (st)
		st->ready_ns = 0;
	fresh.id = id;
	fresh.since_ns = now;
	fresh.known = 1;
	bpf_map_update_elem(&runnings, &tid, &fresh, BPF_ANY);
	if (events) {
		struct sqsched_event *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
		if (!e) {
			__sync_fetch_and_add(&lost, 1);
			return 0;
		}
		e->ts_ns = now;
		e->from = from;
		e->to = id;
		e->runq_ns = lat;
		e->pid = pid;
		e->tid = tid;
		bpf_probe_read_user_str(e->to_name, sizeof(e->to_name), name);
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

/* The running process stops running (it yields, is preempted, or blocks): its CPU time
 * ends here, not at the next activation (the VM may sleep in between). */
static __always_inline void stop_running(__u32 pid, __u32 tid, __u64 id, __u64 now)
{
	struct proc_running *r = bpf_map_lookup_elem(&runnings, &tid);

	if (r && r->known && r->id == id) {
		charge_running(pid, tid, now);
		r->known = 0;
	}
}

SEC("usdt")
int BPF_USDT(process_ready, __u64 id, char *name, int reason)
{
	__u64 pt = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 pid = pt >> 32;
	struct proc_state *st = state_of(pid, id);
	struct sqsched_stats *s;

	stop_running(pid, (__u32)pt, id, now);
	if (!st)
		return 0;
	st->ready_ns = now;
	if (st->wait_ns) {
		s = stats_of(pid, id, name);
		if (s) {
			if (st->wait_delay) {
				__sync_fetch_and_add(&s->delay_waits, 1);
				__sync_fetch_and_add(&s->delay_wait_ns, now - st->wait_ns);
			} else {
				__sync_fetch_and_add(&s->sem_waits, 1);
				__sync_fetch_and_add(&s->sem_wait_ns, now - st->wait_ns);
			}
		}
		st->wait_ns = 0;
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(process_wait, __u64 id, char *name, __u64 semaphore, __u64 timeout)
{
	__u64 pt = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 pid = pt >> 32;
	struct proc_state *st = state_of(pid, id);

	stop_running(pid, (__u32)pt, id, now);
	if (st) {
		st->wait_ns = now;
		st->wait_delay = semaphore == 0;
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(process_exit, __u64 id, char *name)
{
	__u64 pt = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 pid = pt >> 32, tid = (__u32)pt;
	struct sqsched_key k = { .pid = pid, .id = id };
	struct sqsched_stats *s;

	stop_running(pid, tid, id, now);
	s = bpf_map_lookup_elem(&stats, &k);
	if (s)
		s->exited = 1;
	bpf_map_delete_elem(&states, &k);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

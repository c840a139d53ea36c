// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_replay.h - sqslow's replay of its messages (bpf/sqslow.h): the green processes'
 * states as bpf/sqgreen.bpf.h tells them (running, ready, Semaphore, Delay, I/O, GC),
 * the requests paired as bpf/sqrequest.bpf.h pairs them, each with where its time went
 * as sqreq charges it, and who woke whom. The same replay runs on the messages as they
 * come (to find the slow requests) and again over the window (to write a capture): a
 * sink gets what it finds. */
#ifndef SQSLOW_REPLAY_H
#define SQSLOW_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "event_batch.h"
#include "sqgreen.h"
#include "sqslow.h"

/* sqslow's states: the green processes' (bpf/sqgreen.h: SQ_GREEN_*), and one of its own:
 * the process was the running one while its VM's thread was off the CPU (the kernel had
 * preempted it, or it was blocked in a system call or a page fault: sched_switch), which
 * the VM's records alone would call its CPU. */
#define SQSLOW_OFFCPU SQ_GREEN_NSTATES
#define SQSLOW_NSTATES (SQ_GREEN_NSTATES + 1)

/* The (state, method) shares a request keeps, largest first when it ends. */
#define SQSLOW_SHARES 8

struct sqslow_share {
	__u64 method;		/* the Method * it waited in (a GC: that ran when it began) */
	__u64 ns;
	__u32 state;		/* enum sq_green_state */
	__u32 pad;
};

/* A wait's details, as a slice of it is written. */
struct sqslow_wait {
	__u64 method;		/* the Method * it waited in (0: unknown) */
	__u64 semaphore;	/* a Semaphore wait's identity hash */
	__u64 holder;		/* a Semaphore's last taker when the wait began (0: none) */
	__u64 waker;		/* the process whose signal ended it (0: none seen) */
	__u64 waker_method;	/* ... and the Method * it signalled in (0: unknown) */
	__u64 fd;		/* an I/O wait's descriptor */
	__u32 op;		/* ... and its op (SQ_IO_READ ...) */
	__u32 reason;		/* process__ready's reason that ended a wait (0 resumed ...) */
};

struct sqslow_request {
	__u32 pid;
	__s32 status;
	__u64 id, route, process;
	__u64 begin_ns, end_ns;
	/* Its W3C trace context (SQ_EV_REQUEST_TRACE): all 0 without one */
	__u64 trace_hi, trace_lo, parent, span;
	__u64 state_ns[SQSLOW_NSTATES];
	struct sqslow_share shares[SQSLOW_SHARES];
	/* Its longest Semaphore wait: who held the Semaphore, who signalled it and where */
	__u64 sem_max_ns, sem_holder, sem_waker, sem_waker_method;
	/* Its longest collection pause: full or not */
	__u64 gc_max_ns;
	bool gc_full;
};

/* What the replay finds, as it finds it (any of them NULL: not wanted). */
struct sqslow_sink {
	void *ctx;
	/* process (of VM pid) was in state from begin to end */
	void (*slice)(void *ctx, __u32 pid, __u64 process, __u32 state, __u64 begin, __u64 end,
		      const struct sqslow_wait *w);
	/* a request ended (begun after the replay's since) */
	void (*request)(void *ctx, const struct sqslow_request *r);
	/* waker's signal readied waiter at ts */
	void (*flow)(void *ctx, __u32 pid, __u64 waker, __u64 waiter, __u64 ts);
	/* an I/O call (an SQ_EV_IO record) */
	void (*io)(void *ctx, __u32 pid, const SqEventRecord *r);
	/* a collection paused process from begin to end (method: where it ran) */
	void (*gc)(void *ctx, __u32 pid, __u64 process, __u64 method, bool full, __u64 begin, __u64 end);
	void (*sample)(void *ctx, const struct sqslow_sample *s);
	/* an allocation sample (an SQ_EV_ALLOC_SAMPLE record) */
	void (*alloc)(void *ctx, __u32 pid, const SqEventRecord *r);
};

struct sqslow_replay;

/* A replay that takes the records stamped at or after since_ns (older ones are of a tool
 * before this one: bpf/sqbatch.bpf.h). NULL: out of memory. */
struct sqslow_replay *sqslow_replay_new(__u64 since_ns, const struct sqslow_sink *sink);
/* One message (bpf/sqslow.h) of size bytes; a malformed one is skipped (counted). */
void sqslow_replay_feed(struct sqslow_replay *r, const void *data, size_t size);
/* The time of a message's newest event (0: none). */
__u64 sqslow_msg_ts(const void *data, size_t size);
/* When the oldest request still open began (~0ULL: none open). */
__u64 sqslow_replay_oldest_open(const struct sqslow_replay *r);
/* The states still open at ts, ended there as slices (the end of a capture). */
void sqslow_replay_close(struct sqslow_replay *r, __u64 ts);
/* Counters: requests not followed (begun before the replay's start, or nested),
 * malformed messages. */
__u64 sqslow_replay_unseen(const struct sqslow_replay *r);
__u64 sqslow_replay_malformed(const struct sqslow_replay *r);
/* Records older than their process's last transition (applied at its time). */
__u64 sqslow_replay_reordered(const struct sqslow_replay *r);
void sqslow_replay_free(struct sqslow_replay *r);

#endif

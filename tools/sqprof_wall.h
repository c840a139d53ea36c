// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_wall.h - sqprof --wall's clock: at F Hz, in the tool's own event loop, one run
 * of the BPF task iterator (bpf/sqprof.bpf.c, wall_sample), which samples every live
 * green process of each traced VM whatever its state. */
#ifndef SQPROF_WALL_H
#define SQPROF_WALL_H

#include <stdint.h>
#include <sys/types.h>

struct bpf_link;
struct bpf_program;
struct sq_loop;

struct sqp_wall {
	struct bpf_link *link;		/* the iterator */
	int timerfd;			/* F Hz, CLOCK_MONOTONIC */
	uint64_t ticks;			/* iterator runs */
	uint64_t missed;		/* ticks the tool was too late for (not sampled) */
	uint64_t errors;		/* runs that failed */
};

#define SQP_WALL_INIT { .timerfd = -1 }

/* Attaches prog as a task iterator (over pid's threads only, or every task if pid is 0)
 * and starts the clock: a tick every 1/hz s, the first one a period from now, run
 * inside sq_loop_wait. 0, or -1 (reported). */
int sqp_wall_start(struct sqp_wall *w, struct bpf_program *prog, long hz, pid_t pid, struct sq_loop *loop);

/* Stops the clock and detaches (idempotent). */
void sqp_wall_stop(struct sqp_wall *w);

#endif

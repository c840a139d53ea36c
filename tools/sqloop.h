// SPDX-License-Identifier: BSD-2-Clause
/* sqloop.h - the event loop every tool runs once attached: one epoll over SIGINT and
 * SIGTERM (a signalfd), the interval ([interval]) and the duration (-d) timers, the -p
 * process's exit (a pidfd) and a ring buffer, whose records are consumed as they come.
 *
 * Open it before attaching, so that Ctrl-C is caught from the start, and restart its
 * timers once attached (attaching can take a while). SIGINT and SIGTERM end the loop
 * with a last report: the tool exits 0. */
#ifndef SQLOOP_H
#define SQLOOP_H

#include <stdbool.h>
#include <stddef.h>

#include "sqopts.h"

/* Why sq_loop_wait returned. */
enum sq_wake {
	SQ_WAKE_ERROR = -1,
	SQ_WAKE_TICK = 1,	/* an interval ended */
	SQ_WAKE_STOP,		/* SIGINT or SIGTERM */
	SQ_WAKE_EXITED,		/* the -p process exited (its ring buffer records consumed) */
	SQ_WAKE_DEADLINE,	/* -d: the duration is over */
};

struct ring_buffer;
struct sq_loop {
	int epfd, sigfd, timerfd;
	int deadlinefd;		/* -d: one-shot timer, or -1 */
	const struct sq_common *c;
	struct ring_buffer *rb;	/* owned: freed by sq_loop_close */
	struct sq_watch {	/* sq_loop_watch */
		int fd;
		int (*fn)(void *ctx);
		void *ctx;
	} watches[4];
	int nwatches;
};

/* A loop that sq_loop_close may close before sq_loop_open ran. */
#define SQ_LOOP_INIT { .epfd = -1, .sigfd = -1, .timerfd = -1, .deadlinefd = -1 }

int sq_loop_open(struct sq_loop *l, const struct sq_common *c);

/* Consumes the ring buffer map map_fd as records arrive: fn(ctx, data, size) for each,
 * which answers sq_rb_yield() (or a negative error). */
typedef int (*sq_record_fn)(void *ctx, void *data, size_t size);
int sq_loop_add_ringbuf(struct sq_loop *l, int map_fd, sq_record_fn fn, void *ctx);

/* What a record callback answers: 0, or now and then -EINTR, to let the loop look at its
 * other events between batches of a busy ring buffer. */
int sq_rb_yield(void);

/* One more fd to watch (a server's, say): fn(ctx) runs inside sq_loop_wait whenever it
 * is readable, and must not block; it wakes no report. At most 4. */
int sq_loop_watch(struct sq_loop *l, int fd, int (*fn)(void *ctx), void *ctx);

/* Starts the interval (and the -d duration) over from now. */
int sq_loop_restart_timer(struct sq_loop *l);

/* Waits for the next wake-up; the records that arrived are consumed first. */
int sq_loop_wait(struct sq_loop *l);

/* The usual main loop: report(ctx, last) at every wake-up, until a wake-up that is not
 * an interval's end or [count] reports; last says it is the final one, and comes after
 * sq_detach_all (sqattach.h): what it reads no probe changes any more. Answers 0, or
 * the first error (report's, or -EIO from the loop). */
int sq_loop_run(struct sq_loop *l, int (*report)(void *ctx, bool last), void *ctx);

/* Consumes the records in the ring buffer now: every one (max_batches 0: after
 * detaching, at the end of a trace, when the buffer is finite), or at most max_batches
 * batches of SQ_RB_BATCH while the probes still fire, so that a target firing them in a
 * loop cannot keep the caller here for ever: the rest wake the loop again. */
void sq_loop_drain(struct sq_loop *l, int max_batches);

void sq_loop_close(struct sq_loop *l);

#endif

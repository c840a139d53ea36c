// SPDX-License-Identifier: BSD-2-Clause
/* sqloop.c - the event loop of every tool; see sqloop.h. */
#define _GNU_SOURCE
#include "sqloop.h"
#include "sqattach.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Sets timer fd to expire ns from now (and every ns after, if periodic). */
static int arm(int fd, __u64 ns, bool periodic)
{
	struct itimerspec its = { .it_value = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) } };

	if (periodic)
		its.it_interval = its.it_value;
	return timerfd_settime(fd, 0, &its, NULL);
}

/* A new timer fd, armed, in the loop's epoll set. */
static int add_timer(struct sq_loop *l, int *fd, __u64 ns, bool periodic)
{
	*fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	return *fd < 0 || arm(*fd, ns, periodic) < 0 || epoll_add(l->epfd, *fd) < 0 ? -1 : 0;
}

int sq_loop_open(struct sq_loop *l, const struct sq_common *c)
{
	sigset_t set;

	memset(l, 0, sizeof(*l));
	l->c = c;
	l->sigfd = l->timerfd = l->deadlinefd = -1;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		goto fail;
	/* A shell starts background commands with SIGINT ignored; an ignored signal is
	 * discarded rather than queued for the signalfd, so restore the default first. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		goto fail;
	l->sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (l->sigfd < 0 || epoll_add(l->epfd, l->sigfd) < 0)
		goto fail;
	if ((c->interval_ns && add_timer(l, &l->timerfd, c->interval_ns, true)) ||
	    (c->duration_ns && add_timer(l, &l->deadlinefd, c->duration_ns, false)))
		goto fail;
	if (c->pidfd >= 0 && epoll_add(l->epfd, c->pidfd) < 0)
		goto fail;
	return 0;
fail:
	sq_error("cannot set up the event loop: %s", strerror(errno));
	return -errno;
}

int sq_loop_restart_timer(struct sq_loop *l)
{
	if (l->deadlinefd >= 0 && arm(l->deadlinefd, l->c->duration_ns, false) < 0) {
		sq_error("cannot set the duration timer: %s", strerror(errno));
		return -errno;
	}
	if (l->timerfd >= 0 && arm(l->timerfd, l->c->interval_ns, true) < 0) {
		sq_error("cannot set the interval timer: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

int sq_loop_add_ringbuf(struct sq_loop *l, int map_fd, sq_record_fn fn, void *ctx)
{
	l->rb = ring_buffer__new(map_fd, fn, ctx, NULL);
	if (!l->rb || epoll_add(l->epfd, ring_buffer__epoll_fd(l->rb)) < 0) {
		sq_error("cannot open the ring buffer: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

int sq_loop_watch(struct sq_loop *l, int fd, int (*fn)(void *ctx), void *ctx)
{
	if (l->nwatches == (int)(sizeof(l->watches) / sizeof(l->watches[0])) || epoll_add(l->epfd, fd) < 0) {
		sq_error("cannot watch fd %d: %s", fd, l->nwatches ? strerror(errno) : "too many");
		return -EINVAL;
	}
	l->watches[l->nwatches++] = (struct sq_watch){ fd, fn, ctx };
	return 0;
}

/* A watched fd is ready: its function. */
static void run_watch(struct sq_loop *l, int fd)
{
	for (int i = 0; i < l->nwatches; i++)
		if (l->watches[i].fd == fd)
			l->watches[i].fn(l->watches[i].ctx);
}

/* ring_buffer__consume reads until the buffer is empty, which a busy VM can keep it from
 * ever being: every SQ_RB_BATCH records the callbacks answer sq_rb_yield's -EINTR, which
 * stops the consumer, so the loop looks at Ctrl-C, the timers and the process between
 * batches. */
#define SQ_RB_BATCH 4096

int sq_rb_yield(void)
{
	static unsigned n;

	return ++n % SQ_RB_BATCH == 0 ? -EINTR : 0;
}

static int consume(struct sq_loop *l)
{
	int n;

	if (!l->rb)
		return 0;
	n = ring_buffer__consume(l->rb);
	if (n == -EINTR)
		n = 0;
	fflush(stdout);		/* what the callbacks printed, in whole batches */
	if (n < 0) {
		sq_error("reading the ring buffer: %s", strerror(-n));
		return SQ_WAKE_ERROR;
	}
	return 0;
}

int sq_loop_wait(struct sq_loop *l)
{
	for (;;) {
		struct epoll_event evs[8];
		bool tick = false, stop = false, exited = false, over = false;
		int n = epoll_wait(l->epfd, evs, 8, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sq_error("epoll_wait: %s", strerror(errno));
			return SQ_WAKE_ERROR;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == l->sigfd) {
				struct signalfd_siginfo si;
				if (read(l->sigfd, &si, sizeof(si)) > 0)
					stop = true;
			} else if (fd == l->timerfd) {
				__u64 expirations;
				if (read(l->timerfd, &expirations, sizeof(expirations)) > 0)
					tick = true;
			} else if (fd == l->deadlinefd) {
				over = true;
			} else if (fd == l->c->pidfd) {
				exited = true;
			} else {
				run_watch(l, fd);
			}
		}
		/* Records first: whatever the wake-up, what has arrived belongs before it. */
		if (consume(l) < 0)
			return SQ_WAKE_ERROR;
		if (stop)
			return SQ_WAKE_STOP;
		if (exited)
			return SQ_WAKE_EXITED;
		if (over)
			return SQ_WAKE_DEADLINE;
		if (tick)
			return SQ_WAKE_TICK;
	}
}

int sq_loop_run(struct sq_loop *l, int (*report)(void *ctx, bool last), void *ctx)
{
	long reports = 0;
	int wake, err;

	for (;;) {
		bool last;

		wake = sq_loop_wait(l);
		if (wake == SQ_WAKE_ERROR)
			return -EIO;
		last = wake != SQ_WAKE_TICK || (l->c->count && ++reports >= l->c->count);
		/* The last report reads what the probes left, key by key: detached first, they
		 * add nothing while it reads, so it is one moment. (sqio, read while attached:
		 * an open's row read, then 100 writes of the file it opened, then the writes'
		 * row, and a test saw more writes than opens allowed.) */
		if (last)
			sq_detach_all();
		err = report(ctx, last);
		if (err || last)
			return err;
	}
}

void sq_loop_drain(struct sq_loop *l, int max_batches)
{
	if (l->rb)
		for (int n = 1; ring_buffer__consume(l->rb) == -EINTR && n != max_batches; n++)
			;
	fflush(stdout);
}

void sq_loop_close(struct sq_loop *l)
{
	ring_buffer__free(l->rb);
	l->rb = NULL;
	if (l->deadlinefd >= 0)
		close(l->deadlinefd);
	if (l->timerfd >= 0)
		close(l->timerfd);
	if (l->sigfd >= 0)
		close(l->sigfd);
	if (l->epfd >= 0)
		close(l->epfd);
	l->epfd = l->sigfd = l->timerfd = l->deadlinefd = -1;
	l->nwatches = 0;
}

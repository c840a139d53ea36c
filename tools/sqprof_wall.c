// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_wall.c - sqprof --wall's clock (sqprof_wall.h). A sample of a waiting process
 * cannot be taken in the VM's context, as a CPU sample is: the VM does not run. So the
 * tool takes it, with a task iterator whose program reads the VM's memory through
 * bpf_copy_from_user_task: creating an iterator's fd and reading it runs the program
 * over every task on the machine, once, in this process. The VM pays nothing but the
 * page-table lock its memory is read under. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqloop.h"
#include "sqprof_wall.h"

/* One tick: the timer's expirations (more than one: ticks missed), and one sample. */
static int wall_tick(void *ctx)
{
	struct sqp_wall *w = ctx;
	uint64_t expirations = 0;
	char buf[64];
	ssize_t n;
	int fd;

	if (read(w->timerfd, &expirations, sizeof(expirations)) != sizeof(expirations) || !w->link)
		return 0;
	if (expirations > 1)
		w->missed += expirations - 1;
	fd = bpf_iter_create(bpf_link__fd(w->link));
	if (fd < 0) {
		w->errors++;
		return 0;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)	/* the program writes nothing: one read */
		;
	if (n < 0)
		w->errors++;
	close(fd);
	w->ticks++;
	return 0;
}

int sqp_wall_start(struct sqp_wall *w, struct bpf_program *prog, long hz, pid_t pid, struct sq_loop *loop)
{
	union bpf_iter_link_info linfo = { .task.pid = pid };
	LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &linfo, .link_info_len = sizeof(linfo));
	uint64_t period = 1000000000ULL / (uint64_t)hz;
	struct itimerspec its = {
		.it_value = { .tv_sec = period / 1000000000ULL, .tv_nsec = period % 1000000000ULL },
		.it_interval = { .tv_sec = period / 1000000000ULL, .tv_nsec = period % 1000000000ULL },
	};
	int err;

	/* -p: the kernel walks that process's threads only, not every task on the machine */
	w->link = bpf_program__attach_iter(prog, pid ? &opts : NULL);
	if (!w->link) {
		err = -errno;
		fprintf(stderr, "sqprof: cannot attach the task iterator (--wall needs kernel 5.18 or later): %s\n",
			strerror(-err));
		return -1;
	}
	w->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (w->timerfd < 0 || timerfd_settime(w->timerfd, 0, &its, NULL) < 0) {
		fprintf(stderr, "sqprof: cannot start the --wall clock: %s\n", strerror(errno));
		return -1;
	}
	return sq_loop_watch(loop, w->timerfd, wall_tick, w) ? -1 : 0;
}

void sqp_wall_stop(struct sqp_wall *w)
{
	if (w->timerfd >= 0) {
		struct itimerspec off = { 0 };
		timerfd_settime(w->timerfd, 0, &off, NULL);	/* the loop waits no more: no tick is lost */
		close(w->timerfd);
		w->timerfd = -1;
	}
	bpf_link__destroy(w->link);
	w->link = NULL;
}

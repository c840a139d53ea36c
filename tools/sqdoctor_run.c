// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor_run.c - the recorders as child processes (sqdoctor_run.h): one poll loop over
 * their pipes and a signalfd, in three phases: attaching (until every one says
 * "Tracing"), recording (the duration), draining (after SIGINT, until they exit). */
#define _GNU_SOURCE
#include "sqdoctor_run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sqopts.h"

/* How long the recorders may take to attach, and to print their reports once told to
 * stop, before they are given up (SIGKILL). */
#define ATTACH_TIMEOUT_NS (15ULL * 1000000000)
#define DRAIN_TIMEOUT_NS (15ULL * 1000000000)
/* How long sqdoctor waits, its report out, for them to finish detaching (about 0.1 s a
 * probe: sqreq's take 0.9 s) before it exits and leaves them to it. */
#define FINISH_TIMEOUT_NS (1ULL * 1000000000)

static int start(struct sq_recorder *r, pid_t pid, const char *tooldir, const sigset_t *oldmask)
{
	char path[PATH_MAX], pidarg[24];
	const char *argv[16];
	int out[2], err[2], n = 0;

	r->out_fd = r->err_fd = -1;
	r->status = -1;
	if (snprintf(path, sizeof(path), "%s/%s", tooldir, r->tool) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	argv[n++] = r->tool;
	argv[n++] = "-p";
	argv[n++] = pidarg;
	argv[n++] = "-j";
	for (int i = 0; r->args[i] && n < 15; i++)
		argv[n++] = r->args[i];
	argv[n] = NULL;
	if (pipe2(out, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(err, O_CLOEXEC) < 0) {
		close(out[0]);
		close(out[1]);
		return -errno;
	}
	r->child = fork();
	if (r->child < 0) {
		r->child = 0;
		close(out[0]), close(out[1]), close(err[0]), close(err[1]);
		return -errno;
	}
	if (r->child == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		/* if sqdoctor dies (SIGKILL), its recorders end too, and detach */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execv(path, (char *const *)argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", r->tool, path, strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	r->out_fd = out[0];
	r->err_fd = err[0];
	fcntl(r->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(r->err_fd, F_SETFL, O_NONBLOCK);
	return 0;
}

static void read_out(struct sq_recorder *r)
{
	for (;;) {
		ssize_t got;
		if (r->out_cap - r->out_len < 65536) {
			size_t cap = r->out_cap ? r->out_cap * 2 : 1 << 20;
			char *p;
			if (cap > SQ_RECORDER_OUT_MAX + 65536 || !(p = realloc(r->out, cap))) {
				char sink[65536];	/* over the bound: read and drop */
				got = read(r->out_fd, sink, sizeof(sink));
				if (got > 0) {
					r->out_cut = true;
					continue;
				}
				goto done;
			}
			r->out = p;
			r->out_cap = cap;
		}
		got = read(r->out_fd, r->out + r->out_len, r->out_cap - r->out_len - 1);
		if (got > 0) {
			r->out_len += got;
			r->out[r->out_len] = 0;
			continue;
		}
done:
		if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
			close(r->out_fd);
			r->out_fd = -1;
		}
		return;
	}
}

static void read_err(struct sq_recorder *r)
{
	for (;;) {
		char buf[4096];
		ssize_t got = read(r->err_fd, buf, sizeof(buf));
		if (got > 0) {
			size_t room = sizeof(r->err) - 1 - r->err_len;
			size_t n = (size_t)got < room ? (size_t)got : room;
			memcpy(r->err + r->err_len, buf, n);
			r->err_len += n;
			r->err[r->err_len] = 0;
			if (!r->tracing && (!strncmp(r->err, "Tracing", 7) || strstr(r->err, "\nTracing") ||
					    !strncmp(r->err, "Sampling", 8) || strstr(r->err, "\nSampling")))
				r->tracing = true;
			continue;
		}
		if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
			close(r->err_fd);
			r->err_fd = -1;
		}
		return;
	}
}

/* Reaps r if it has exited (or, with block, once it does). */
static void reap(struct sq_recorder *r, bool block)
{
	int st;

	if (!r->child || waitpid(r->child, &st, block ? 0 : WNOHANG) != r->child)
		return;
	r->child = 0;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool running(const struct sq_recorder *r)
{
	return r->child || r->out_fd >= 0 || r->err_fd >= 0;
}

/* It has written its final report (a whole line), or it has exited. */
static bool reported(const struct sq_recorder *r)
{
	const char *at;

	if (!running(r))
		return true;
	if (!r->final || !r->out || !(at = strstr(r->out, r->final)))
		return false;
	return strchr(at, '\n') != NULL;
}

/* One round of the loop: reads what the recorders wrote, reaps those that ended. Answers
 * true if SIGINT or SIGTERM came. */
static bool pump(struct sq_recorder *r, int n, int sigfd, int timeout_ms)
{
	struct pollfd fds[2 * 16 + 1];
	int nfds = 0;
	bool stop = false;

	fds[nfds++] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
	for (int i = 0; i < n; i++) {
		fds[nfds++] = (struct pollfd){ .fd = r[i].out_fd, .events = POLLIN };
		fds[nfds++] = (struct pollfd){ .fd = r[i].err_fd, .events = POLLIN };
	}
	if (poll(fds, nfds, timeout_ms) > 0 && (fds[0].revents & POLLIN)) {
		struct signalfd_siginfo si;
		while (read(sigfd, &si, sizeof(si)) == sizeof(si))
			stop = true;
	}
	for (int i = 0; i < n; i++) {
		if (r[i].out_fd >= 0)
			read_out(&r[i]);
		if (r[i].err_fd >= 0)
			read_err(&r[i]);
		reap(&r[i], false);
	}
	return stop;
}

static void signal_all(struct sq_recorder *r, int n, int sig)
{
	for (int i = 0; i < n; i++)
		if (r[i].child)
			kill(r[i].child, sig);
}

int sq_record(struct sq_recorder *r, int n, pid_t pid, __u64 duration_ns, const char *tooldir,
	      bool verbose, void (*on_start)(void *ctx), void *ctx, struct sq_window *w)
{
	sigset_t mask, oldmask;
	int sigfd, recorded = 0;
	__u64 deadline;
	bool stop = false;

	if (n > 16)
		return -1;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sigfd < 0) {
		sq_error("cannot watch signals: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int err = start(&r[i], pid, tooldir, &oldmask);
		if (err)
			snprintf(r[i].err, sizeof(r[i].err), "%s: cannot start: %s\n", r[i].tool, strerror(-err));
	}

	/* Attaching: until every recorder traces (or has given up). */
	deadline = sq_mono_ns() + ATTACH_TIMEOUT_NS;
	for (;;) {
		bool waiting = false;
		for (int i = 0; i < n; i++)
			waiting |= r[i].child && !r[i].tracing;
		if (!waiting || stop || sq_mono_ns() > deadline)
			break;
		stop = pump(r, n, sigfd, 50);
	}
	w->begin_ns = sq_mono_ns();
	if (verbose)
		for (int i = 0; i < n; i++)
			fprintf(stderr, "sqdoctor: %s %s\n", r[i].tool,
				r[i].tracing ? "attached" : "did not attach");
	if (on_start && !stop)
		on_start(ctx);

	/* Recording: the duration, unless interrupted or every recorder ended (the VM
	 * exited: each recorder of -p PID reports and exits with it). */
	deadline = w->begin_ns + duration_ns;
	while (!stop) {
		__u64 now = sq_mono_ns();
		bool any = false;
		for (int i = 0; i < n; i++)
			any |= r[i].child != 0;
		if (!any || now >= deadline)
			break;
		stop = pump(r, n, sigfd, (int)((deadline - now) / 1000000 < 100 ? (deadline - now) / 1000000 + 1 : 100));
	}
	w->end_ns = sq_mono_ns();
	w->interrupted = stop;
	w->vm_exited = kill(pid, 0) < 0 && errno == ESRCH;

	/* Draining: each prints its report on SIGINT, then detaches and exits. */
	signal_all(r, n, SIGINT);
	deadline = sq_mono_ns() + DRAIN_TIMEOUT_NS;
	for (;;) {
		bool any = false;
		for (int i = 0; i < n; i++)
			any |= !reported(&r[i]);
		if (!any)
			break;
		if (sq_mono_ns() > deadline) {
			signal_all(r, n, SIGKILL);
			for (int i = 0; i < n; i++) {
				reap(&r[i], true);
				if (r[i].out_fd >= 0)
					close(r[i].out_fd), r[i].out_fd = -1;
				if (r[i].err_fd >= 0)
					close(r[i].err_fd), r[i].err_fd = -1;
			}
			break;
		}
		pump(r, n, sigfd, 50);
	}
	close(sigfd);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	for (int i = 0; i < n; i++) {
		/* one that exited did so after its report only if it exited 0 */
		r[i].ok = r[i].tracing && r[i].out_len && (running(&r[i]) ? reported(&r[i]) : r[i].status == 0);
		recorded += r[i].ok;
	}
	if (!recorded) {
		const char *why = NULL;
		for (int i = 0; i < n && !why; i++)
			why = sq_recorder_error(&r[i]);
		sq_error("no recorder could trace PID %d%s%s", pid, why ? ": " : "", why ? why : "");
		return -1;
	}
	return 0;
}

void sq_record_finish(struct sq_recorder *r, int n)
{
	__u64 deadline = sq_mono_ns() + FINISH_TIMEOUT_NS;

	for (;;) {
		bool any = false;
		for (int i = 0; i < n; i++) {
			if (r[i].out_fd >= 0)
				read_out(&r[i]);
			if (r[i].err_fd >= 0)
				read_err(&r[i]);
			reap(&r[i], false);
			any |= r[i].child != 0;
		}
		if (!any)
			return;
		if (sq_mono_ns() > deadline)
			return;	/* they go on detaching on their own */
		usleep(20000);
	}
}

const char *sq_recorder_error(struct sq_recorder *r)
{
	char *line = r->err;

	while (*line) {
		char *nl = strchr(line, '\n');
		if (strncmp(line, "Tracing", 7) && strncmp(line, "libbpf:", 7)) {
			if (nl)
				*nl = 0;	/* the line alone, from now on */
			return line;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return NULL;
}

void sq_recorders_free(struct sq_recorder *r, int n)
{
	for (int i = 0; i < n; i++) {
		free(r[i].out);
		r[i].out = NULL;
	}
}

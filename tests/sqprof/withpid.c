// SPDX-License-Identifier: BSD-2-Clause
/* withpid - runs a program as a process of a chosen PID (clone3's set_tid; needs
 * CAP_SYS_ADMIN), so that tests/sqprof.sh can start a VM on the PID of one that has just
 * exited, as a busy host would in time: the PID reuse a profiler must not miss. Waits
 * for it and exits with its status (128 + signal if killed); 125 if the PID could not
 * be had (taken, or no clone3), 127 if the program could not run.
 *
 * USAGE: withpid PID PROGRAM [ARG...] */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>

int main(int argc, char **argv)
{
	pid_t want, child;
	struct clone_args args = { .exit_signal = SIGCHLD, .set_tid_size = 1 };
	int status;

	if (argc < 3 || (want = (pid_t)atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: withpid PID PROGRAM [ARG...]\n");
		return 2;
	}
	args.set_tid = (__u64)(unsigned long)&want;
	child = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (child < 0) {
		fprintf(stderr, "withpid: PID %d: %s\n", want, strerror(errno));
		return 125;
	}
	if (child == 0) {
		execv(argv[2], argv + 2);
		fprintf(stderr, "withpid: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	if (waitpid(child, &status, 0) < 0)
		return 125;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

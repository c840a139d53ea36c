// SPDX-License-Identifier: BSD-2-Clause
/* vforkshim.c - LD_PRELOAD'ed into a VM by tests/faults.sh: a thread of the VM calls
 * vfork() and its child sleeps for VFORKSHIM_SECONDS (default 30) before it exits, so
 * that for that long the thread is in the kernel's killable wait for its child, where
 * PTRACE_INTERRUPT cannot stop it (review finding 17: sqstack's waitpid for that stop
 * had no timeout, and the tool hung). The thread writes "vforked" on stderr first. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *in_vfork(void *arg)
{
	const char *s = getenv("VFORKSHIM_SECONDS");
	struct timespec t = { s ? atoi(s) : 30, 0 };
	pid_t child;

	(void)arg;
	fputs("vforked\n", stderr);
	child = vfork();
	if (child == 0) {
		/* the child may only call what is async-signal-safe, on the parent's stack */
		nanosleep(&t, NULL);
		_exit(0);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
	return NULL;
}

__attribute__((constructor)) static void start(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, in_vfork, NULL) == 0)
		pthread_detach(t);
}

// SPDX-License-Identifier: BSD-2-Clause
/* fakestart.c - a fake VM for sqstat's row table (security review, finding 5): it forks
 * N children that each fire squeak:vm__start and then _exit (mode "exit") or are
 * SIGKILLed by the parent (mode "kill"), never reaching vm__exit. The start carries no
 * debug offsets a tool can read, so sqstat knows each child from its events alone. It
 * has (never reached) the other sites sqstat attaches to as an exporter.
 *
 * Usage: fakestart N exit|kill GO   (waits for the file GO, so that the tracer is
 * attached first, then forks; prints "done" on stderr once every child is reaped). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "squeak_probes.h"

__attribute__((section(".probes"), aligned(64))) struct squeak_semaphores squeak_semaphores = { 0 };

/* What the tools look for in an executable to call it a VM: the symbol, not its contents
 * (zeros: no version any tool knows). */
__attribute__((used)) char sqvm_debug_offsets[256];

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 10000000 };
	int n = argc == 4 ? atoi(argv[1]) : 0;
	int kill_them = argc == 4 && strcmp(argv[2], "kill") == 0;

	if (argc == 99) {	/* never: the sites sqstat attaches to are there, as a VM's */
		SQUEAK_VM_EXIT(0);
		SQUEAK_GC_INCREMENTAL_END(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		SQUEAK_GC_FULL_END(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
		SQUEAK_PROCESS_EXIT(0, 0);
		SQUEAK_REQUEST_BEGIN(0, 0, 0);
		SQUEAK_REQUEST_END(0, 0, 0, 0);
	}
	if (n <= 0) {
		fprintf(stderr, "usage: fakestart N exit|kill GO\n");
		return 2;
	}
	while (access(argv[3], F_OK) != 0)
		nanosleep(&tick, NULL);
	for (int i = 0; i < n; i++) {
		int pipefd[2];
		pid_t pid;
		char c;

		if (pipe(pipefd) != 0 || (pid = fork()) < 0) {
			perror("fakestart");
			return 1;
		}
		if (pid == 0) {
			SQUEAK_VM_START("fake", 0);
			if (kill_them) {	/* started: say so, and wait for the SIGKILL */
				(void)!write(pipefd[1], "s", 1);
				pause();
			}
			_exit(0);
		}
		close(pipefd[1]);
		if (kill_them && read(pipefd[0], &c, 1) == 1)
			kill(pid, SIGKILL);
		close(pipefd[0]);
		waitpid(pid, NULL, 0);
	}
	fprintf(stderr, "done\n");
	return 0;
}

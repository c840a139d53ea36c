// SPDX-License-Identifier: BSD-2-Clause
/* names_test.c - the tools' names cache (tools/sqnames.c) against a process that makes
 * more distinct names than it keeps: this test's own memory, read as a target's is
 * (process_vm_readv of its own PID). Review finding 16: one entry per (pid, address)
 * ever named, never pruned, so a program that makes fresh routes grew sqreq for ever.
 * Past SQ_NAMES_MAX a name is not learnt and is counted unknown; the names learnt stay
 * right; forgetting the process makes room again. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqnames.h"

#define MADE (SQ_NAMES_MAX + 10000)

int main(void)
{
	pid_t self = getpid();
	char **names = malloc(MADE * sizeof(*names));
	int wrong = 0, known = 0;
	bool complete;

	for (int i = 0; i < MADE; i++)
		if (asprintf(&names[i], "Route%d", i) < 0)
			return 1;
	for (int i = 0; i < MADE; i++) {
		const char *got = sq_name(self, (__u64)(uintptr_t)names[i], NULL, 0, &complete);

		if (got) {
			known++;
			wrong += strcmp(got, names[i]) != 0 || !complete;
		}
	}
	/* asked again, the first ones are still known and right */
	for (int i = 0; i < 1000; i++) {
		const char *got = sq_name(self, (__u64)(uintptr_t)names[i], NULL, 0, &complete);
		wrong += !got || strcmp(got, names[i]) != 0;
	}
	if (known != SQ_NAMES_MAX || sq_names_unknown() != MADE - SQ_NAMES_MAX || wrong) {
		fprintf(stderr, "names_test: %d names known (wanted %d), %llu unknown (wanted %d), %d wrong\n", known,
			SQ_NAMES_MAX, (unsigned long long)sq_names_unknown(), MADE - SQ_NAMES_MAX, wrong);
		return 1;
	}
	sq_names_forget(self);
	if (!sq_name(self, (__u64)(uintptr_t)names[MADE - 1], NULL, 0, &complete)) {
		fprintf(stderr, "names_test: no room after the process was forgotten\n");
		return 1;
	}
	sq_names_free();
	printf("names_test: %d names made, %d kept, %d counted unknown, all kept right; room again once forgotten\n",
	       MADE, SQ_NAMES_MAX, MADE - SQ_NAMES_MAX);
	return 0;
}

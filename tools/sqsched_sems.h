// SPDX-License-Identifier: BSD-2-Clause
/* sqsched_sems.h - sqsched's Semaphore table: the BPF side's rows of Semaphore waits
 * (bpf/sqsched.h, one per VM, Semaphore, method, waiter and signaller) added up per
 * Semaphore, with the method it was waited in most, the process that waited on it
 * longest and the one whose signals readied its waiters most often. */
#ifndef SQSCHED_SEMS_H
#define SQSCHED_SEMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

/* The table shows this many Semaphores unless -n says otherwise. */
#define SQSCHED_SEMS_TOP 16

/* One Semaphore's waits in an interval. */
struct sqsched_sem {
	__u32 pid;
	__u64 semaphore;	/* its identity hash */
	__u64 waits, wait_ns, max_ns;
	__u64 method;		/* the Method * of the most wait time on it (0: none known) */
	__u64 waiter;		/* the process that waited on it longest in all */
	__u64 signaller;	/* the process that readied its waiters most often (0: none known) */
};

/* What the printers name things with: a process's name (NULL: not known), a method's. */
struct sqsched_sem_names {
	const char *(*process)(void *ctx, __u32 pid, __u64 id);
	void *ctx;
	int names_fd, vms_fd;	/* the BPF side's names and vms maps (tools/sqnames.h) */
};

/* Takes the rows out of the sems map (fd; read and deleted, one by one) and adds them up:
 * *out (malloc'd, for free) gets the Semaphores, the most wait time first, and *n their
 * number. Answers 0 or -errno. */
int sqsched_sems_take(int fd, struct sqsched_sem **out, size_t *n);

/* The first shown of them as a text table (nothing if n is 0), or as the members of a
 * JSON array (no brackets). */
void sqsched_sems_print_text(FILE *f, const struct sqsched_sem *s, size_t n, size_t shown,
			     const struct sqsched_sem_names *names);
void sqsched_sems_print_json(FILE *f, const struct sqsched_sem *s, size_t shown,
			     const struct sqsched_sem_names *names);

#endif

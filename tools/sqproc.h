// SPDX-License-Identifier: BSD-2-Clause
/* sqproc.h - what /proc/PID/stat says of a process a tool follows: its state and its
 * start time, so that a tool that outlives many VMs tells a VM that has exited (or is a
 * zombie) from a live one, and a new process that got a recycled PID from the VM that
 * had it before: a VM is (PID, start time), not a PID. */
#ifndef SQPROC_H
#define SQPROC_H

#include <stdbool.h>
#include <sys/types.h>

/* The process's state letter (field 3) and start time (field 22: clock ticks since
 * boot); false if there is no such process. Reads one bounded line, never blocks. */
bool sq_proc_stat(pid_t pid, char *state, unsigned long long *ticks);

/* Is pid still the process that started at ticks (sq_proc_stat), and not a zombie?
 * False for ticks 0 (not known). */
bool sq_proc_alive(pid_t pid, unsigned long long ticks);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sqproc.c - a process's state and start time, from /proc/PID/stat (sqproc.h). */
#include "sqproc.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool sq_proc_stat(pid_t pid, char *state, unsigned long long *ticks)
{
	char path[64], line[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return false;
	line[n] = 0;
	/* the command (field 2) is in parentheses and may hold any byte: the last ')' ends it */
	if (!(p = strrchr(line, ')')))
		return false;
	/* after the command: state (3), then fields 4..22; starttime is the 22nd */
	return sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		      state, ticks) == 2;
}

bool sq_proc_alive(pid_t pid, unsigned long long ticks)
{
	unsigned long long now;
	char state;

	return ticks && sq_proc_stat(pid, &state, &now) && now == ticks && state != 'Z' && state != 'X';
}

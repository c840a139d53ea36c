// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_dir.c - the folder of continuous profiles; see sqprof_dir.h. */
#define _GNU_SOURCE
#include "sqprof_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sqfile.h"
#include "sqopts.h"

int sqp_dir_check(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) != 0) {
		sq_error("--out %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		sq_error("--out %s: not a folder", dir);
		return -ENOTDIR;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		sq_error("--out %s: cannot write into it: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

/* "sqprof-PID-2026-12-01T21:41:16Z.pb.gz" */
static void file_name(char *buf, size_t len, pid_t pid, uint64_t start_ns)
{
	time_t secs = (time_t)(start_ns / 1000000000ULL);
	char when[32];
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(buf, len, "sqprof-%d-%s.pb.gz", (int)pid, when);
}

/* The folder's entries (a rename, a removal) to disk. */
static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int sqp_dir_write(const char *dir, pid_t pid, uint64_t start_ns, int (*write)(FILE *f, void *ctx), void *ctx,
		  char *path, size_t len)
{
	char name[96];
	int err;

	file_name(name, sizeof(name), pid, start_ns);
	snprintf(path, len, "%s/%s", dir, name);
	err = sq_file_replace(path, 0600, write, ctx);
	if (err)
		return err;
	sync_dir(dir);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* pid's files in dir (names, malloc'ed, oldest first); their number in *n. */
static char **list_files(const char *dir, pid_t pid, size_t *n)
{
	char prefix[32], **names = NULL, **grown;
	size_t cap = 0, plen;
	struct dirent *e;
	DIR *d = opendir(dir);

	*n = 0;
	if (!d)
		return NULL;
	plen = (size_t)snprintf(prefix, sizeof(prefix), "sqprof-%d-", (int)pid);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, prefix, plen) != 0 || len < plen + 6 ||
		    strcmp(e->d_name + len - 6, ".pb.gz") != 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			if (!(grown = realloc(names, cap * sizeof(*names))))
				break;
			names = grown;
		}
		if ((names[*n] = strdup(e->d_name)))
			(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(names, *n, sizeof(*names), by_name);
	return names;
}

int sqp_dir_prune(const char *dir, pid_t pid, long keep)
{
	char path[PATH_MAX];
	size_t n;
	char **names;
	int removed = 0;

	if (keep <= 0)
		return 0;
	names = list_files(dir, pid, &n);
	for (size_t i = 0; i < n; i++) {
		if (i + (size_t)keep < n) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			if (unlink(path) == 0)
				removed++;
		}
		free(names[i]);
	}
	free(names);
	if (removed)
		sync_dir(dir);
	return removed;
}

// SPDX-License-Identifier: BSD-2-Clause
/* sqfile.c - a file replaced whole through a temporary of a random name (sqfile.h). */
#define _GNU_SOURCE
#include "sqfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqopts.h"

/* Creates a new temporary beside path (path + ".XXXXXXXXXXXXXXXX.tmp", 64 random bits);
 * a name already taken (planted or not) is never opened, another one is tried (16 tries). */
static int create_tmp(const char *path, mode_t mode, char *tmp, size_t len)
{
	for (int i = 0; i < 16; i++) {
		uint64_t r;
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			return -errno;
		if ((size_t)snprintf(tmp, len, "%s.%016llx.tmp", path, (unsigned long long)r) >= len)
			return -ENAMETOOLONG;
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0) {
			fchmod(fd, mode); /* the umask may have taken bits; never adds any */
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

int sq_file_replace(const char *path, mode_t mode, int (*write)(FILE *f, void *ctx), void *ctx)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd = create_tmp(path, mode, tmp, sizeof(tmp)), err;

	if (fd < 0) {
		sq_error("cannot write %s: %s", path, strerror(-fd));
		return fd;
	}
	if (!(f = fdopen(fd, "w"))) {
		err = -errno;
		close(fd);
		unlink(tmp);
		sq_error("cannot write %s: %s", path, strerror(-err));
		return err;
	}
	err = write(f, ctx);
	if (!err && (fflush(f) != 0 || fsync(fd) != 0))
		err = -errno;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err) {
		unlink(tmp);
		sq_error("cannot write %s: %s", path, strerror(-err));
	}
	return err;
}

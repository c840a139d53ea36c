// SPDX-License-Identifier: BSD-2-Clause
/* sqfile.h - files the tools write where others may write too: a file replaced whole,
 * through a temporary that no planted name (symlink, FIFO, file) can stand in for. */
#ifndef SQFILE_H
#define SQFILE_H

#include <stdio.h>
#include <sys/types.h>

/* Replaces path with what write(f, ctx) writes: into a new file beside it under a random
 * name (O_CREAT|O_EXCL|O_NOFOLLOW, so never a planted link or file), at mode, flushed to
 * disk, then renamed over path (which replaces a link at path, never its target).
 * Returns 0, or -errno after saying why on stderr (prefixed with the tool's name). */
int sq_file_replace(const char *path, mode_t mode, int (*write)(FILE *f, void *ctx), void *ctx);

#endif

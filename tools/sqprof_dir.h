// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_dir.h - the folder of continuous profiles (sqprof --every DIR): one file per VM
 * and period, DIR/sqprof-PID-START.pb.gz with START the period's start in UTC, RFC 3339
 * to the second ("2026-12-01T21:41:16Z": names sort by time); each written atomically,
 * so that a collector reading the folder never sees half a file; and the oldest of a
 * VM's files removed beyond --keep. */
#ifndef SQPROF_DIR_H
#define SQPROF_DIR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Checks that dir is a folder we can write into (one clear line if not). */
int sqp_dir_check(const char *dir);

/* Writes pid's file for the period that began at start_ns (CLOCK_REALTIME): write(f, ctx)
 * fills a new temporary file in dir of a random name (ending in .tmp, which collectors
 * that match *.pb.gz skip; sq_file_replace: a planted link is never followed), mode 0600
 * (profiles hold the VM's command line and names), flushed to disk and renamed into
 * place, and the folder's entry synced too.
 * The file's path goes into path (len bytes). Returns 0, or -errno after saying why. */
int sqp_dir_write(const char *dir, pid_t pid, uint64_t start_ns, int (*write)(FILE *f, void *ctx), void *ctx,
		  char *path, size_t len);

/* Removes pid's oldest files in dir so that keep remain (keep 0: none removed); answers
 * how many were removed. */
int sqp_dir_prune(const char *dir, pid_t pid, long keep);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sqtargets.h - which VM binaries and processes a tool traces: the -p process's
 * executable (through /proc/PID/root for a process in a container), the --vm file, else
 * the sqvm on PATH (or beside the tool's build folder) and the sqvm binaries that
 * processes run under other roots; and the VM processes running now, from /proc.
 *
 * A binary a process runs is opened once, checked against /proc/PID/exe (a regular
 * file, same device and inode) and from then on named /proc/self/fd/N, for our ELF reads
 * and for the kernel's uprobe alike: a path a container's owner swaps after the check
 * changes nothing (docs/TOOLS.md, Threat model). */
#ifndef SQTARGETS_H
#define SQTARGETS_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "sqelf.h"

#define SQ_MAX_BINARIES 16

/* A binary to attach to: the path libbpf opens, the path to show, and its identity
 * (uprobes attach to the inode). */
struct sq_binary {
	char path[PATH_MAX];
	char shown[PATH_MAX];	/* for messages only: printable (a container names it) */
	dev_t dev;
	ino_t ino;
	struct sq_probes probes;
	bool scanned; /* found by a scan, not named by -p or --vm: any process may have put it there */
};

struct sq_common;

/* The binaries to attach to, into c->bins: /proc/PID/exe's file with -p; the --vm file
 * (that file only); else the sqvm on PATH (or beside the tool's build folder) and the
 * sqvm binaries of processes running in other root file systems (containers). Each must
 * carry squeak probes. With -p, c->pidfd becomes readable when the process exits. */
int sq_find_targets(struct sq_common *c);

/* Adds one more binary (if it carries squeak probes and is not there already): a VM
 * found running. 0, or a negative errno. */
int sq_add_target(struct sq_common *c, const char *path, const char *shown);

/* The PIDs of the VMs running now (excluding ours): processes whose executable carries
 * sqvm_debug_offsets, or, with only_dev/only_ino nonzero, runs exactly that file.
 * Returns how many were stored into pids (at most max). */
int sq_scan_vms(pid_t *pids, int max, dev_t only_dev, ino_t only_ino);

/* How many processes the last sq_scan_vms could not examine for want of rights (their
 * executable, or its link in /proc, refused): VMs among them were not found. */
int sq_scan_denied(void);

/* The process's command line as one line of text (/proc/PID/cmdline, cut at 511 bytes:
 * its arguments separated by spaces, control characters made spaces); its command name
 * if that cannot be read, "?" if it is gone. */
void sq_cmdline(pid_t pid, char *buf, size_t len);

/* The same from argv as the kernel keeps it (n bytes, NULs between the arguments). */
void sq_cmdline_text(char *buf, size_t len, const char *argv, size_t n);

#endif

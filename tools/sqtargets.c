// SPDX-License-Identifier: BSD-2-Clause
/* sqtargets.c - which binaries and processes a tool traces; see sqtargets.h. */
#define _GNU_SOURCE
#include "sqtargets.h"
#include "sqoutput.h"
#include "sqopts.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Adds path to the targets after checking that it has squeak probes; what names the
 * binary in messages ("PID 42 (/usr/bin/sqvm)" or "/usr/bin/sqvm"). quiet: skip silently
 * a binary without probes (found by scanning, not asked for). */
static int add_binary(struct sq_common *c, const char *path, const char *shown,
		      const char *what, bool quiet)
{
	struct sq_binary *b;
	struct stat st;
	int err;

	if (stat(path, &st) != 0) {
		if (!quiet)
			sq_error("%s: cannot access %s: %s", what, shown, strerror(errno));
		return quiet ? 0 : -errno;
	}
	for (int i = 0; i < c->nbins; i++)
		if (c->bins[i].dev == st.st_dev && c->bins[i].ino == st.st_ino)
			return 0;
	if (c->nbins == SQ_MAX_BINARIES) {
		if (!quiet)
			sq_error("more than %d VM binaries to trace", SQ_MAX_BINARIES);
		return quiet ? 0 : -E2BIG;
	}
	b = &c->bins[c->nbins];
	err = sq_elf_probes(path, &b->probes);
	if (err == 0 && b->probes.nsites == 0) {
		if (quiet)
			return 0;
		if (sq_elf_is_sqvm(path))
			sq_error("%s is sqvm built without probes: its executable has no .note.stapsdt "
			      "squeak notes (rebuild it with probes: make, not make PROBES=0)", what);
		else
			sq_error("%s is not a sqvm process: its executable has no squeak USDT probes", what);
		return -ENOENT;
	}
	if (err) {
		if (!quiet)
			sq_error("%s: cannot read %s: %s", what, shown,
			      err == -ENOEXEC ? "not an ELF file" : strerror(-err));
		return quiet ? 0 : err;
	}
	snprintf(b->path, sizeof(b->path), "%s", path);
	snprintf(b->shown, sizeof(b->shown), "%s", shown);
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	b->scanned = quiet;
	c->nbins++;
	return 0;
}

int sq_add_target(struct sq_common *c, const char *path, const char *shown)
{
	return add_binary(c, path, shown, shown, true);
}

/* Opens path read-only if it is the regular file want (never blocking, never leaving
 * the target's root: sq_elf_open); else -1. */
static int open_same_file(const char *path, const struct stat *want)
{
	struct stat st;
	int fd = sq_elf_open(path);

	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	if (fstat(fd, &st) != 0 || st.st_dev != want->st_dev ||
	    st.st_ino != want->st_ino) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The file a process runs, opened, as the path /proc/self/fd/N of that open file (kept
 * open for the tool's life). A container's owner controls every path under
 * /proc/PID/root, symbolic links included, and could swap the file between a check and
 * a use; an open file cannot be swapped, and /proc/self/fd/N names exactly it, for our
 * ELF reading and for the kernel's uprobe alike. The exe link names the file as seen from
 * the process's mount namespace (reach it through /proc/PID/root) or, for a chroot,
 * from ours; /proc/PID/exe itself (the same file, whatever its name) is the last resort.
 * Answers the descriptor in *fdout; shown is the link's text made printable. */
static int exe_of(pid_t pid, char *path, size_t len, char *shown, size_t shown_len, int *fdout)
{
	char link[64], target[PATH_MAX], cand[PATH_MAX + 64];
	struct stat want;
	ssize_t n;
	int fd = -1;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	if (stat(link, &want) != 0)
		return -errno;
	/* the name a container chose, for messages: printable once, here */
	snprintf(shown, shown_len, "%s", sq_printable(target));
	snprintf(cand, sizeof(cand), "/proc/%d/root%s", pid, target);
	if (target[0] == '/')
		fd = open_same_file(cand, &want);
	if (fd < 0 && target[0] == '/')
		fd = open_same_file(target, &want);
	if (fd < 0)
		fd = open_same_file(link, &want);
	if (fd < 0)
		return errno ? -errno : -ENOENT;
	snprintf(path, len, "/proc/self/fd/%d", fd);
	*fdout = fd;
	return 0;
}

static int find_pid_target(struct sq_common *c)
{
	char path[PATH_MAX], shown[PATH_MAX], what[PATH_MAX + 64];
	int err, fd = -1;

	c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	if (c->pidfd < 0 && errno == ESRCH) {
		sq_error("PID %d does not exist", c->pid);
		return -ESRCH;
	}
	if (c->pidfd < 0 && kill(c->pid, 0) < 0 && errno == ESRCH) {
		sq_error("PID %d does not exist", c->pid);
		return -ESRCH;
	}
	err = exe_of(c->pid, path, sizeof(path), shown, sizeof(shown), &fd);
	if (err == -ENOENT) {
		sq_error("PID %d has no executable (a kernel thread, or it has exited): not a sqvm process",
		      c->pid);
		return err;
	}
	if (err) {
		sq_error("cannot read /proc/%d/exe: %s", c->pid, strerror(-err));
		return err;
	}
	snprintf(what, sizeof(what), "PID %d (%s)", c->pid, shown);
	err = add_binary(c, path, shown, what, false);
	if (err)
		close(fd);
	return err;
}

/* name on PATH, as an absolute path, into out (PATH_MAX bytes). */
static bool search_path(const char *name, char *out)
{
	const char *env = getenv("PATH");
	char *dirs, *dir, *save = NULL;
	bool found = false;

	if (!env || !(dirs = strdup(env)))
		return false;
	for (dir = strtok_r(dirs, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];
		snprintf(cand, sizeof(cand), "%s/%s", *dir ? dir : ".", name);
		found = access(cand, X_OK) == 0 && realpath(cand, out) != NULL;
	}
	free(dirs);
	return found;
}

/* The sqvm of the build tree the tool runs from (build/tools/sqalloc -> build/sqvm),
 * into out (PATH_MAX bytes). */
static bool beside_tool(char *out)
{
	char self[PATH_MAX], cand[PATH_MAX + 16], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		return false;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return false;
	*slash = 0;
	snprintf(cand, sizeof(cand), "%s/../sqvm", self);
	return access(cand, X_OK) == 0 && realpath(cand, out) != NULL;
}

/* Processes running sqvm under another root (containers): their binaries are other files,
 * reached through /proc/PID/root. A process in our own root is covered by the binary
 * already found, or is running some other sqvm that was not asked for. */
static void scan_containers(struct sq_common *c, const char *base)
{
	struct stat root, st;
	struct dirent *de;
	DIR *proc;

	if (stat("/", &root) != 0 || !(proc = opendir("/proc")))
		return;
	while ((de = readdir(proc))) {
		char link[64], path[PATH_MAX], shown[PATH_MAX], what[PATH_MAX + 64];
		const char *slash;
		int fd, nbins;
		pid_t pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		snprintf(link, sizeof(link), "/proc/%d/root", pid);
		if (stat(link, &st) != 0 || (st.st_dev == root.st_dev && st.st_ino == root.st_ino))
			continue;
		if (exe_of(pid, path, sizeof(path), shown, sizeof(shown), &fd) != 0)
			continue;
		slash = strrchr(shown, '/');
		nbins = c->nbins;
		if (strcmp(slash ? slash + 1 : shown, base) == 0) {
			snprintf(what, sizeof(what), "PID %d (%s, in a container)", pid, shown);
			add_binary(c, path, what, what, true);
		}
		if (c->nbins == nbins)	/* not kept: not an sqvm, or a binary already traced */
			close(fd);
	}
	closedir(proc);
}

int sq_find_targets(struct sq_common *c)
{
	char path[PATH_MAX];
	const char *base;
	int err;

	if (c->pid)
		return find_pid_target(c);
	if (c->vm && strchr(c->vm, '/')) {
		if (!realpath(c->vm, path)) {
			sq_error("--vm %s: %s", c->vm, strerror(errno));
			return -errno;
		}
	} else if (c->vm) {
		if (!search_path(c->vm, path)) {
			sq_error("--vm %s: not found on PATH", c->vm);
			return -ENOENT;
		}
	} else if (!search_path("sqvm", path) && !beside_tool(path)) {
		if (c->targets_optional)
			return 0;
		sq_error("no sqvm binary on PATH: give one with --vm PATH, or a process with -p PID");
		return -ENOENT;
	}
	err = add_binary(c, path, path, path, false);
	if (err)
		return err;
	/* --vm names one file: trace exactly it. Without it, "sqvm" means the VM wherever
	 * it runs: also the sqvm binaries of processes in other roots (containers). */
	if (!c->vm) {
		base = strrchr(path, '/') + 1;
		scan_containers(c, base);
	}
	return 0;
}

/* ===================================================================== */
/* VM processes running now                                              */
/* ===================================================================== */

static int scan_denied;

int sq_scan_denied(void)
{
	return scan_denied;
}

/* The executable behind link (its stat st) may not be read by this process: a binary
 * that is not world-readable, which open refuses. */
static bool exe_denied(const char *link, const struct stat *st)
{
	int fd;

	if (st->st_mode & S_IROTH)
		return false;
	fd = open(link, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EACCES || errno == EPERM;
}

int sq_scan_vms(pid_t *pids, int max, dev_t only_dev, ino_t only_ino)
{
	struct dirent *de;
	pid_t self = getpid();
	int n = 0;
	DIR *proc;

	scan_denied = 0;
	proc = opendir("/proc");
	if (!proc)
		return 0;
	while (n < max && (de = readdir(proc))) {
		char link[64];
		struct stat st;
		pid_t pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		if (pid == self)
			continue;
		snprintf(link, sizeof(link), "/proc/%d/exe", pid);
		if (stat(link, &st) != 0) {
			scan_denied += errno == EACCES || errno == EPERM;
			continue;
		}
		if (only_ino ? st.st_dev == only_dev && st.st_ino == only_ino : sq_elf_is_sqvm(link))
			pids[n++] = pid;
		else if (!only_ino && exe_denied(link, &st))
			scan_denied++;
	}
	closedir(proc);
	return n;
}

/* The process's command name (/proc/PID/comm), "?" if gone: sq_cmdline's fallback. */
static void comm_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

void sq_cmdline_text(char *buf, size_t len, const char *argv, size_t n)
{
	if (n > len - 1)
		n = len - 1;
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)argv[i] < ' ' ? ' ' : argv[i];
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = 0;
}

void sq_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64], raw[512];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, raw, sizeof(raw));
		close(fd);
	}
	if (n <= 0)
		comm_of(pid, buf, len);
	else
		sq_cmdline_text(buf, len, raw, (size_t)n);
}

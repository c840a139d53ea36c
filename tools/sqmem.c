// SPDX-License-Identifier: BSD-2-Clause
/* sqmem.c - a VM process's memory, read from outside; see sqmem.h. */
#define _GNU_SOURCE
#include "sqmem.h"
#include "sqelf.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int sq_read_str(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	buf[0] = 0;
	if (!addr || len == 0)
		return -1;
	/* In pieces: the string may end just before an unmapped page. */
	while (got + 1 < len) {
		size_t chunk = len - 1 - got < 64 ? len - 1 - got : 64;
		char *nul;
		if (!sq_read_mem(pid, addr + got, buf + got, chunk)) {
			buf[got] = 0;
			return -1;
		}
		buf[got + chunk] = 0;
		if ((nul = memchr(buf + got, 0, chunk)))
			return (int)(nul - buf);
		got += chunk;
	}
	buf[got] = 0;
	return -2;
}

/* Where the executable's mapping of file offset 0 starts, found by inode (the path in
 * maps is the one the process sees, which may not be ours). */
static bool load_base(pid_t pid, ino_t ino, uint64_t *base)
{
	char path[64], line[4608];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long lo, off, inode;
		if (sscanf(line, "%llx-%*x %*s %llx %*s %llu", &lo, &off, &inode) == 3 &&
		    inode == (unsigned long long)ino && off == 0) {
			*base = lo;
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* The executable of pid, for vm: its name, identity and symbol. */
static int open_exe(pid_t pid, struct sq_vm *vm, const struct sq_elf_vm **info)
{
	char link[64];
	struct stat st;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, vm->exe, sizeof(vm->exe) - 1);
	if (n < 0 || stat(link, &st) != 0)
		return errno == ENOENT || errno == ESRCH ? (kill(pid, 0) != 0 ? SQ_VM_GONE : SQ_VM_NOT_SQVM)
							 : SQ_VM_NO_ACCESS;
	vm->exe[n] = 0;
	vm->dev = st.st_dev;
	vm->ino = st.st_ino;
	*info = sq_elf_vm(link);
	if (*info && ((*info)->err == -EACCES || (*info)->err == -EPERM)) {
		errno = -(*info)->err;
		return SQ_VM_NO_ACCESS;
	}
	return *info && (*info)->has_symbol ? SQ_VM_OK : SQ_VM_NOT_SQVM;
}

static int open_once(pid_t pid, struct sq_vm *vm)
{
	const struct sq_elf_vm *info;
	uint64_t base;
	int err;

	memset(vm, 0, sizeof(*vm));
	vm->pid = pid;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return SQ_VM_GONE;
	if ((err = open_exe(pid, vm, &info)))
		return err;
	if (!load_base(pid, vm->ino, &base))
		return kill(pid, 0) != 0 ? SQ_VM_GONE : SQ_VM_NO_ACCESS;
	vm->bias = base - info->first_vaddr;
	vm->offsets_addr = info->symbol + vm->bias;
	if (!sq_read_mem(pid, vm->offsets_addr, &vm->d, sizeof(vm->d)))
		return errno == ESRCH ? SQ_VM_GONE : SQ_VM_NO_ACCESS;
	if (!sq_debug_offsets_known(&vm->d))
		return SQ_VM_VERSION;
	if (!sq_debug_offsets_ok(&vm->d))
		return SQ_VM_BAD_OFFSETS;
	/* A PIE process's addresses are relocated by its dynamic loader, after exec: until
	 * then they are link-time addresses, below the load bias. */
	if (vm->bias && vm->d.current_process < vm->bias)
		return SQ_VM_STARTING;
	return SQ_VM_OK;
}

int sq_vm_open(pid_t pid, struct sq_vm *vm, int wait_ms)
{
	struct timespec pause = { 0, 5000000 };
	int err;

	for (int waited = 0;; waited += 5) {
		err = open_once(pid, vm);
		if (err != SQ_VM_STARTING || waited >= wait_ms)
			return err;
		nanosleep(&pause, NULL);
	}
}

const char *sq_vm_strerror(int err)
{
	switch (err) {
	case SQ_VM_GONE:
		return "no such process";
	case SQ_VM_NOT_SQVM:
		return "not an sqvm process: its executable has no sqvm_debug_offsets symbol";
	case SQ_VM_NO_ACCESS: {
		static char buf[200];
		int e = errno ? errno : EACCES;
		if (geteuid() == 0)	/* root too: a security module, another user namespace, ... */
			snprintf(buf, sizeof(buf), "cannot read its executable or memory: %s (denied even "
				 "to root: the process is protected from ptrace access)", strerror(e));
		else
			snprintf(buf, sizeof(buf), "cannot read its executable or memory: %s (reading "
				 "another user's process needs root or CAP_SYS_PTRACE)", strerror(e));
		return buf;
	}
	case SQ_VM_VERSION:
		return "its sqvm_debug_offsets has a version this tool does not know (a newer or older VM)";
	case SQ_VM_BAD_OFFSETS:
		return "its sqvm_debug_offsets is out of bounds (a field offset past 4096 bytes, or the "
		       "block larger than 4096): not trusted";
	case SQ_VM_STARTING:
		return "the VM is still starting (not yet relocated by the dynamic loader)";
	default:
		return "unknown error";
	}
}

void sq_method_where(const struct sq_vm *vm, uint64_t method, char *file, size_t len, uint32_t *line)
{
	char full[PATH_MAX];
	const char *slash;
	uint64_t path = 0;

	file[0] = 0;
	*line = 0;
	if (sq_read_mem(vm->pid, method + vm->d.method_source_path, &path, sizeof(path)) && path &&
	    sq_read_str(vm->pid, path, full, sizeof(full)) > 0) {
		slash = strrchr(full, '/');
		snprintf(file, len, "%s", slash ? slash + 1 : full);
	}
	if (!sq_read_mem(vm->pid, method + vm->d.method_line, line, sizeof(*line)))
		*line = 0;
}

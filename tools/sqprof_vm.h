/* sqprof_vm.h - finding sqvm processes and reading them from outside: the
 * sqvm_debug_offsets structure (see vm/debug_offsets.h and probes/README.md, "Stack access
 * for samplers") and the names of methods, through process_vm_readv. */
#ifndef SQPROF_VM_H
#define SQPROF_VM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "debug_offsets.h"

/* One VM process and where its stack is. */
struct sqp_vm {
	pid_t pid;
	dev_t dev;			/* its executable */
	ino_t ino;
	char exe[PATH_MAX];		/* as /proc/PID/exe names it */
	uint64_t bias;			/* load bias of the executable */
	SqDebugOffsets d;		/* address fields: run-time addresses */
};

/* Why sqp_vm_open failed. */
enum {
	SQP_VM_OK = 0,
	SQP_VM_GONE = -1,		/* no such process (or it exited meanwhile) */
	SQP_VM_NOT_SQVM = -2,		/* its executable has no sqvm_debug_offsets symbol */
	SQP_VM_NO_ACCESS = -3,		/* cannot read its memory (errno says why) */
	SQP_VM_VERSION = -4,		/* a debug-offsets structure this tool does not know */
	SQP_VM_STARTING = -5,		/* just exec'ed: the loader has not relocated it yet */
};

/* Reads PID's debug offsets; fills vm. Returns SQP_VM_* and sets errno. */
/* Walks an ELF file (libelf): phdr is called for each program header, then sym for each
 * symbol of its symbol tables until it answers false. Answers false if the file cannot be
 * read as ELF. The profiler reads both the VM (its debug-offsets symbol) and every mapped
 * binary (function symbols for -U) this way. */
typedef void (*sqp_elf_phdr_fn)(void *ctx, const void *phdr /* GElf_Phdr */);
typedef bool (*sqp_elf_sym_fn)(void *ctx, const void *sym /* GElf_Sym */, const char *name);
bool sqp_elf_walk(const char *path, sqp_elf_phdr_fn phdr, sqp_elf_sym_fn sym, void *ctx);

int sqp_vm_open(pid_t pid, struct sqp_vm *vm);

/* One line on why sqp_vm_open failed, for an error message. */
const char *sqp_vm_strerror(int err);

/* Does the executable at path carry sqvm_debug_offsets? (Cached by file identity.) */
bool sqp_is_sqvm_file(const char *path);

/* The PIDs of the VMs running now (excluding ours): processes whose executable carries
 * sqvm_debug_offsets, or, with only_dev/only_ino nonzero, runs exactly that file.
 * Returns how many were stored into pids (at most max). */
int sqp_scan_vms(pid_t *pids, int max, dev_t only_dev, ino_t only_ino);

/* Reads memory of pid; true if all len bytes were read. */
bool sqp_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Method m's printName ("Class>>selector") into buf; false if unreadable. */
bool sqp_method_name(const struct sqp_vm *vm, uint64_t method, char *buf, size_t len);

/* The process's command name (/proc/PID/comm), "?" if gone. */
void sqp_comm(pid_t pid, char *buf, size_t len);

#endif

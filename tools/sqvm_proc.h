// SPDX-License-Identifier: BSD-2-Clause
/* sqvm_proc.h - finding sqvm processes and reading them from outside (every tool of the
 * family: sqprof, sqstack, and the is-this-an-sqvm test of sq_find_targets): the
 * sqvm_debug_offsets structure (see probes/debug_offsets.h and probes/README.md, "Stack access
 * for samplers") and the names of methods, through process_vm_readv. */
#ifndef SQVM_PROC_H
#define SQVM_PROC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "debug_offsets.h"

/* The largest binary the tools read (an sqvm is about 1 MB): a file a container's owner
 * controls is not read without bound. */
#define SQ_MAX_BINARY_SIZE ((off_t)1 << 30)

/* One VM process and where its stack is. */
struct sq_vm {
	pid_t pid;
	dev_t dev;			/* its executable */
	ino_t ino;
	char exe[PATH_MAX];		/* as /proc/PID/exe names it */
	uint64_t bias;			/* load bias of the executable */
	uint64_t offsets_addr;		/* run-time address of its sqvm_debug_offsets */
	SqDebugOffsets d;		/* address fields: run-time addresses */
};

/* Why sq_vm_open failed. */
enum {
	SQ_VM_OK = 0,
	SQ_VM_GONE = -1,		/* no such process (or it exited meanwhile) */
	SQ_VM_NOT_SQVM = -2,		/* its executable has no sqvm_debug_offsets symbol */
	SQ_VM_NO_ACCESS = -3,		/* cannot read its memory (errno says why) */
	SQ_VM_VERSION = -4,		/* a debug-offsets structure this tool does not know */
	SQ_VM_STARTING = -5,		/* just exec'ed: the loader has not relocated it yet */
};

/* Reads PID's debug offsets; fills vm. Returns SQ_VM_* and sets errno. */
/* Walks an ELF file (libelf): phdr is called for each program header, then sym for each
 * symbol of its symbol tables until it answers false. Answers false if the file cannot be
 * read as ELF. The profiler reads both the VM (its debug-offsets symbol) and every mapped
 * binary (function symbols for -U) this way. */
typedef void (*sq_elf_phdr_fn)(void *ctx, const void *phdr /* GElf_Phdr */);
typedef bool (*sq_elf_sym_fn)(void *ctx, const void *sym /* GElf_Sym */, const char *name);
bool sq_elf_walk(const char *path, sq_elf_phdr_fn phdr, sq_elf_sym_fn sym, void *ctx);

int sq_vm_open(pid_t pid, struct sq_vm *vm);

/* One line on why sq_vm_open failed, for an error message. */
const char *sq_vm_strerror(int err);

/* Does the executable at path carry sqvm_debug_offsets? (Cached by file identity.) */
bool sq_is_sqvm_file(const char *path);

/* The PIDs of the VMs running now (excluding ours): processes whose executable carries
 * sqvm_debug_offsets, or, with only_dev/only_ino nonzero, runs exactly that file.
 * Returns how many were stored into pids (at most max). */
int sq_scan_vms(pid_t *pids, int max, dev_t only_dev, ino_t only_ino);

/* Reads memory of pid; true if all len bytes were read. */
bool sq_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Method m's printName ("Class>>selector") into buf; false if unreadable. */
bool sq_method_name(const struct sq_vm *vm, uint64_t method, char *buf, size_t len);

/* The process's command name (/proc/PID/comm), "?" if gone. */
void sq_comm(pid_t pid, char *buf, size_t len);

/* A NUL-terminated string at addr in pid into buf (len bytes, NUL included). Answers its
 * length, -1 if unreadable, or -2 if it did not fit (buf then holds len - 1 bytes). */
int sq_read_str(pid_t pid, uint64_t addr, char *buf, size_t len);

/* ---- Reading a Smalltalk stack from outside ----
 * Every frame is checked against the VM's invariants before it is believed: it lies in the
 * running process's stack memory, below the frame it called; its method's class is the
 * class table's entry at that class's own index; its ip lies in its method's bytecode;
 * the chain ends at the bottom frame (method NULL). A read of a running VM is then
 * repeated and the two compared: a stack that changed underneath is read again, and one
 * that cannot be read consistently is reported as such, never printed. */
#define SQ_FRAME_NAME_MAX 1024

struct sq_frame {
	uint64_t addr;			/* the frame */
	uint64_t method;		/* Method * (identity) */
	char name[SQ_FRAME_NAME_MAX];	/* printName: "Class>>selector" ("..." appended if cut) */
	char file[256];			/* the source file's base name */
	uint32_t line;
	bool block;
};

enum {
	SQ_STACK_OK = 0,
	SQ_STACK_NONE = -1,		/* no Smalltalk process is running (start-up, exit) */
	SQ_STACK_TORN = -2,		/* it changed under every attempt, or failed a check */
	SQ_STACK_GONE = -3,		/* the process exited */
};

/* Reads the running green process's stack, innermost first, at most max frames (more
 * sets *truncated). tries: attempts for a running VM (1 for a stopped one). */
int sq_stack_read(const struct sq_vm *vm, struct sq_frame *frames, int max, int *nframes,
		  bool *truncated, int tries, char *why, size_t why_len);

/* Stops every thread of pid (ptrace: PTRACE_SEIZE, then PTRACE_INTERRUPT), so that a
 * stack read sees it standing still, as py-spy dump and jstack do; sq_resume lets them
 * go. A tracer that dies meanwhile releases them too (the kernel detaches). Answers 0 or
 * -errno (EPERM: another tracer, or ptrace is not allowed). */
struct sq_paused {
	pid_t tids[256];
	int n;
};
int sq_pause(pid_t pid, struct sq_paused *p);
void sq_resume(struct sq_paused *p);

#endif

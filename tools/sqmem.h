// SPDX-License-Identifier: BSD-2-Clause
/* sqmem.h - a VM process's memory, read from outside (process_vm_readv): its
 * sqvm_debug_offsets structure (probes/debug_offsets.h: found from the executable's
 * symbol and the load bias in /proc/PID/maps, then checked by sq_debug_offsets_ok),
 * strings, and where a method is defined. Every read is bounded: a VM that lies can make
 * a tool print wrong names about itself, not read other memory. */
#ifndef SQMEM_H
#define SQMEM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sqcommon.h"

/* One VM process and where its debug offsets are. */
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
	SQ_VM_BAD_OFFSETS = -6,		/* a known version whose offsets are past their bounds */
};

/* Reads PID's debug offsets into vm; while the VM is still starting, tries again for up
 * to wait_ms. Returns SQ_VM_* and sets errno. */
int sq_vm_open(pid_t pid, struct sq_vm *vm, int wait_ms);

/* One line on why sq_vm_open failed, for an error message. */
const char *sq_vm_strerror(int err);

/* Reads memory of pid; true if all len bytes were read (a short read may still have
 * written the bytes before the first unmapped one). Every read of a target's memory goes
 * through it (tools/sqmem_read.c): fuzz/fuzz_stack.c replaces it with an image. */
bool sq_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len);

/* A NUL-terminated string at addr in pid into buf (len bytes, NUL included). Answers its
 * length, -1 if unreadable, or -2 if it did not fit (buf then holds len - 1 bytes). */
int sq_read_str(pid_t pid, uint64_t addr, char *buf, size_t len);

/* Where method is defined: the base name of its source file (empty if unknown) and the
 * line of its definition (0 if unknown). */
void sq_method_where(const struct sq_vm *vm, uint64_t method, char *file, size_t len, uint32_t *line);

#endif

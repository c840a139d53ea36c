// SPDX-License-Identifier: BSD-2-Clause
/* sqstack_walk.h - the walk of a Smalltalk stack read from outside (sqstack): from a VM's
 * checked debug offsets to its running process, its frames, their methods and the class
 * table. Every byte of the target comes through sq_read_mem (tools/sqmem_read.c), so
 * fuzz/fuzz_stack.c runs this same walk over an in-memory image. */
#ifndef SQSTACK_WALK_H
#define SQSTACK_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sqmem.h"

#define FRAME_NAME_MAX 1024

struct frame {
	uint64_t addr;			/* the frame */
	uint64_t method;		/* Method * (identity) */
	char name[FRAME_NAME_MAX];	/* printName: "Class>>selector" ("..." appended if cut) */
	char file[256];			/* the source file's base name */
	uint32_t line;
	bool block;
};

enum {
	STACK_OK = 0,
	STACK_NONE = -1,		/* no Smalltalk process is running (start-up, exit) */
	STACK_TORN = -2,		/* it changed under every attempt, or failed a check */
	STACK_GONE = -3,		/* the process exited */
};

/* Reads the running green process's stack of vm (its offsets checked by
 * sq_debug_offsets_ok), innermost first, at most max frames (more sets *truncated).
 * tries: attempts for a running VM (1 for a stopped one). STACK_*, with why on
 * STACK_TORN. */
int sq_read_stack(const struct sq_vm *vm, struct frame *frames, int max, int *nframes,
		  bool *truncated, int tries, char *why, size_t why_len);

#endif

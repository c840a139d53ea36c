// SPDX-License-Identifier: BSD-2-Clause
/* sqmem_read.c - sq_read_mem (sqmem.h), alone in its file: the one call through which the
 * tools read a target's memory, which fuzz/fuzz_stack.c links an in-memory image for. */
#define _GNU_SOURCE
#include "sqmem.h"

#include <sys/uio.h>

bool sq_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

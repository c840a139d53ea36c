// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_stack.c - libFuzzer target: sqstack's walk of a Smalltalk stack (tools/sqstack_walk.c)
 * over a fuzzed memory image instead of a live process. The target's memory, and the
 * sqvm_debug_offsets block in it, are the target's owner's to write, and sqstack reads
 * them as root; so the walk from the block to the running process, its frames, their
 * methods, the class table and the names is run here on arbitrary bytes, through the same
 * sq_read_mem every tool reads a target with (this file defines it, in place of
 * tools/sqmem_read.c's process_vm_readv). A crash or a sanitizer report is a finding.
 *
 * The input (fuzz/stack_image.py writes the seeds):
 *   SqDebugOffsets   the block as the target holds it (its addresses: in the image);
 *                    rejected, as sq_vm_open rejects it, unless sq_debug_offsets_ok
 *   uint64_t mapped  bytes of memory mapped at FUZZ_BASE (at least the rest of the input,
 *                    at most FUZZ_MAP_MAX): the rest of the input, then zeros (a VM's
 *                    bss); everything else is unmapped
 *   bytes            the memory at FUZZ_BASE */
#define _GNU_SOURCE
#include "sqmem.h"
#include "sqoutput.h"
#include "sqstack_walk.h"
#include "fuzz_watchdog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_BASE 0x10000000ULL
/* Room for what a crafted offset could make a reader copy (finding 1 of the review
 * copied 32 MiB into sqstack's 256 KiB window) without the image holding it. */
#define FUZZ_MAP_MAX (64ULL << 20)
#define FUZZ_FRAMES 64

struct image {
	const uint8_t *bytes;
	uint64_t len;			/* bytes from the input */
	uint64_t mapped;		/* then zeros up to here */
};

static struct image img;

/* As process_vm_readv reads: the bytes before the first unmapped one, and true only if
 * all len were mapped. */
bool sq_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint64_t off, have, n, from_input;

	(void)pid;
	if (addr < FUZZ_BASE || addr - FUZZ_BASE >= img.mapped)
		return len == 0;
	off = addr - FUZZ_BASE;
	have = img.mapped - off;
	n = len < have ? len : have;
	from_input = off < img.len ? (img.len - off < n ? img.len - off : n) : 0;
	if (from_input)
		memcpy(buf, img.bytes + off, from_input);
	memset((uint8_t *)buf + from_input, 0, n - from_input);
	return n == len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct frame *frames;
	static FILE *devnull;
	struct sq_vm vm;
	uint64_t mapped;
	char why[160];
	bool truncated;
	int n;

	if (!frames && !(frames = calloc(FUZZ_FRAMES, sizeof(*frames))))
		return 0;
	if (!devnull && !(devnull = fopen("/dev/null", "we")))
		return 0;
	if (size < sizeof(vm.d) + sizeof(mapped))
		return 0;
	memset(&vm, 0, sizeof(vm));
	vm.pid = getpid();	/* alive: an unreadable process pointer is STACK_TORN, not GONE */
	memcpy(&vm.d, data, sizeof(vm.d));
	memcpy(&mapped, data + sizeof(vm.d), sizeof(mapped));
	if (!sq_debug_offsets_ok(&vm.d))
		return 0;
	img.bytes = data + sizeof(vm.d) + sizeof(mapped);
	img.len = size - sizeof(vm.d) - sizeof(mapped);
	img.mapped = mapped < img.len ? img.len : mapped > FUZZ_MAP_MAX ? FUZZ_MAP_MAX : mapped;
	fuzz_watchdog_arm(5000);
	/* two tries: a torn first read is read again, as --nonblocking does */
	if (sq_read_stack(&vm, frames, FUZZ_FRAMES, &n, &truncated, 2, why, sizeof(why)) == STACK_OK)
		for (int i = 0; i < n; i++) {	/* what the text and the JSON output write of each */
			if (!sq_printable(frames[i].name) || !sq_printable(frames[i].file))
				abort();
			sq_json_str(devnull, frames[i].name);
			sq_json_str(devnull, frames[i].file);
		}
	fuzz_watchdog_disarm();
	return 0;
}

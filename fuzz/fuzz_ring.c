// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_ring.c - libFuzzer target: sqslow's reader of a VM's record ring
 * (tools/sqslow_ring.c) and its replay of what it reads (tools/sqslow_replay.c), over a
 * fuzzed ring image instead of a live process. The ring, its head, its slots, their
 * records and names are the target's owner's to write, and sqslow reads them as root;
 * so three polls of a ring whose head moves between them are run here on arbitrary
 * bytes, through the same sq_read_mem every tool reads a target with (this file defines
 * it, in place of tools/sqmem_read.c's process_vm_readv), and every batch and name read
 * goes on to the replay and its sinks as in sqslow. A crash, a sanitizer report or a
 * name longer than a slot holds is a finding.
 *
 * The input (fuzz/ring_image.py writes the seeds):
 *   uint64_t heads[3]  the ring's head before each poll (the image's own is replaced)
 *   bytes              the ring's memory at FUZZ_BASE (probes/record_ring.h: its header,
 *                      then its slots), then zeros up to the ring's size; everything
 *                      else is unmapped */
#define _GNU_SOURCE
#include "sqmem.h"
#include "sqslow_replay.h"
#include "sqslow_ring.h"
#include "record_ring.h"
#include "fuzz_watchdog.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_BASE 0x10000000ULL
#define POLLS 3
#define HEAD_AT __builtin_offsetof(SqRecordRing, head)

static struct {
	const uint8_t *bytes;
	uint64_t len;		/* bytes from the input */
	uint64_t head;		/* the head the reader sees now */
} img;

/* As process_vm_readv reads, over the image: the bytes before the first unmapped one,
 * and true only if all len were mapped; the head is the poll's. */
bool sq_read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint64_t mapped = sizeof(SqRecordRing), off, n, from_input;

	(void)pid;
	if (addr < FUZZ_BASE || addr - FUZZ_BASE >= mapped)
		return len == 0;
	off = addr - FUZZ_BASE;
	n = len < mapped - off ? len : mapped - off;
	from_input = off < img.len ? (img.len - off < n ? img.len - off : n) : 0;
	if (from_input)
		memcpy(buf, img.bytes + off, from_input);
	memset((uint8_t *)buf + from_input, 0, n - from_input);
	for (uint64_t i = 0; i < sizeof(img.head); i++)	/* the head's bytes in what was read */
		if (HEAD_AT + i >= off && HEAD_AT + i < off + n)
			((uint8_t *)buf)[HEAD_AT + i - off] = (uint8_t)(img.head >> (8 * i));
	return n == len;
}

static uint64_t touched;	/* what the sinks read, so that nothing is optimised away */

static void on_batch(void *ctx, __u32 pid, __u64 flush_ns, const void *msg, size_t size)
{
	touched += flush_ns;
	sqslow_replay_feed(ctx, msg, size);
}

static void on_name(void *ctx, __u32 pid, __u64 id, const char *name)
{
	if (strnlen(name, SQ_RING_NAME_LEN) >= SQ_RING_NAME_LEN)
		abort();	/* a name the reader did not cut */
	touched += id + (unsigned char)name[0];
}

static void on_unreadable(void *ctx, __u32 pid, const char *why)
{
	touched += (unsigned char)why[0];
}

static void on_slice(void *ctx, __u32 pid, __u64 process, __u32 state, __u64 begin, __u64 end,
		     const struct sqslow_wait *w)
{
	touched += process + state + end - begin + w->holder + w->waker;
}

static void on_request(void *ctx, const struct sqslow_request *r)
{
	for (int i = 0; i < SQSLOW_SHARES; i++)
		touched += r->shares[i].ns + r->shares[i].method;
	touched += r->id + r->route + r->end_ns - r->begin_ns + r->sem_holder;
}

static void on_flow(void *ctx, __u32 pid, __u64 waker, __u64 waiter, __u64 ts)
{
	touched += waker + waiter + ts;
}

static void on_record(void *ctx, __u32 pid, const SqEventRecord *r)
{
	touched += r->kind + r->ts;
}

static void on_gc(void *ctx, __u32 pid, __u64 process, __u64 method, bool full, __u64 begin, __u64 end)
{
	touched += process + method + end - begin;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t heads[POLLS];
	const __u32 pid = (__u32)getpid();
	const struct sqslow_sink replay_sink = { .slice = on_slice, .request = on_request, .flow = on_flow,
						 .io = on_record, .gc = on_gc, .alloc = on_record };
	struct sqslow_rings *rs;
	struct sqslow_replay *replay;

	if (size < sizeof(heads))
		return 0;
	memcpy(heads, data, sizeof(heads));
	img.bytes = data + sizeof(heads);
	img.len = size - sizeof(heads);
	if (!(rs = sqslow_rings_new()) || !(replay = sqslow_replay_new(0, &replay_sink))) {
		sqslow_rings_free(rs);
		return 0;
	}
	const struct sqslow_ring_sink sink = { .ctx = replay, .batch = on_batch, .name = on_name,
					       .unreadable = on_unreadable };
	fuzz_watchdog_arm(5000);
	sqslow_rings_at(rs, pid, FUZZ_BASE);
	for (int i = 0; i < POLLS; i++) {
		img.head = heads[i];
		sqslow_rings_poll(rs, &pid, 1, &sink);
	}
	sqslow_replay_close(replay, ~0ULL);
	fuzz_watchdog_disarm();
	touched += sqslow_rings_lost(rs) + sqslow_rings_bad(rs) + sqslow_replay_malformed(replay);
	sqslow_replay_free(replay);
	sqslow_rings_free(rs);
	return 0;
}

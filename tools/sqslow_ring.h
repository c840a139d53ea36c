// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_ring.h - sqslow's reader of the VMs' record rings (probes/record_ring.h): every
 * VM it follows keeps its flushed batches in a ring in its own memory while sqslow is
 * attached to squeak:ring__records, and sqslow polls them with process_vm_readv, at no
 * uprobe hit and no kernel copy in the traced process. Each new batch comes out as the
 * message sqslow's replay reads (bpf/sqslow.h: struct sqslow_batch and its records), with
 * the time it was flushed, and the process names the slot carries. Everything read is the
 * target's word: counts are bounded, names cut and left for the printer to escape, a slot
 * that is not the batch it should be is dropped (counted). */
#ifndef SQSLOW_RING_H
#define SQSLOW_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* What a poll finds, in each VM's order. */
struct sqslow_ring_sink {
	void *ctx;
	/* a batch of VM pid, flushed at flush_ns: msg is a struct sqslow_batch and its records */
	void (*batch)(void *ctx, __u32 pid, __u64 flush_ns, const void *msg, size_t size);
	/* process id of VM pid is called name (NUL-terminated, at most SQ_RING_NAME_LEN - 1 bytes) */
	void (*name)(void *ctx, __u32 pid, __u64 id, const char *name);
	/* VM pid cannot be read (why: one line); told once per VM */
	void (*unreadable)(void *ctx, __u32 pid, const char *why);
};

struct sqslow_rings;

struct sqslow_rings *sqslow_rings_new(void);
void sqslow_rings_free(struct sqslow_rings *rs);
/* Can pid's ring be read (why: one line if not)? */
bool sqslow_ring_usable(__u32 pid, const char **why);
/* Reads the new batches of each of the n VMs in pids (those sqslow follows: its BPF
 * map's keys), in each VM's order, and forgets the VMs not in pids any more. A VM new
 * to it is found through its debug offsets (sq_vm_open), unless sqslow_rings_at said
 * where its ring is. */
void sqslow_rings_poll(struct sqslow_rings *rs, const __u32 *pids, int n, const struct sqslow_ring_sink *sink);
/* VM pid's ring is at addr (fuzz/fuzz_ring.c: an image; false if there is no room). */
bool sqslow_rings_at(struct sqslow_rings *rs, __u32 pid, __u64 addr);
/* Batches overwritten before they were read (the reader fell more than the ring behind),
 * and slots that were not the batch they should have been (a VM that lies). */
__u64 sqslow_rings_lost(const struct sqslow_rings *rs);
__u64 sqslow_rings_bad(const struct sqslow_rings *rs);

#endif

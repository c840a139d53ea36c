// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_merge.h - sqslow's merge of its two streams into the order of the VM's history.
 * The records come from the VMs' rings (tools/sqslow_ring.c), a poll after they were
 * flushed; the kernel's messages (collections, timer samples, context switches) come at
 * once, through the ring buffer. A kernel message waits here until its VM's batch
 * flushed after it has been read (a batch holds what happened before its flush, and a
 * collection flushes the buffer before it begins), so that the replay sees each VM's
 * history in order. */
#ifndef SQSLOW_MERGE_H
#define SQSLOW_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* Where merged messages go, in order. */
typedef void (*sqslow_take_fn)(const void *data, size_t size);

struct sqslow_merge;

struct sqslow_merge *sqslow_merge_new(sqslow_take_fn take);
void sqslow_merge_free(struct sqslow_merge *m);
/* A kernel message (bpf/sqslow.h) of VM pid at ts: held until its VM's next batch. */
void sqslow_merge_hold(struct sqslow_merge *m, __u32 pid, __u64 ts, const void *data, size_t size);
/* A batch of VM pid flushed at flush_ns: what pid's held messages say happened before
 * it goes first, then the batch. */
void sqslow_merge_batch(struct sqslow_merge *m, __u32 pid, __u64 flush_ns, const void *data, size_t size);
/* The held messages from before ts go (a VM that flushes nothing more), or all of them. */
void sqslow_merge_release(struct sqslow_merge *m, __u64 ts);
void sqslow_merge_release_all(struct sqslow_merge *m);

#endif

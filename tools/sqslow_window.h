// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_window.h - sqslow's window: the messages of the last seconds (bpf/sqslow.h),
 * copied as they come, oldest first, bounded by their age and by their bytes. The ring
 * buffer in the kernel only carries them over; this is where the history lives. */
#ifndef SQSLOW_WINDOW_H
#define SQSLOW_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct sqslow_msg {
	__u64 ts;		/* its newest event's time (CLOCK_MONOTONIC ns) */
	size_t size;
	void *data;		/* a copy, owned */
};

struct sqslow_window {
	struct sqslow_msg *msgs;	/* a circular array of cap, first at head */
	size_t head, n, cap;
	size_t bytes, max_bytes;	/* held now, and at most */
	__u64 cut_for_bytes;		/* messages dropped young, for max_bytes */
	__u64 dropped;			/* messages dropped, for their age or their bytes */
};

void sqslow_window_init(struct sqslow_window *w, size_t max_bytes);
/* Keeps a copy of data (size bytes, newest event at ts); older messages go if the
 * bytes would pass max_bytes. false: out of memory (nothing kept). */
bool sqslow_window_add(struct sqslow_window *w, const void *data, size_t size, __u64 ts);
/* Drops the messages whose events all happened before ns, but the last of them. */
void sqslow_window_trim(struct sqslow_window *w, __u64 ns);
/* Message i (0: the oldest held). */
const struct sqslow_msg *sqslow_window_at(const struct sqslow_window *w, size_t i);
void sqslow_window_free(struct sqslow_window *w);

#endif

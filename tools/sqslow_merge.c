// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_merge.c - sqslow's merge of the kernel's messages with the VMs' batches; see
 * sqslow_merge.h. */
#include "sqslow_merge.h"

#include <stdlib.h>
#include <string.h>

/* Messages held, at most: past it the oldest go at once (a VM that stopped flushing
 * while its thread still switches would otherwise grow the queue for HOLD_NS). */
#define HOLD_MAX 65536

struct held {
	__u32 pid;
	__u64 ts;
	size_t size;
	unsigned char data[];
};

struct sqslow_merge {
	sqslow_take_fn take;
	struct held **held;	/* in arrival order */
	size_t n, cap;
};

struct sqslow_merge *sqslow_merge_new(sqslow_take_fn take)
{
	struct sqslow_merge *m = calloc(1, sizeof(*m));

	if (m)
		m->take = take;
	return m;
}

void sqslow_merge_free(struct sqslow_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->held[i]);
	free(m->held);
	free(m);
}

/* The held messages for which go(msg, pid, ts) says so go, in order; the others stay. */
static void release(struct sqslow_merge *m, bool (*go)(const struct held *h, __u32 pid, __u64 ts), __u32 pid,
		    __u64 ts)
{
	size_t k = 0;

	for (size_t i = 0; i < m->n; i++) {
		if (!go(m->held[i], pid, ts)) {
			m->held[k++] = m->held[i];
			continue;
		}
		m->take(m->held[i]->data, m->held[i]->size);
		free(m->held[i]);
	}
	m->n = k;
}

static bool before_flush(const struct held *h, __u32 pid, __u64 flush_ns)
{
	return h->pid == pid && h->ts <= flush_ns;
}

static bool older(const struct held *h, __u32 pid, __u64 ts)
{
	return h->ts < ts;
}

static bool any(const struct held *h, __u32 pid, __u64 ts)
{
	return true;
}

void sqslow_merge_hold(struct sqslow_merge *m, __u32 pid, __u64 ts, const void *data, size_t size)
{
	struct held *h;

	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 1024;
		struct held **more = cap <= HOLD_MAX ? realloc(m->held, cap * sizeof(*more)) : NULL;
		if (more) {
			m->held = more;
			m->cap = cap;
		} else {	/* full: the oldest goes now */
			m->take(m->held[0]->data, m->held[0]->size);
			free(m->held[0]);
			memmove(m->held, m->held + 1, --m->n * sizeof(*m->held));
		}
	}
	if (!(h = malloc(sizeof(*h) + size))) {
		m->take(data, size);	/* out of memory: at once, out of order at worst */
		return;
	}
	h->pid = pid;
	h->ts = ts;
	h->size = size;
	memcpy(h->data, data, size);
	m->held[m->n++] = h;
}

void sqslow_merge_batch(struct sqslow_merge *m, __u32 pid, __u64 flush_ns, const void *data, size_t size)
{
	release(m, before_flush, pid, flush_ns);
	m->take(data, size);
}

void sqslow_merge_release(struct sqslow_merge *m, __u64 ts)
{
	release(m, older, 0, ts);
}

void sqslow_merge_release_all(struct sqslow_merge *m)
{
	release(m, any, 0, 0);
}

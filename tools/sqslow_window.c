// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_window.c - the last seconds of messages, bounded by age and bytes
 * (sqslow_window.h). */
#include <stdlib.h>
#include <string.h>

#include "sqslow_window.h"

/* What a message costs beside its bytes (its slot, malloc's header): counted, so that a
 * stream of small messages is bounded too. */
#define MSG_OVERHEAD (sizeof(struct sqslow_msg) + 16)

void sqslow_window_init(struct sqslow_window *w, size_t max_bytes)
{
	memset(w, 0, sizeof(*w));
	w->max_bytes = max_bytes;
}

static void drop_oldest(struct sqslow_window *w)
{
	struct sqslow_msg *m = &w->msgs[w->head];

	w->bytes -= m->size + MSG_OVERHEAD;
	free(m->data);
	m->data = NULL;
	w->head = (w->head + 1) % w->cap;
	w->n--;
	w->dropped++;
}

static bool grow(struct sqslow_window *w)
{
	size_t cap = w->cap ? w->cap * 2 : 1024;
	struct sqslow_msg *m = calloc(cap, sizeof(*m));

	if (!m)
		return false;
	for (size_t i = 0; i < w->n; i++)
		m[i] = w->msgs[(w->head + i) % w->cap];
	free(w->msgs);
	w->msgs = m;
	w->head = 0;
	w->cap = cap;
	return true;
}

bool sqslow_window_add(struct sqslow_window *w, const void *data, size_t size, __u64 ts)
{
	void *copy;

	if (size + MSG_OVERHEAD > w->max_bytes)
		return false;
	while (w->n && w->bytes + size + MSG_OVERHEAD > w->max_bytes) {
		drop_oldest(w);
		w->cut_for_bytes++;
	}
	if ((w->n == w->cap && !grow(w)) || !(copy = malloc(size)))
		return false;
	memcpy(copy, data, size);
	w->msgs[(w->head + w->n) % w->cap] = (struct sqslow_msg){ .ts = ts, .size = size, .data = copy };
	w->n++;
	w->bytes += size + MSG_OVERHEAD;
	return true;
}

void sqslow_window_trim(struct sqslow_window *w, __u64 ns)
{
	/* the last message before ns stays: it says what happened up to the first one after
	 * (a collection's pause, a quiet server), so that the window knows ns itself */
	while (w->n > 1 && w->msgs[(w->head + 1) % w->cap].ts < ns)
		drop_oldest(w);
}

const struct sqslow_msg *sqslow_window_at(const struct sqslow_window *w, size_t i)
{
	return i < w->n ? &w->msgs[(w->head + i) % w->cap] : NULL;
}

void sqslow_window_free(struct sqslow_window *w)
{
	while (w->n)
		drop_oldest(w);
	free(w->msgs);
	memset(w, 0, sizeof(*w));
}

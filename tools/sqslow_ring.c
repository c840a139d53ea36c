// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_ring.c - sqslow's reader of the VMs' record rings; see sqslow_ring.h. */
#include "sqslow_ring.h"
#include "sqmem.h"
#include "sqslow.h"
#include "record_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Slots read per process_vm_readv round before the head is read again: the fewer, the
 * less of what was read a VM far ahead can overwrite meanwhile. */
#define CHUNK 32
/* More batches than a VM flushes in a day (at most 500 a millisecond): a head that leaps
 * further is a lie. */
#define LEAP_MAX (500ULL * 1000 * 86400)

struct ring_vm {
	__u32 pid;
	bool opened;		/* ring is its ring's address */
	bool dead;		/* it cannot be read: told, and left alone */
	bool started;		/* tail is set */
	__u64 ring;
	__u64 tail;		/* the next batch to read */
	__u64 round;		/* the poll that last found it in the map */
};

struct sqslow_rings {
	struct ring_vm *vms;
	int nvms, cap;
	__u64 round;
	__u64 lost, bad;
	unsigned char *buf;	/* CHUNK slots */
};

/* The head of a ring, as read. */
struct ring_head {
	__u64 magic;
	__u32 slots, slot_size;
	__u64 head;
};

struct sqslow_rings *sqslow_rings_new(void)
{
	struct sqslow_rings *rs = calloc(1, sizeof(*rs));

	if (rs && !(rs->buf = malloc((size_t)CHUNK * sizeof(SqRingSlot)))) {
		free(rs);
		rs = NULL;
	}
	return rs;
}

void sqslow_rings_free(struct sqslow_rings *rs)
{
	if (!rs)
		return;
	free(rs->vms);
	free(rs->buf);
	free(rs);
}

__u64 sqslow_rings_lost(const struct sqslow_rings *rs)
{
	return rs->lost;
}

__u64 sqslow_rings_bad(const struct sqslow_rings *rs)
{
	return rs->bad;
}

static struct ring_vm *vm_of(struct sqslow_rings *rs, __u32 pid)
{
	for (int i = 0; i < rs->nvms; i++)
		if (rs->vms[i].pid == pid)
			return &rs->vms[i];
	if (rs->nvms == rs->cap) {
		int cap = rs->cap ? 2 * rs->cap : 8;
		struct ring_vm *v = cap <= SQ_MAX_VMS ? realloc(rs->vms, cap * sizeof(*v)) : NULL;
		if (!v)
			return NULL;
		rs->vms = v;
		rs->cap = cap;
	}
	rs->vms[rs->nvms] = (struct ring_vm){ .pid = pid };
	return &rs->vms[rs->nvms++];
}

static void give_up(struct ring_vm *v, const struct sqslow_ring_sink *sink, const char *why)
{
	v->dead = true;
	if (sink->unreadable)
		sink->unreadable(sink->ctx, v->pid, why);
}

/* Where v's ring is; false if it has none (told) or is gone. wait_ms: how long a VM
 * still starting is waited for (the poll never waits: it tries again next time). */
static bool open_ring(struct ring_vm *v, const struct sqslow_ring_sink *sink, int wait_ms)
{
	struct sq_vm vm;
	int err = sq_vm_open((pid_t)v->pid, &vm, wait_ms);

	if (err == SQ_VM_GONE || err == SQ_VM_STARTING)
		return false;	/* gone: forgotten when the map forgets it; starting: next poll */
	if (err) {
		give_up(v, sink, sq_vm_strerror(err));
		return false;
	}
	if (!SQ_DEBUG_HAS(&vm.d, record_ring) || !vm.d.record_ring) {
		give_up(v, sink, "its VM keeps no record ring (an sqvm older than the ring, or built with PROBES=0)");
		return false;
	}
	v->ring = vm.d.record_ring;
	v->opened = true;
	return true;
}

static bool read_head(const struct ring_vm *v, struct ring_head *h)
{
	return sq_read_mem((pid_t)v->pid, v->ring, h, sizeof(*h));
}

/* Why a head is not one of a ring this tool knows (NULL: it is). */
static const char *head_unknown(const struct ring_head *h)
{
	return h->magic != SQ_RING_MAGIC || h->slots != SQ_RING_SLOTS || h->slot_size != sizeof(SqRingSlot)
		       ? "its record ring is not one this tool knows (another layout)"
		       : NULL;
}

static void note_why(void *ctx, __u32 pid, const char *why)
{
	*(const char **)ctx = why;
}

bool sqslow_ring_usable(__u32 pid, const char **why)
{
	static const char *told;
	const struct sqslow_ring_sink sink = { .ctx = &told, .unreadable = note_why };
	struct ring_vm v = { .pid = pid };

	told = "no such process, or its VM still starting after 2 s";
	if (!open_ring(&v, &sink, 2000))
		goto no;
	struct ring_head h;
	if (!read_head(&v, &h)) {
		told = "its record ring cannot be read";
		goto no;
	}
	if ((told = head_unknown(&h)))
		goto no;
	return true;
no:
	*why = told;
	return false;
}


/* One slot read as batch s, handed on if it is that batch. */
static void hand_on(struct sqslow_rings *rs, const struct ring_vm *v, SqRingSlot *slot, __u64 s,
		    const struct sqslow_ring_sink *sink)
{
	struct sqslow_batch *b;

	if (slot->seq != s || slot->n > SQ_BATCH_MAX || slot->nnames > SQ_RING_NAMES) {
		rs->bad++;
		return;
	}
	for (__u32 i = 0; i < slot->nnames && sink->name; i++) {
		slot->names[i].name[SQ_RING_NAME_LEN - 1] = 0;
		sink->name(sink->ctx, v->pid, slot->names[i].id, slot->names[i].name);
	}
	if (!slot->n || !sink->batch)
		return;
	/* the message's head goes where the names were: just before the records */
	b = (struct sqslow_batch *)((char *)slot->rec - sizeof(*b));
	*b = (struct sqslow_batch){ .h = { .kind = SQSLOW_BATCH, .pid = v->pid }, .n = slot->n };
	sink->batch(sink->ctx, v->pid, slot->flush_ns, b, sizeof(*b) + slot->n * sizeof(SqEventRecord));
}

static void read_vm(struct sqslow_rings *rs, struct ring_vm *v, const struct sqslow_ring_sink *sink)
{
	struct ring_head h, h2;
	const char *why;
	bool lie;

	if (!v->opened && !open_ring(v, sink, 0))
		return;
	if (!read_head(v, &h)) {
		if (errno != ESRCH)
			give_up(v, sink, "its record ring cannot be read");
		return;
	}
	if ((why = head_unknown(&h))) {
		give_up(v, sink, why);
		return;
	}
	/* at first, what the ring still holds (the caller drops what is older than its
	 * start); a head that went back, or leapt further ahead than a VM flushes in a day
	 * (a VM that lies): from there, the leap counted as bad, not as batches lost */
	lie = v->started && (h.head < v->tail || h.head - v->tail > LEAP_MAX);
	rs->bad += lie;
	if (!v->started || lie) {
		v->tail = h.head > SQ_RING_SLOTS - 1 ? h.head - (SQ_RING_SLOTS - 1) : 0;
		v->started = true;
	}
	while (v->tail < h.head) {
		__u64 from = v->tail, to = h.head, valid;

		if (to - from > SQ_RING_SLOTS - 1) {
			rs->lost += to - (SQ_RING_SLOTS - 1) - from;
			from = to - (SQ_RING_SLOTS - 1);
		}
		if (to - from > CHUNK)
			to = from + CHUNK;
		for (__u64 s = from; s < to; s++) {
			__u64 at = v->ring + __builtin_offsetof(SqRecordRing, slot) + (s % SQ_RING_SLOTS) * sizeof(SqRingSlot);
			SqRingSlot *slot = (SqRingSlot *)(rs->buf + (s - from) * sizeof(SqRingSlot));
			/* its head and names, then the records it holds (a batch is half full,
			 * on average: the rest of the slot is not worth the copy) */
			if (!sq_read_mem((pid_t)v->pid, at, slot, __builtin_offsetof(SqRingSlot, rec)) ||
			    (slot->n <= SQ_BATCH_MAX &&
			     !sq_read_mem((pid_t)v->pid, at + __builtin_offsetof(SqRingSlot, rec), slot->rec,
					  slot->n * sizeof(SqEventRecord))))
				slot->seq = ~s;	/* not batch s */
		}
		/* what the VM began to overwrite while the slots were read is lost */
		if (!read_head(v, &h2) || h2.head < h.head)
			h2.head = h.head;
		valid = h2.head >= SQ_RING_SLOTS ? h2.head - SQ_RING_SLOTS + 1 : 0;
		for (__u64 s = from; s < to; s++) {
			if (s < valid)
				rs->lost++;
			else
				hand_on(rs, v, (SqRingSlot *)(rs->buf + (s - from) * sizeof(SqRingSlot)), s, sink);
		}
		v->tail = to;
	}
}

bool sqslow_rings_at(struct sqslow_rings *rs, __u32 pid, __u64 addr)
{
	struct ring_vm *v = vm_of(rs, pid);

	if (!v)
		return false;
	v->ring = addr;
	v->opened = true;
	return true;
}

void sqslow_rings_poll(struct sqslow_rings *rs, const __u32 *pids, int n, const struct sqslow_ring_sink *sink)
{
	rs->round++;
	for (int i = 0; i < n; i++) {
		struct ring_vm *v = vm_of(rs, pids[i]);
		if (v)
			v->round = rs->round;
	}
	for (int i = 0; i < rs->nvms;) {
		struct ring_vm *v = &rs->vms[i];
		if (v->round != rs->round) {	/* not followed any more: gone */
			rs->vms[i] = rs->vms[--rs->nvms];
			continue;
		}
		if (!v->dead)
			read_vm(rs, v, sink);
		i++;
	}
}

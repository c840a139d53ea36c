/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * record_ring.h - the record ring: the batch probes' records (probes/event_batch.h) kept
 * in the VM's own memory for a reader that polls them from outside (process_vm_readv)
 * instead of taking a uprobe hit at every flush. Part of the probe contract, as
 * event_batch.h and debug_offsets.h are: the VM (vm/record_ring.c) writes it, a tool
 * (tools/sqslow_ring.c) reads it, and finds it through sqvm_debug_offsets.record_ring.
 *
 * While a tool is attached to squeak:ring__records (a record switch: it never fires, its
 * semaphore is all it is for), each flush of the record buffer also copies the batch into
 * the next slot of the ring, with the time of the flush and the names of the processes
 * its activations name (a process's name is a Smalltalk string that a collection may
 * move; the VM copies it while the pointer is good). Which records are written is the
 * batch probes' business: the reader turns them on with their switches (sched__records,
 * req__records, io__records, sample__records).
 *
 * Reading: head is how many batches were ever written; batch s is in slot s % SQ_RING_SLOTS
 * and its seq is s. The VM writes a slot, then stores head = s + 1 (release). A reader
 * reads head, then the slots it wants, then head again (h2): a slot whose s <= h2 -
 * SQ_RING_SLOTS may have been overwritten while it was read, and is lost. Everything in
 * a slot is the target's word: bound n, nnames and every name.
 */
#ifndef SQVM_RECORD_RING_H
#define SQVM_RECORD_RING_H

#include "event_batch.h"

#define SQ_RING_MAGIC 0x31474e4952565153ULL	/* "SQVRING1", little-endian */
/* Slots: a reader that polls every 20 ms keeps up with about 12,000 batches a second. */
#define SQ_RING_SLOTS 256
/* Names a slot carries, at most (more activations' names wait for a later batch). */
#define SQ_RING_NAMES 16
/* Bytes of a name, its NUL included (longer names are cut). */
#define SQ_RING_NAME_LEN 32

typedef struct SqRingName {
	uint64_t id;			/* the green process's id */
	char name[SQ_RING_NAME_LEN];	/* NUL-terminated */
} SqRingName;

typedef struct SqRingSlot {
	uint64_t seq;			/* the batch's number */
	uint64_t flush_ns;		/* when it was flushed: after its records, before what follows */
	uint32_t n;			/* records in rec[] */
	uint32_t nnames;		/* names in names[] */
	SqRingName names[SQ_RING_NAMES];
	SqEventRecord rec[SQ_BATCH_MAX];
} SqRingSlot;

typedef struct SqRecordRing {
	uint64_t magic;			/* SQ_RING_MAGIC */
	uint32_t slots;			/* SQ_RING_SLOTS */
	uint32_t slot_size;		/* sizeof(SqRingSlot) */
	uint64_t head;			/* batches written (release-stored after each) */
	uint64_t pad[5];
	SqRingSlot slot[SQ_RING_SLOTS];
} SqRecordRing;

_Static_assert(sizeof(SqRingName) == 40, "SqRingName is 40 bytes");
_Static_assert(__builtin_offsetof(SqRingSlot, names) == 24, "SqRingSlot.names at 24");
_Static_assert(__builtin_offsetof(SqRingSlot, rec) == 24 + 40 * SQ_RING_NAMES, "SqRingSlot.rec after the names");
_Static_assert(__builtin_offsetof(SqRecordRing, head) == 16, "SqRecordRing.head at 16");
_Static_assert(__builtin_offsetof(SqRecordRing, slot) == 64, "SqRecordRing.slot at 64");

#endif

// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqslots.bpf.h - a table of values per green process (a VM's pid and the process's id),
 * for the state the batch consumers (sqsched, sqreq) look up on every record.
 *
 * A hash map costs each lookup a hash of the key, a bucket walk and, for an update, the
 * bucket's lock: about 100 ns on this path, several times per record. Process ids are a
 * VM's counter (1, 2, 3, ...), so the live ones spread over an array indexed by the id's
 * low bits, whose lookups the verifier inlines into a few instructions. A slot holds one
 * process; a process whose slot is taken by another (one 2^k ids older, still alive, or
 * another VM's) goes to a hash map beside it, the spill.
 *
 * A user declares its slot (the header, then its value v) and the maps, and writes its
 * typed accessors over the generic ones below, so that each name it calls is defined
 * where grep finds it:
 *
 *	struct open_slot { struct sq_slot h; struct open_req v; };
 *	SQ_SLOT_MAPS(open_slots, open_spill, open_spilled, struct open_slot, 16384, 65536)
 *	static __always_inline struct open_req *open_find(__u32 pid, __u64 id)
 *	{
 *		return sq_slots_find(&open_slots, &open_spill, &open_spilled, 16384, pid, id);
 *	}
 *
 * sq_slots_find answers the value (NULL: none), sq_slots_insert a fresh one (NULL: no
 * room, both full), sq_slots_delete lets it go. They are always inlined, with the maps,
 * the slot count and the value's size constants at every call, so that each user's code
 * is what a table written out for its type would be (against the macro that generated
 * them before: sqreq's instructions the same, sqsched's 4 of 1,317 more, by register
 * allocation). The value's copy takes its pointers typed 8-aligned: through void * it
 * is a copy byte by byte (sqsched's code 2,134 instructions).
 *
 * A slot is claimed with a compare-and-swap, so two VMs traced at once on two CPUs never
 * share one (and marked held after its value is written: the JITs keep the order of
 * stores on x86-64, where the tools are tested; the other architectures tools.mk builds for
 * order stores more weakly, and there a reader could see a slot held before its value:
 * this clang has no BPF store-release to order them); each VM has one thread that runs Smalltalk, so one process's value is only
 * ever written by one CPU at a time. The spill is a hash map allocated as it is used
 * (BPF_F_NO_PREALLOC), which costs its inserts a kernel allocation, rare on this path,
 * and the tool's start nothing: a preallocated LRU map of 65,536 cost every start about
 * 40 ms of the kernel's populating it (tests/bench/README.md, 2026-12-05). A process whose
 * end the tool never saw (it began before the tool attached and was suspended forever)
 * stays in its slot or the spill; with the spill full a colliding process has no value
 * (as with a full slot table). */
#ifndef SQSLOTS_BPF_H
#define SQSLOTS_BPF_H

#include "sqvm.bpf.h"

struct sq_slot_key {
	__u32 pid;
	__u32 pad;
	__u64 id;
};

/* A slot's header; the value follows it (at offset 24, 8-aligned). */
struct sq_slot {
	__u64 used;	/* 0 free, 2 being claimed, 1 held (64-bit: cmpxchg) */
	__u64 id;
	__u32 pid;
	__u32 pad;
};

/* The maps of a slot table: SLOTS, an array of NSLOTS (a power of two) slots of type SLOT
 * (a struct sq_slot h, then the value v); SPILL, a hash map of NSPILL values; SPILLED, the
 * processes in the spill (the spill is looked up only while it has some). */
#define SQ_SLOT_MAPS(SLOTS, SPILL, SPILLED, SLOT, NSLOTS, NSPILL)				\
	_Static_assert(((NSLOTS) & ((NSLOTS) - 1)) == 0, #SLOTS ": a power of two");		\
	_Static_assert(__builtin_offsetof(SLOT, v) == sizeof(struct sq_slot),			\
		       #SLOTS ": the value right after the header");				\
	struct {										\
		__uint(type, BPF_MAP_TYPE_ARRAY);						\
		__uint(max_entries, NSLOTS);							\
		__type(key, __u32);								\
		__type(value, SLOT);								\
	} SLOTS SEC(".maps");									\
	struct {										\
		__uint(type, BPF_MAP_TYPE_HASH);						\
		__uint(max_entries, NSPILL);							\
		__uint(map_flags, BPF_F_NO_PREALLOC);						\
		__type(key, struct sq_slot_key);						\
		__type(value, typeof(((SLOT *)0)->v));						\
	} SPILL SEC(".maps");									\
	__u64 SPILLED = 0;

/* The slot of (pid, id) in a table of n (a power of two) slots. */
static __always_inline __u32 sq_slot_of(__u32 pid, __u64 id, __u32 n)
{
	return ((__u32)id + pid * 0x9E3779B1u) & (n - 1);
}

/* The slot of (pid, id) in the array slots of nslots (its index in a scope of its own,
 * whose stack the key of the spill then reuses). */
static __always_inline struct sq_slot *sq_slots_slot(void *slots, __u32 nslots, __u32 pid, __u64 id)
{
	__u32 i = sq_slot_of(pid, id, nslots);

	return bpf_map_lookup_elem(slots, &i);
}

/* The value of (pid, id) (NULL: none) in the table of maps slots and spill, of nslots. */
static __always_inline void *sq_slots_find(void *slots, void *spill, __u64 *spilled, __u32 nslots,
					   __u32 pid, __u64 id)
{
	struct sq_slot *s = sq_slots_slot(slots, nslots, pid, id);
	struct sq_slot_key k = { .pid = pid, .id = id };

	if (s && s->used == 1 && s->id == id && s->pid == pid)
		return (char *)s + sizeof(*s);
	if (!*spilled)	/* most misses: a process with no value */
		return NULL;
	return bpf_map_lookup_elem(spill, &k);
}

/* A value for (pid, id), a copy of init (size bytes), NULL: no room. (pid, id) is not in
 * the table (the caller has looked). */
static __always_inline void *sq_slots_insert(void *slots, void *spill, __u64 *spilled, __u32 nslots,
					     __u32 size, __u32 pid, __u64 id, const void *init)
{
	struct sq_slot *s = sq_slots_slot(slots, nslots, pid, id);
	struct sq_slot_key k = { .pid = pid, .id = id };

	if (s && __sync_val_compare_and_swap(&s->used, 0, 2) == 0) {
		s->pid = pid;
		s->id = id;
		/* typed 8-aligned, so that the copy is in words, as for a typed value */
		__builtin_memcpy((__u64 *)(s + 1), (const __u64 *)init, size);
		asm volatile("" ::: "memory");	/* the value, then used */
		s->used = 1;
		return (char *)s + sizeof(*s);
	}
	if (bpf_map_update_elem(spill, &k, init, BPF_NOEXIST))
		return NULL;
	__sync_fetch_and_add(spilled, 1);
	return bpf_map_lookup_elem(spill, &k);
}

static __always_inline void sq_slots_delete(void *slots, void *spill, __u64 *spilled, __u32 nslots,
					    __u32 pid, __u64 id)
{
	struct sq_slot *s = sq_slots_slot(slots, nslots, pid, id);
	struct sq_slot_key k = { .pid = pid, .id = id };

	if (s && s->used == 1 && s->id == id && s->pid == pid)
		s->used = 0;
	else if (*spilled && !bpf_map_delete_elem(spill, &k))
		__sync_fetch_and_add(spilled, -1);
}

#endif

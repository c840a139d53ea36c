// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqslots.bpf.h - a table of values per green process (a VM's pid and the process's id),
 * for the state the batch consumers (sqsched, sqreq) look up on every record.
 *
 * A hash map costs each lookup a hash of the key, a bucket walk and, for an update, the
 * bucket's lock: about 100 ns on this path, several times per record. Process ids are a
 * VM's counter (1, 2, 3, ...), so the live ones spread over an array indexed by the id's
 * low bits, whose lookups the verifier inlines into a few instructions. A slot holds one
 * process; a process whose slot is taken by another (one 2^k ids older, still alive, or
 * another VM's) goes to a hash map beside it, the spill:
 *
 *	SQ_SLOTS(open, struct open_req, 16384, 65536);
 *	struct open_req *r = open_find(pid, id);		// NULL: none
 *	r = open_insert(pid, id, &fresh);			// NULL: no room (both full)
 *	open_delete(pid, id);
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

/* The slot of (pid, id) in a table of n (a power of two) slots. */
static __always_inline __u32 sq_slot_of(__u32 pid, __u64 id, __u32 n)
{
	return ((__u32)id + pid * 0x9E3779B1u) & (n - 1);
}

#define SQ_SLOTS(NAME, TYPE, NSLOTS, NSPILL)						\
	_Static_assert(((NSLOTS) & ((NSLOTS) - 1)) == 0, #NAME ": slots, a power of two");	\
	struct NAME##_slot {								\
		__u64 used;	/* 0 free, 2 being claimed, 1 held (64-bit: cmpxchg) */	\
		__u64 id;								\
		__u32 pid;								\
		__u32 pad;								\
		TYPE v;									\
	};										\
	struct {									\
		__uint(type, BPF_MAP_TYPE_ARRAY);					\
		__uint(max_entries, NSLOTS);						\
		__type(key, __u32);							\
		__type(value, struct NAME##_slot);					\
	} NAME##_slots SEC(".maps");							\
	struct {									\
		__uint(type, BPF_MAP_TYPE_HASH);					\
		__uint(max_entries, NSPILL);						\
		__uint(map_flags, BPF_F_NO_PREALLOC);					\
		__type(key, struct sq_slot_key);					\
		__type(value, TYPE);							\
	} NAME##_spill SEC(".maps");							\
	/* Processes in the spill (a lookup of the spill only while it has some). */	\
	__u64 NAME##_spilled = 0;							\
											\
	static __always_inline __attribute__((unused)) struct NAME##_slot *NAME##_slot_of(__u32 pid, __u64 id)	\
	{										\
		__u32 i = sq_slot_of(pid, id, NSLOTS);					\
											\
		return bpf_map_lookup_elem(&NAME##_slots, &i);				\
	}										\
											\
	static __always_inline __attribute__((unused)) TYPE *NAME##_find(__u32 pid, __u64 id)			\
	{										\
		struct NAME##_slot *s = NAME##_slot_of(pid, id);			\
		struct sq_slot_key k = { .pid = pid, .id = id };			\
											\
		if (s && s->used == 1 && s->id == id && s->pid == pid)			\
			return &s->v;							\
		if (!NAME##_spilled)	/* most misses: a process with no value */	\
			return NULL;							\
		return bpf_map_lookup_elem(&NAME##_spill, &k);				\
	}										\
											\
	/* (pid, id) is not in the table (the caller has looked). */			\
	static __always_inline __attribute__((unused)) TYPE *NAME##_insert(__u32 pid, __u64 id, const TYPE *init) \
	{										\
		struct NAME##_slot *s = NAME##_slot_of(pid, id);			\
		struct sq_slot_key k = { .pid = pid, .id = id };			\
											\
		if (s && __sync_val_compare_and_swap(&s->used, 0, 2) == 0) {		\
			s->pid = pid;							\
			s->id = id;							\
			__builtin_memcpy(&s->v, init, sizeof(TYPE));			\
			asm volatile("" ::: "memory");	/* the value, then used */	\
			s->used = 1;							\
			return &s->v;							\
		}									\
		if (bpf_map_update_elem(&NAME##_spill, &k, init, BPF_NOEXIST))		\
			return NULL;							\
		__sync_fetch_and_add(&NAME##_spilled, 1);				\
		return bpf_map_lookup_elem(&NAME##_spill, &k);				\
	}										\
											\
	static __always_inline __attribute__((unused)) void NAME##_delete(__u32 pid, __u64 id)			\
	{										\
		struct NAME##_slot *s = NAME##_slot_of(pid, id);			\
		struct sq_slot_key k = { .pid = pid, .id = id };			\
											\
		if (s && s->used == 1 && s->id == id && s->pid == pid)			\
			s->used = 0;							\
		else if (NAME##_spilled && !bpf_map_delete_elem(&NAME##_spill, &k))	\
			__sync_fetch_and_add(&NAME##_spilled, -1);			\
	}

#endif

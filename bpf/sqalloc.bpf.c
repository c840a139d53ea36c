// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqalloc.bpf.c - counts the objects an sqvm process allocates, by class and optionally by
 * allocating method or by the innermost frames of the Smalltalk stack, from the
 * squeak:alloc__batch (every object, as batches of records), squeak:object__alloc (every
 * object, one hit each: --callers, which walks the stack at the allocation) or
 * squeak:object__alloc__sample (one in about every N bytes, with its weight) probes. Keys hold the names' addresses, not their
 * text: nothing is read per allocation but the stack (with --callers), and two names
 * never merge however long they are. */
#include "sqvm.bpf.h"
#include "sqalloc.h"
#include "sqbatch.bpf.h"

/* Options, set by user space before load. */
const volatile bool by_method = false;			/* -b */
const volatile __u32 ncallers = 0;			/* --callers N */
const volatile bool filter_class = false;		/* -C */
const volatile char target_class[SQALLOC_CLASS_MAX] = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQALLOC_MAX_KEYS);
	__type(key, struct sqalloc_key);
	__type(value, struct sqalloc_val);
} allocs SEC(".maps");

/* -C: whether the class name at an address is the one wanted, decided once per name. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sq_name_key);
	__type(value, __u8);
} class_match SEC(".maps");

struct class_buf {
	char name[SQALLOC_CLASS_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct class_buf);
} class_scratch SEC(".maps");

/* Allocations not counted because the map was full. */
__u64 lost = 0;

static __always_inline bool wanted_class(__u32 pid, const char *cls)
{
	struct sq_name_key k = { .pid = pid, .addr = (__u64)cls };
	struct class_buf *buf;
	__u32 zero = 0;
	__u8 *m, match = 0;

	m = bpf_map_lookup_elem(&class_match, &k);
	if (m)
		return *m;
	buf = bpf_map_lookup_elem(&class_scratch, &zero);
	if (!buf)
		return false;
	if (bpf_probe_read_user_str(buf->name, sizeof(buf->name), cls) > 0) {
		match = 1;
		for (__u32 i = 0; i < SQALLOC_CLASS_MAX; i++) {
			if (buf->name[i] != target_class[i]) {
				match = 0;
				break;
			}
			if (!buf->name[i])
				break;
		}
	}
	bpf_map_update_elem(&class_match, &k, &match, BPF_ANY);
	return match;
}

static __always_inline int record(const char *cls, __u64 bytes, const char *alloc_class,
				  const char *alloc_sel, __u64 weight, bool sampled)
{
	static const struct sqalloc_val zero;
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_vm_offsets *vm = NULL;
	struct sqalloc_key key;
	struct sqalloc_val *val;
	bool created = false;

	if (filter_class && !wanted_class(pid, cls))
		return 0;
	__builtin_memset(&key, 0, sizeof(key));
	key.pid = pid;
	key.cls = (__u64)cls;
	if (by_method) {
		key.alloc_class = (__u64)alloc_class;
		key.alloc_sel = (__u64)alloc_sel;
	}
	if (ncallers) {
		vm = bpf_map_lookup_elem(&vms, &pid);
		if (vm)
			key.ncallers = sq_walk_methods(vm, key.callers, ncallers, SQALLOC_MAX_CALLERS);
		if (!key.ncallers)
			key.flags |= SQALLOC_NO_STACK;
	}
	val = sq_lookup_or_init(&allocs, &key, &zero, &created);
	if (!val) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	if (created) {
		/* A new row: keep copies of its names, for a process gone before the report. */
		sq_remember_name(pid, key.cls, cls);
		if (by_method) {
			sq_remember_name(pid, key.alloc_class, alloc_class);
			sq_remember_name(pid, key.alloc_sel, alloc_sel);
		}
		if (vm)
			for (__u32 i = 0; i < SQALLOC_MAX_CALLERS; i++) {
				if (i >= key.ncallers)
					break;
				sq_remember_method(pid, key.callers[i], vm->method_print_name);
			}
	}
	__sync_fetch_and_add(&val->count, 1);
	if (sampled) {
		__sync_fetch_and_add(&val->bytes, weight);
		if (bytes)
			__sync_fetch_and_add(&val->est_count, weight * SQALLOC_EST_SCALE / bytes);
	} else {
		__sync_fetch_and_add(&val->bytes, bytes);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(object_alloc, char *cls, __u64 bytes, char *alloc_class, char *alloc_sel)
{
	return record(cls, bytes, alloc_class, alloc_sel, 0, false);
}

/* One record of an alloc__batch: the object__alloc event it stands for. */
static long on_record(__u32 i, void *unused)
{
	const SqEventRecord *r = sq_batch_record(i);

	if (!r)
		return 1;
	if (r->kind == SQ_EV_ALLOC)
		record((const char *)r->alloc.cls, r->alloc.bytes, (const char *)r->alloc.alloc_cls, (const char *)r->alloc.alloc_sel,
		       0, false);
	return 0;
}

SEC("usdt")
int BPF_USDT(alloc_batch, __u64 records, __u32 count)
{
	bpf_loop(sq_batch_load(records, count), on_record, NULL, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(object_alloc_sample, char *cls, __u64 bytes, char *alloc_class, char *alloc_sel,
	     __u64 weight)
{
	return record(cls, bytes, alloc_class, alloc_sel, weight, true);
}

SEC("usdt")
int BPF_USDT(vm_start, char *version, __u64 offsets)
{
	sq_learn_vm(offsets);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

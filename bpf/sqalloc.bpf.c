/* sqalloc.bpf.c - counts the objects an sqvm process allocates, by class and optionally by
 * allocating method, from the squeak:object__alloc (every object) or
 * squeak:object__alloc__sample (one in about every N bytes, with its weight) probes. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "sqalloc.h"
#include "sqtool.bpf.h"

/* Options, set by user space before load. */
const volatile bool by_method = false;
const volatile bool filter_class = false;
const volatile char target_class[SQ_NAME_LEN] = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQALLOC_MAX_KEYS);
	__type(key, struct sqalloc_key);
	__type(value, struct sqalloc_val);
} allocs SEC(".maps");

/* Allocations not counted because the map was full. */
__u64 lost = 0;

static __always_inline int record(const char *cls, __u64 bytes, const char *alloc_class,
				  const char *alloc_sel, __u64 weight, bool sampled)
{
	static const struct sqalloc_val zero;
	struct sqalloc_key key;
	struct sqalloc_val *val;

	__builtin_memset(&key, 0, sizeof(key));
	bpf_probe_read_user_str(key.cls, sizeof(key.cls), cls);
	if (filter_class && !sq_str_eq(key.cls, target_class))
		return 0;
	if (by_method) {
		bpf_probe_read_user_str(key.alloc_class, sizeof(key.alloc_class), alloc_class);
		bpf_probe_read_user_str(key.alloc_sel, sizeof(key.alloc_sel), alloc_sel);
	}
	val = sq_lookup_or_init(&allocs, &key, &zero);
	if (!val) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
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

SEC("usdt")
int BPF_USDT(object_alloc_sample, char *cls, __u64 bytes, char *alloc_class, char *alloc_sel,
	     __u64 weight)
{
	return record(cls, bytes, alloc_class, alloc_sel, weight, true);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqtool.bpf.h - helpers shared by the BPF side of the sqvm tools: USDT arguments, map
 * initialisation, log2 bucketing, and the bounded string comparisons that filters need.
 * Include it after bpf/usdt.bpf.h (which brings bpf_usdt_arg and the errno values). */
#ifndef SQTOOL_BPF_H
#define SQTOOL_BPF_H

#include "sqcommon.h"

/* USDT argument n (from 0) as an integer; 0 if the probe has no such argument. */
static __always_inline __u64 sq_usdt_arg(struct pt_regs *ctx, __u64 n)
{
	long v;

	bpf_usdt_arg(ctx, n, &v);
	return v;
}

/* The value for key, inserting init first if the key is new. Two CPUs may race to insert
 * the same key: BPF_NOEXIST makes one of them lose, and both then find the winner's value.
 * NULL only when the map is full: the caller counts that as a lost event. */
static __always_inline void *sq_lookup_or_init(void *map, const void *key, const void *init)
{
	void *val = bpf_map_lookup_elem(map, key);
	if (val)
		return val;
	long err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	if (err && err != -EEXIST)
		return 0;
	return bpf_map_lookup_elem(map, key);
}

/* floor(log2(v)) for v > 0, 0 for v == 0; branch-free so the verifier sees no loop. */
static __always_inline __u32 sq_log2(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/* The histogram slot of v (libbpf-tools convention): 0 and 1 -> slot 0, [2,3] -> 1,
 * [4,7] -> 2, ...; values past the last slot land in it. */
static __always_inline __u32 sq_hist_slot(__u64 v)
{
	__u32 slot = sq_log2(v);

	return slot < SQ_MAX_SLOTS ? slot : SQ_MAX_SLOTS - 1;
}

/* Does s start with the first len bytes of prefix? (len 0: always.) s is a NUL-padded
 * buffer of SQ_NAME_LEN bytes; prefix lives in .rodata, set before load. */
static __always_inline bool sq_has_prefix(const char *s, const volatile char *prefix, __u32 len)
{
	for (__u32 i = 0; i < SQ_NAME_LEN; i++) {
		if (i >= len)
			return true;
		if (s[i] != prefix[i])
			return false;
	}
	return true;
}

/* Are the NUL-terminated strings a (a read buffer) and b (.rodata) equal? */
static __always_inline bool sq_str_eq(const char *a, const volatile char *b)
{
	for (__u32 i = 0; i < SQ_NAME_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (a[i] == 0)
			return true;
	}
	return true;
}

#endif

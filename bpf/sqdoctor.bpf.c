// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqdoctor.bpf.c - counts doesNotUnderstand: sends (squeak:method__dnu) and exceptions
 * signalled (squeak:exception__signal) by the addresses of their names: the evidence
 * of sqdoctor's two storm rules, which none of the other tools gathers. A hit is a hash
 * update; names are copied once per new row. */
#include "sqvm.bpf.h"
#include "sqdoctor.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQDOCTOR_MAX_KEYS);
	__type(key, struct sqdoctor_key);
	__type(value, __u64);
} storms SEC(".maps");

__u64 lost = 0;		/* hits not counted: the map was full */

static __always_inline int count(__u32 kind, const char *cls, const char *sender_cls, const char *sel)
{
	static const __u64 zero;
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sqdoctor_key key = { .pid = pid, .kind = kind, .cls = (__u64)cls,
				    .sender_cls = (__u64)sender_cls, .sel = (__u64)sel };
	bool created = false;
	__u64 *n = sq_lookup_or_init(&storms, &key, &zero, &created);

	if (!n) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	if (created) {
		sq_remember_name(pid, key.cls, cls);
		sq_remember_name(pid, key.sender_cls, sender_cls);
		sq_remember_name(pid, key.sel, sel);
	}
	__sync_fetch_and_add(n, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(dnu, const char *cls, const char *sel)
{
	return count(SQDOCTOR_DNU, cls, 0, sel);
}

SEC("usdt")
int BPF_USDT(exception, const char *cls, const char *sender_cls, const char *sender_sel)
{
	return count(SQDOCTOR_EXCEPTION, cls, sender_cls, sender_sel);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

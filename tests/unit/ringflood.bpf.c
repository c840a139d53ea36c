// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* ringflood.bpf.c - the producer of tests/unit/drain_test.c: each run writes 64 records
 * into a ring buffer, as a target flooding a probe would. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 2 << 20);	/* 131,072 records: more than the drain's budget */
} rb SEC(".maps");

SEC("syscall")
int produce(void *ctx)
{
	__u64 v = 0;

	for (int i = 0; i < 64; i++) {
		v++;
		bpf_ringbuf_output(&rb, &v, sizeof(v), 0);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

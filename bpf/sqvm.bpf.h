// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqvm.bpf.h - what the BPF programs that read a VM's own memory share: the per-process
 * walk offsets (filled by user space for the VMs running when a tool starts, and here,
 * from squeak:vm__start, for every VM that starts later), the copies of names, and a
 * walk of the innermost Smalltalk frames. Include after sqtool.bpf.h. */
#ifndef SQVM_BPF_H
#define SQVM_BPF_H

#include "sqdebug.bpf.h"

#ifndef SQ_MAX_VMS
#define SQ_MAX_VMS 1024
#endif
#ifndef SQ_MAX_NAMES
#define SQ_MAX_NAMES 65536
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQ_MAX_VMS);
	__type(key, __u32);
	__type(value, struct sq_vm_offsets);
} vms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SQ_MAX_NAMES);
	__type(key, struct sq_name_key);
	__type(value, struct sq_name_copy);
} names SEC(".maps");

/* A name buffer: 128 bytes is a quarter of the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sq_name_copy);
} name_scratch SEC(".maps");

/* squeak:vm__start hands over the address of the VM's sqvm_debug_offsets. */
static __always_inline int sq_learn_vm(__u64 offsets_addr)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct sq_vm_offsets v = {};
	SqDebugOffsets d;

	if (bpf_probe_read_user(&d, sizeof(d), (void *)offsets_addr))
		return 0;
	if (!sq_offsets_ok(&d))
		return 0;
	v.current_process = d.current_process;
	v.process_fp = d.process_fp;
	v.frame_caller = d.frame_caller;
	v.frame_method = d.frame_method;
	v.method_print_name = d.method_print_name;
	bpf_map_update_elem(&vms, &pid, &v, BPF_ANY);
	return 0;
}

/* Copies the string at str as the name of (pid, addr), unless it is known already. */
static __always_inline void sq_remember_name(__u32 pid, __u64 addr, const void *str)
{
	struct sq_name_key k = { .pid = pid, .addr = addr };
	struct sq_name_copy *buf;
	__u32 zero = 0;

	if (!addr || bpf_map_lookup_elem(&names, &k))
		return;
	buf = bpf_map_lookup_elem(&name_scratch, &zero);
	if (!buf || bpf_probe_read_user_str(buf->name, sizeof(buf->name), str) <= 0)
		return;
	bpf_map_update_elem(&names, &k, buf, BPF_NOEXIST);
}

/* A method's printName, as its name. */
static __always_inline void sq_remember_method(__u32 pid, __u64 method, const struct sq_vm_offsets *vm)
{
	__u64 str = 0;

	if (!method || bpf_probe_read_user(&str, sizeof(str), (void *)(method + vm->method_print_name)) || !str)
		return;
	sq_remember_name(pid, method, (const void *)str);
}

/* The current green process's innermost frames' methods into out[0..max), innermost
 * first; answers how many (0: no VM offsets for this process, or no running process). */
static __always_inline __u32 sq_walk_methods(const struct sq_vm_offsets *vm, __u64 *out, __u32 max, __u32 cap)
{
	__u64 proc = 0, fp = 0, m;
	__u32 n = 0;

	if (bpf_probe_read_user(&proc, sizeof(proc), (void *)vm->current_process) || !proc ||
	    bpf_probe_read_user(&fp, sizeof(fp), (void *)(proc + vm->process_fp)))
		return 0;
	for (__u32 i = 0; i < cap; i++) {
		if (i >= max || !fp)
			break;
		m = 0;
		if (bpf_probe_read_user(&m, sizeof(m), (void *)(fp + vm->frame_method)) || !m)
			break;
		out[i] = m;
		n = i + 1;
		if (bpf_probe_read_user(&fp, sizeof(fp), (void *)(fp + vm->frame_caller)))
			break;
	}
	return n;
}

#endif

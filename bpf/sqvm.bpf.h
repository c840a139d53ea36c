// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqvm.bpf.h - the one include of every BPF program of the family: the kernel's types,
 * libbpf's helpers and USDT arguments, bpf/sqcommon.h, and what the programs share:
 *
 *   - helpers: USDT arguments, lookup-or-init, log2 histogram slots, bounded string
 *     comparisons for filters;
 *   - the family's maps: `vms` (what the tool knows of each VM process, filled by user
 *     space for the VMs running when the tool starts and by sq_learn_vm at vm__start for
 *     later ones), `names` (copies of names, for processes gone before the report);
 *   - reading a VM's memory: its current frame, a walk of its innermost methods, names.
 *
 * A tool whose programs never touch one of these maps does not create it (user space's
 * sq_skip_unused_maps, tools/sqbpf.h), and `names` and `vms` are allocated as they fill
 * (BPF_F_NO_PREALLOC). Nothing here depends on what was included before it. */
#ifndef SQVM_BPF_H
#define SQVM_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>	/* bpf_usdt_arg, BPF_USDT, and the errno values */
#include "sqcommon.h"

/* ===================================================================== */
/* Helpers                                                               */
/* ===================================================================== */

/* A global subprogram: not static, never inlined, so the verifier checks it once, on its
 * own, whatever its callers, instead of once per call site and per path that reaches it
 * (the cost that made sqreq take a quarter of a second to load: tests/bench/attach.sh).
 * Its pointer arguments may be NULL as far as the verifier knows (check them), it
 * answers a scalar, and it costs a call (a few ns) where it is used on a record. */
#define SQ_VERIFIED_ONCE __attribute__((noinline))

/* USDT argument n (from 0) as an integer; 0 if the probe has no such argument. */
static __always_inline __u64 sq_usdt_arg(struct pt_regs *ctx, __u64 n)
{
	long v;		/* bpf_usdt_arg zeroes it on error */

	bpf_usdt_arg(ctx, n, &v);
	return v;
}

/* The value for key, inserting init first if the key is new; sets *created (if not NULL;
 * the caller starts it false, so that a hit costs no store) when this call inserted it,
 * so that a new row's names are copied once. Two CPUs may race to insert the same key:
 * BPF_NOEXIST makes one of them lose, and both then find the winner's value. NULL when
 * the map is full (or user space took the entry out that instant): the caller counts the
 * event as lost. */
static __always_inline void *sq_lookup_or_init(void *map, const void *key, const void *init,
					       bool *created)
{
	void *val = bpf_map_lookup_elem(map, key);
	long err;

	if (val)
		return val;
	err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	if (err && err != -EEXIST)
		return 0;
	if (!err && created)
		*created = true;
	return bpf_map_lookup_elem(map, key);
}

/* floor(log2(v)) for v > 0, 0 for v == 0; branch-free so the verifier sees no loop. Not
 * inlined: clang compiles the comparisons to branches, and where the answer indexes an
 * array the verifier would walk the rest of the caller once for each of its 32 values. */
SQ_VERIFIED_ONCE __u64 sq_log2(__u64 v)
{
	__u64 r = 0, shift;

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
	__u64 slot = sq_log2(v);	/* 64-bit: a 32-bit one is checked on a copy */

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

/* ===================================================================== */
/* The family's maps                                                     */
/* ===================================================================== */

/* PID -> what the tool knows of that VM (bpf/sqcommon.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQ_MAX_VMS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct sq_vm_offsets);
} vms SEC(".maps");

/* (PID, address) -> the name's first bytes, copied the first time a map key used it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQ_MAX_NAMES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
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

/* ===================================================================== */
/* A VM's memory                                                         */
/* ===================================================================== */

/* sq_learn_vm's copy of a VM's debug offsets: beside the entry it makes and what its
 * caller keeps (sqstat's vm__start), too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, SqDebugOffsets);
} sq_offsets_scratch SEC(".maps");

/* squeak:vm__start hands over the address of the VM's sqvm_debug_offsets: read them,
 * check them and keep what the tool needs (nothing if they are not a structure the
 * tools know). Answers the entry, or NULL. */
static __always_inline struct sq_vm_offsets *sq_learn_vm(__u64 offsets_addr)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	SqDebugOffsets *d = bpf_map_lookup_elem(&sq_offsets_scratch, &zero);
	struct sq_vm_offsets v;

	if (!d || bpf_probe_read_user(d, sizeof(*d), (void *)offsets_addr) || !sq_debug_offsets_ok(d))
		return 0;
	sq_vm_offsets_from(d, offsets_addr, bpf_ktime_get_ns(), &v);
	bpf_map_update_elem(&vms, &pid, &v, BPF_ANY);
	return bpf_map_lookup_elem(&vms, &pid);
}

/* The current green process's id, read from the VM's memory (false: none, unreadable, or
 * a VM without the offset); *proc gets the Process (0: none). */
static __always_inline bool sq_current_process(const struct sq_vm_offsets *vm, __u64 *id, __u64 *proc)
{
	*id = 0;
	*proc = 0;
	if (!vm->process_id || bpf_probe_read_user(proc, sizeof(*proc), (void *)vm->current_process) || !*proc)
		return false;
	return !bpf_probe_read_user(id, sizeof(*id), (void *)(*proc + vm->process_id));
}

/* The current green process's innermost frame (0: none, or unreadable); *proc gets the
 * process. */
static __always_inline __u64 sq_current_frame(const struct sq_vm_offsets *vm, __u64 *proc)
{
	__u64 fp = 0;

	*proc = 0;
	if (bpf_probe_read_user(proc, sizeof(*proc), (void *)vm->current_process) || !*proc ||
	    bpf_probe_read_user(&fp, sizeof(fp), (void *)(*proc + vm->process_fp)))
		return 0;
	return fp;
}

/* The current green process's innermost frames' methods into out[0..max), innermost
 * first; answers how many (0: no running process, or an unreadable one). cap is out's
 * size, a constant, for the verifier. */
static __always_inline __u32 sq_walk_methods(const struct sq_vm_offsets *vm, __u64 *out, __u32 max, __u32 cap)
{
	__u64 proc, fp = sq_current_frame(vm, &proc), m;
	__u32 n = 0;

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

/* The VM's allocation totals now: objects, and bytes (false: unreadable). */
static __always_inline bool sq_read_allocs(const struct sq_vm_offsets *vm, __u64 *objects, __u64 *bytes)
{
	__u64 top = 0, eden = 0, before = 0;

	if (bpf_probe_read_user(objects, sizeof(*objects), (void *)vm->allocations) ||
	    bpf_probe_read_user(&top, sizeof(top), (void *)vm->gc_top) ||
	    bpf_probe_read_user(&eden, sizeof(eden), (void *)vm->gc_eden) ||
	    bpf_probe_read_user(&before, sizeof(before), (void *)vm->gc_bytes_allocated))
		return false;
	*bytes = before + top - eden;
	return true;
}

/* Reads size bytes of the VM's memory at src: the current task's (task NULL, any program),
 * or task's (a sleepable program: sqprof --wall's iterator runs in the tool's context).
 * Callers pass task as a constant NULL or a task, so a non-sleepable program's code
 * never holds the sleepable helper. */
static __always_inline long sq_read(void *dst, __u32 size, const void *src, struct task_struct *task)
{
	return task ? bpf_copy_from_user_task(dst, size, src, task, 0) : bpf_probe_read_user(dst, size, src);
}

/* The class index of the object v points to; 0 (no class) for an immediate value. */
static __always_inline __u32 sq_class_of_in(const struct sq_vm_offsets *vm, __u64 v, struct task_struct *task)
{
	__u64 hdr = 0;

	if (!v || (v & vm->value_tag_mask) || sq_read(&hdr, sizeof(hdr), (void *)v, task))
		return 0;
	return (__u32)hdr & vm->header_class_mask;
}

/* The name of green process proc as sq_process_name_in finds it, from its object obj and
 * its isMain (-1: not read yet), for a reader that has read the Process's fields already. */
static __always_inline void sq_process_name_of(const struct sq_vm_offsets *vm, __u64 proc, __u64 obj, int is_main,
					       char *buf, __u32 len, struct task_struct *task)
{
	__u64 name = 0;
	__u8 main = 0;
	__u32 cls;

	buf[0] = 0;
	if (!vm->process_name)
		return;
	cls = sq_class_of_in(vm, obj, task);
	if (!cls || cls == vm->class_nil) {
		if (is_main < 0)
			sq_read(&main, sizeof(main), (void *)(proc + vm->process_is_main), task);
		else
			main = is_main;
		if (main && len >= 5)
			__builtin_memcpy(buf, "main", 5);
		return;
	}
	if (sq_read(&name, sizeof(name), (void *)(obj + vm->process_name), task))
		return;
	cls = sq_class_of_in(vm, name, task);
	if (!cls || (cls != vm->class_string && cls != vm->class_symbol))
		return;
	if (task) {
		bool end = false;

		if (sq_read(buf, len, (void *)(name + vm->string_bytes), task))
			buf[0] = 0;
		for (__u32 i = 0; i < len; i++) {	/* what follows the NUL is not the name's */
			if (end)
				buf[i] = 0;
			else if (!buf[i])
				end = true;
		}
		buf[len - 1] = 0;
	} else if (bpf_probe_read_user_str(buf, len, (void *)(name + vm->string_bytes)) < 0) {
		buf[0] = 0;
	}
}

/* The name of green process proc into buf (NUL-terminated, len bytes, a constant), as
 * Process>>name has it, and its id into *id: the name field of its Smalltalk object, or
 * "main" for the main process before it has one; an empty buf for a process without a
 * name (Smalltalk calls it "process ID"). Every value is checked by its class before
 * it is followed: a sample that lands mid-collection gets no name rather than garbage.
 * task: as sq_read's (a task's memory has no string read: len bytes are copied). */
static __always_inline void sq_process_name_in(const struct sq_vm_offsets *vm, __u64 proc, char *buf, __u32 len,
					       __u32 *id, struct task_struct *task)
{
	__u64 obj = 0, pid64 = 0;

	buf[0] = 0;
	*id = 0;
	if (!proc || !vm->process_name)
		return;
	sq_read(&pid64, sizeof(pid64), (void *)(proc + vm->process_id), task);
	*id = (__u32)pid64;
	sq_read(&obj, sizeof(obj), (void *)(proc + vm->process_obj), task);
	sq_process_name_of(vm, proc, obj, -1, buf, len, task);
}

static __always_inline void sq_process_name(const struct sq_vm_offsets *vm, __u64 proc, char *buf, __u32 len,
					    __u32 *id)
{
	sq_process_name_in(vm, proc, buf, len, id, 0);
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
	if (!buf || bpf_probe_read_user_str(buf->name, sizeof(buf->name), str) <= 1)
		return;
	bpf_map_update_elem(&names, &k, buf, BPF_NOEXIST);
}

/* A method's printName (at print_name_off in the Method: sq_vm_offsets), as its name. */
static __always_inline void sq_remember_method(__u32 pid, __u64 method, __u32 print_name_off)
{
	struct sq_name_key k = { .pid = pid, .addr = method };
	__u64 str = 0;

	if (!method || bpf_map_lookup_elem(&names, &k) ||
	    bpf_probe_read_user(&str, sizeof(str), (void *)(method + print_name_off)) || !str)
		return;
	sq_remember_name(pid, method, (const void *)str);
}

#endif

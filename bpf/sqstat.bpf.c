// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqstat.bpf.c - tells sqstat at once when an sqvm process starts (with the address of
 * its debug offsets) and when it exits (with its final totals, read from its memory as
 * it exits, so that even a VM that lives less than one refresh is counted). The running
 * VMs' rates come from counters the VM keeps itself (SqVMCounters), which user space
 * reads from their memory: counting every call or allocation here would slow every VM
 * on the host by 10 to 1000 times. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "sqstat.h"
#include "sqtool.bpf.h"
#include "sqdebug.bpf.h"

/* pid -> the run-time address of its sqvm_debug_offsets: from vm__start, or from user
 * space for the VMs that were running when sqstat started. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SQSTAT_MAX_VMS);
	__type(key, __u32);
	__type(value, struct sqstat_vm);
} offsets_of SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} rb SEC(".maps");

/* The event under construction and a copy of the offsets: too big for the stack. */
struct scratch {
	struct sqstat_event e;
	SqDebugOffsets d;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

__u64 lost = 0;

static __always_inline __u64 rd(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline bool read_totals(const SqDebugOffsets *d, struct sqstat_totals *t)
{
	SqVMCounters c;
	__u64 top, eden;

	if (bpf_probe_read_user(&c, sizeof(c), (void *)d->counters))
		return false;
	t->activations = c.activations;
	t->allocations = c.allocations;
	t->process_switches = c.process_switches;
	t->dnus = c.dnus;
	t->class_loads = c.class_loads;
	t->primitive_failures = c.primitive_failures;
	top = rd(d->gc_top);
	eden = rd(d->gc_eden);
	t->bytes_allocated = rd(d->gc_bytes_allocated) + (top > eden ? top - eden : 0);
	t->young_count = rd(d->gc_young_count);
	t->full_count = rd(d->gc_full_count);
	t->young_pause_ns = rd(d->gc_young_pause_ns);
	t->full_pause_ns = rd(d->gc_full_pause_ns);
	return true;
}

/* The process's argv, from its mm (CO-RE): the VM is running, so the memory is there. */
static __always_inline void read_cmdline(struct sqstat_event *e)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	unsigned long start = BPF_CORE_READ(task, mm, arg_start);
	unsigned long end = BPF_CORE_READ(task, mm, arg_end);
	__u64 len = end > start ? end - start : 0;

	if (len > SQSTAT_CMDLINE - 1)
		len = SQSTAT_CMDLINE - 1;
	len &= SQSTAT_CMDLINE - 1;	/* the same bound, in a form the verifier keeps */
	e->cmdline_len = 0;
	if (len && !bpf_probe_read_user(e->cmdline, len, (void *)start))
		e->cmdline_len = len;
}

static __always_inline int emit(__u32 type, __u64 offsets, __s32 status)
{
	__u32 zero = 0, pid = bpf_get_current_pid_tgid() >> 32;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct sqstat_vm *known, fresh = {};

	if (!s)
		return 0;
	__builtin_memset(&s->e, 0, sizeof(s->e));
	s->e.ts_ns = bpf_ktime_get_ns();
	s->e.pid = pid;
	s->e.type = type;
	s->e.status = status;
	read_cmdline(&s->e);
	if (type == SQSTAT_START) {
		s->e.offsets = offsets;
		fresh.offsets = offsets;
		fresh.start_ns = s->e.ts_ns;
		bpf_map_update_elem(&offsets_of, &pid, &fresh, BPF_ANY);
	} else {
		known = bpf_map_lookup_elem(&offsets_of, &pid);
		if (known) {
			s->e.offsets = known->offsets;
			s->e.start_ns = known->start_ns;
			if (!bpf_probe_read_user(&s->d, sizeof(s->d), (void *)known->offsets) && sq_offsets_ok(&s->d))
				s->e.have_totals = read_totals(&s->d, &s->e.totals);
			bpf_map_delete_elem(&offsets_of, &pid);
		}
	}
	if (bpf_ringbuf_output(&rb, &s->e, sizeof(s->e), 0))
		__sync_fetch_and_add(&lost, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(vm_start, char *version, __u64 offsets)
{
	return emit(SQSTAT_START, offsets, 0);
}

SEC("usdt")
int BPF_USDT(vm_exit, int status)
{
	return emit(SQSTAT_EXIT, 0, status);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

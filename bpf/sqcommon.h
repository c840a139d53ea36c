// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqcommon.h - sizes shared by every tool's BPF program and its user-space half. */
#ifndef SQCOMMON_H
#define SQCOMMON_H

/* Room for a class name or a selector read from the VM; longer ones are cut (NUL kept). */
#define SQ_NAME_LEN 64

/* Slots of a log2 histogram: slot i counts values in [2^(i-1), 2^i - 1] (slot 0: 0 and 1). */
#define SQ_MAX_SLOTS 32

/* A name (class, selector, method) as a BPF program copied it: the first SQ_NAME_COPY - 1
 * bytes, kept by (process, address) the first time a new map key used it, for a process
 * that has exited before user space read its names whole (tools/sqnames.h). */
#define SQ_NAME_COPY 128

struct sq_name_key {
	__u32 pid;
	__u32 pad;
	__u64 addr;		/* of the string, or of the Method (its printName) */
};

struct sq_name_copy {
	char name[SQ_NAME_COPY];
};

/* What a BPF stack walk needs of a VM, from its sqvm_debug_offsets: run-time addresses
 * (load bias included) and field offsets. Kept per process (tgid) in a map. */
struct sq_vm_offsets {
	__u64 current_process;		/* &interp_current: Process ** */
	__u32 process_fp;		/* Process.fp: Frame * */
	__u32 frame_caller;		/* Frame.caller: Frame * */
	__u32 frame_method;		/* Frame.method: Method *, NULL in the bottom frame */
	__u32 method_print_name;	/* Method.printName: char * */
};

#endif

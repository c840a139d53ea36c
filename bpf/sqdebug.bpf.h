// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* sqdebug.bpf.h - the VM's debug-offsets contract (probes/debug_offsets.h) for BPF
 * programs, which have vmlinux.h's types instead of <stdint.h>. */
#ifndef SQDEBUG_BPF_H
#define SQDEBUG_BPF_H

typedef __u32 uint32_t;
typedef __u64 uint64_t;
#include "debug_offsets.h"

/* Is d a debug-offsets structure this program knows? */
static __always_inline bool sq_offsets_ok(const SqDebugOffsets *d)
{
	return d->magic[0] == 'S' && d->magic[1] == 'Q' && d->magic[2] == 'V' &&
	       d->version == SQVM_DEBUG_VERSION && d->size >= sizeof(SqDebugOffsets);
}

#endif

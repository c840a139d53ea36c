// SPDX-License-Identifier: BSD-2-Clause
/* sqslow_switch.h - when each followed VM's thread leaves a CPU and gets one back, from
 * the kernel's own context-switch records (perf_event_open with context_switch on that
 * thread alone, read from its mmap ring): the kernel writes a record at that thread's
 * switches only, where a sched_switch program would run at every switch of the machine.
 * What sqslow makes of them: its OFFCPU state (tools/sqslow_replay.h). */
#ifndef SQSLOW_SWITCH_H
#define SQSLOW_SWITCH_H

#include <stdbool.h>
#include <linux/types.h>

struct sqslow_switches;

/* cpu(ctx, pid, ts, on): VM pid's thread took a CPU (on) or left it at ts
 * (CLOCK_MONOTONIC, as bpf_ktime_get_ns and the records). */
typedef void (*sqslow_cpu_fn)(void *ctx, __u32 pid, __u64 ts, bool on);

struct sqslow_switches *sqslow_switches_new(void);
void sqslow_switches_free(struct sqslow_switches *sw);
/* Follows the n VMs in pids (a new one from now; one not in pids any more is let go)
 * and hands on what each one's thread did since the last poll, in order. */
void sqslow_switches_poll(struct sqslow_switches *sw, const __u32 *pids, int n, sqslow_cpu_fn cpu, void *ctx);
/* Switch records the kernel dropped (a ring full between two polls), and VMs whose
 * switches could not be followed (perf_event_open refused). */
__u64 sqslow_switches_lost(const struct sqslow_switches *sw);
__u64 sqslow_switches_unfollowed(const struct sqslow_switches *sw);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sqattach.h - starting to trace: a BPF program attached to every site of a squeak USDT
 * probe in every target binary (the kernel then bumps the probe's semaphore in each
 * traced process, which turns the VM's guarded site on), or to a perf event on every
 * CPU; the offsets of the VMs already running handed to the BPF side (later ones hand
 * theirs over at vm__start); and the "Tracing ..." line that says it is done.
 *
 * Attach return probes before entry probes: an entry whose return is not traced yet
 * would never end. Every link is kept here, and sq_detach_all ends them all (the kernel
 * then lowers the semaphores again). */
#ifndef SQATTACH_H
#define SQATTACH_H

#include "sqmem.h"
#include "sqopts.h"

struct bpf_program;
struct perf_event_attr;

/* Attaches prog to every site of squeak:probe in every target binary (c->bins): for
 * c->pid only, or for every process running the binary, present and future. */
int sq_attach(struct sq_common *c, struct bpf_program *prog, const char *probe);

/* Attaches prog to a perf event of attr on every online CPU, for every process. */
int sq_attach_perf(struct bpf_program *prog, struct perf_event_attr *attr);

void sq_detach_all(void);

/* Hands vm's offsets to a BPF program's vms map (bpf/sqvm.bpf.h): the entry vm__start
 * made, if there is one, is kept. 0, or a negative errno. */
int sq_vm_publish(int vms_fd, const struct sq_vm *vm);

/* The same for the VMs running now: the -p one, or every process of the target
 * binaries. With -p and why, a VM that cannot be read is reported: "TOOL: PID N:
 * REASON: WHY". */
void sq_publish_running_vms(const struct sq_common *c, int vms_fd, const char *why);

/* "Tracing WHAT of PID 42... Hit Ctrl-C to end." (on stderr unless the output is text),
 * and with -v the start-up time and the binaries. */
void sq_print_tracing(const struct sq_common *c, const char *what);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sqbpf.h - what every tool does with libbpf before and after loading its skeleton: the
 * privilege and kernel checks (one clear line when they fail), libbpf's messages, the
 * built-in BTF subset that spares parsing the kernel's, and reading maps. */
#ifndef SQBPF_H
#define SQBPF_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "sqopts.h"

struct argp;
struct bpf_object_open_opts;

/* The start of every USDT tool's main(): sq_init, the command line (argp), then what
 * comes before opening the skeleton: libbpf set-up, the privilege and kernel checks,
 * finding the VMs (sq_find_targets), the open options. Answers 0, or the exit status
 * after printing why (SQ_EXIT_USAGE, SQ_EXIT_ERROR). */
int sq_start(struct sq_common *c, const char *tool, const struct argp *argp, int argc, char **argv,
	     struct bpf_object_open_opts *opts);

/* The steps of sq_start, for a tool that needs other ones (sqprof). */
void sq_setup_libbpf(const struct sq_common *c);	/* debug messages only with -v */
int sq_check_privileges(void);
int sq_check_kernel(void);				/* BPF and uprobes */
int sq_check_perf(void);				/* BPF programs on perf events */

/* Open options for a skeleton: on the kernel the tools were built on, CO-RE relocates
 * against the built-in subset of its BTF instead of parsing all of it (see tools.mk). */
void sq_open_opts(const struct sq_common *c, struct bpf_object_open_opts *opts);

/* The family's maps (bpf/sqvm.bpf.h) are in every BPF object; creating one that no
 * program uses would cost start-up time (names: most of a millisecond). Called between
 * open and load, this leaves uncreated each of them that no program's code refers to
 * (read from the relocations of the skeleton's copy of the object, as libbpf reads
 * them). Their fds are then -1: user space must not use them either. */
struct bpf_object_skeleton;
void sq_skip_unused_maps(const struct bpf_object_skeleton *s);

/* A snapshot of the keys of a BPF hash map (at most max, key_size bytes each), so that
 * the entries can be taken out one by one while the kernel goes on adding to it. Answers
 * a calloc'ed array (free it) with its length in *n, or NULL if out of memory. */
void *sq_map_keys(int fd, size_t key_size, size_t max, size_t *n);

/* Deletes the entries of a hash map whose keys begin with one of the n PIDs (a __u32),
 * in one pass over its keys however many PIDs: how a tool that outlives many VMs drops
 * the exited ones' entries. Sorts pids. A map not created (fd -1) is left alone. */
struct bpf_map;
void sq_map_forget_pids(const struct bpf_map *map, pid_t *pids, size_t n);

/* Atomically read and zero a counter shared with a BPF program (mmap'ed .bss). */
static inline __u64 sq_take(__u64 *p)
{
	return __atomic_exchange_n(p, 0, __ATOMIC_RELAXED);
}

#endif

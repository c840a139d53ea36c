// SPDX-License-Identifier: BSD-2-Clause
/* sqnames.h - the full names (class names, selectors, method names) of VM processes, by
 * address. The BPF programs key their counts by the addresses of names, which the VM
 * keeps in memory that never moves or changes, so (pid, address) identifies a name for
 * the life of the process; they also copy a name's first bytes (the names map of
 * bpf/sqvm.bpf.h, or an event's fixed-size field). A name that filled its copy is read
 * whole from the process here, once, and cached. If the process has exited meanwhile the
 * copy is all there is: it is shown with "..." appended, and since rows are keyed by
 * address, two names that share their first bytes still never become one row. */
#ifndef SQNAMES_H
#define SQNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

/* The longest name read from a process (longer ones are cut, with "..."). */
#define SQ_FULL_NAME_MAX 4096
/* The most names kept at once (a target can make any number of addresses): past them a
 * name is not learnt, and counts in sq_names_unknown; sq_names_forget makes room. */
#define SQ_NAMES_MAX 262144

/* The name at addr in pid, given the copy the BPF side took (copy_len bytes, NUL-padded;
 * NULL if it has none). *complete (if not NULL) says whether it is the whole name. NULL
 * if nothing is known of it (no copy, and the process cannot be read). The answer lives
 * until sq_names_free (for address 0, which names nothing: as long as copy, or ""). */
const char *sq_name(pid_t pid, __u64 addr, const char *copy, size_t copy_len, bool *complete);

/* The same for a method, whose name is its printName: a string the Method at addr points
 * to from offset print_name_off (a negative offset: the copy only). */
const char *sq_method_name(pid_t pid, __u64 method, int print_name_off, const char *copy,
			   size_t copy_len, bool *complete);

/* The same, with the copy from a tool's names map, and for a method the printName
 * offset from its vms map (both of bpf/sqvm.bpf.h, by their fds). */
const char *sq_map_name(int names_fd, pid_t pid, __u64 addr, bool *complete);
/* sq_map_name, with fallback (fallback_len bytes, as sq_name's copy) where the map has
 * no copy. */
const char *sq_map_name_or(int names_fd, pid_t pid, __u64 addr, const char *fallback, size_t fallback_len,
			   bool *complete);
const char *sq_map_method_name(int names_fd, int vms_fd, pid_t pid, __u64 method, bool *complete);

/* -C and -M take name prefixes. The BPF side compares a prefix's first SQ_NAME_LEN - 1
 * bytes (sq_has_prefix, bpf/sqvm.bpf.h): sq_prefix_set puts them in the program's
 * .rodata before load; sq_has_name_prefix checks a whole name against the whole prefix
 * (true for a NULL prefix). */
void sq_prefix_set(char *dst, __u32 *len, const char *prefix);
bool sq_has_name_prefix(const char *name, const char *prefix);

/* How many distinct names nothing could be learnt of (the NULL answers). */
__u64 sq_names_unknown(void);

/* Calls fn for every name known (not the unknown ones), in no particular order. */
void sq_names_each(void (*fn)(void *ctx, pid_t pid, __u64 addr, const char *name), void *ctx);

/* Forgets the names of process pid (it has exited: a new process may get its PID, and
 * hold other names at the same addresses). For tools that outlive many VMs. */
void sq_names_forget(pid_t pid);

void sq_names_free(void);

#endif

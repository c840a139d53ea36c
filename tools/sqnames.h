// SPDX-License-Identifier: BSD-2-Clause
/* sqnames.h - the full names (class names, selectors, method names) of VM processes, by
 * address. The BPF programs copy a fixed-size prefix of each name (SQ_NAME_LEN bytes,
 * bpf/sqcommon.h) and pass its address; the VM keeps these strings in memory that never
 * moves or changes, so (pid, address) identifies a name for the life of the process. A
 * name that filled its prefix is read whole from the process here, once, and cached. If
 * the process has exited meanwhile the prefix is all there is: it is shown with "..."
 * appended, and since rows are keyed by address, two names that share a prefix still
 * never become one row. */
#ifndef SQNAMES_H
#define SQNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

/* The longest name read from a process (longer ones are cut, with "..."). */
#define SQ_FULL_NAME_MAX 4096

/* The name at addr in pid, given the prefix the BPF side copied (prefix_len bytes,
 * NUL-padded; NULL if it has none). *complete (if not NULL) says whether it is the whole
 * name. The answer lives until sq_names_free. */
const char *sq_name(pid_t pid, __u64 addr, const char *prefix, size_t prefix_len, bool *complete);

/* The same for a method, whose name (its printName) is a string the Method at addr points
 * to from offset print_name_off (a negative offset: use the prefix only). */
const char *sq_method_name_of(pid_t pid, __u64 method, int print_name_off, const char *prefix,
			      size_t prefix_len, bool *complete);

void sq_names_free(void);

#endif

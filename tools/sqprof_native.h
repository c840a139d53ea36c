// SPDX-License-Identifier: BSD-2-Clause
/* sqprof_native.h - -K and -U: names for the kernel's and the VM's own C frames, from
 * the BPF stack-trace map, /proc/kallsyms, and the ELF symbols of the mapped files. */
#ifndef SQPROF_NATIVE_H
#define SQPROF_NATIVE_H

#include <stdbool.h>
#include <sys/types.h>

/* Remembers pid's executable mappings (call while it runs: they are read at the end). */
void sqp_native_add_process(pid_t pid);

/* Adds the frames of stack id (outermost first) through add(ctx, name). Kernel frames
 * carry the suffix "_[k]". C frames are those inside the innermost interpreter frame (the
 * primitives and runtime functions the innermost method called); when the unwinder found
 * no interpreter frame and did not reach _start (a VM built without frame pointers
 * unwinds a frame or two, then reads garbage), only the innermost frame, which is exact. */
void sqp_native_fold(int map_fd, int id, pid_t pid, bool kernel,
		     void (*add)(void *ctx, const char *frame), void *ctx);

/* Forgets pid's mappings (it has exited: a new process may get its PID). */
void sqp_native_forget(pid_t pid);

void sqp_native_free(void);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* sched.h - green processes: the ProcessorScheduler, Semaphores and Delays. */
#ifndef SQVM_SCHED_H
#define SQVM_SCHED_H

#include "interp.h"

enum { PS_RUNNING, PS_READY, PS_WAITING, PS_SUSPENDED, PS_TERMINATED };
enum { PRIORITY_MIN = 1, PRIORITY_USER = 40, PRIORITY_MAX = 80 };

/* Fields of the core library's Process and Semaphore objects (vm/lib). */
enum { PROC_NEXT_LINK, PROC_HANDLE, PROC_NAME, PROC_NFIELDS };
enum { SEM_FIRST, SEM_LAST, SEM_EXCESS, SEM_NFIELDS };


void sched_init(Process *main);
#ifdef SQVM_FUZZ
void sched_fuzz_reset(Process *main);
#endif
/* The main process's Smalltalk object, made once the Process class is loaded. */
void sched_main_object(void);
/* At a safe point: wake expired Delays; may switch processes (answers true if it did). */
bool sched_poll(void);
/* The bottom frame of a forked process returned: end it and run the next one. */
void sched_process_finished(void);
/* An error in a forked process: end it (after its backtrace was printed). */
void sched_terminate_active(void);
bool sched_active_is_main(void);
const char *sched_process_name(Process *p);
/* Every live process (linked through allNext). */
Process *sched_all_processes(void);
void sched_scan_roots(void (*visit)(Value *));


#endif

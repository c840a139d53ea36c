// SPDX-License-Identifier: BSD-2-Clause
/* sched.h - green processes: the ProcessorScheduler, Semaphores, Delays and I/O waits.
 * The primitives that drive it are in prim_process.c and prim_io.c; the event loop it
 * sleeps in is io.c. */
#ifndef SQVM_SCHED_H
#define SQVM_SCHED_H

#include "interp.h"

/* A process's state. PS_WAITING: on a Semaphore (waitingOn) or a Delay (in the timer
 * heap); PS_IO: on a file descriptor (ioFd), and in the timer heap if the wait has a
 * timeout. Process>>state names them (prim_process.c). */
enum { PS_RUNNING, PS_READY, PS_WAITING, PS_IO, PS_SUSPENDED, PS_TERMINATED };
enum { PRIORITY_MIN = 1, PRIORITY_USER = 40, PRIORITY_MAX = 80 };

/* Fields of the core library's Process and Semaphore objects (vm/lib). */
enum { PROC_NEXT_LINK, PROC_HANDLE, PROC_NAME, PROC_NFIELDS };
/* SEM_TAKER: the id of the process that last took a signal of it (a wait that did not
 * block, or the waiter a signal woke): for a Semaphore used as a mutex, its holder. */
enum { SEM_FIRST, SEM_LAST, SEM_EXCESS, SEM_TAKER, SEM_NFIELDS };


void sched_init(Process *main);
#ifdef SQVM_FUZZ
void sched_fuzz_reset(Process *main);
#endif
/* The main process's Smalltalk object, made once the Process class is loaded. */
void sched_main_object(void);
/* At a safe point with sched_attention set: wake the expired timers and the processes
 * whose I/O is ready; may switch processes (answers true if it did). */
bool sched_poll(void);
/* The bottom frame of a forked process returned: end it and run the next one. */
void sched_process_finished(void);
/* An error in a forked process: end it (after its backtrace was printed). */
void sched_terminate_active(void);
bool sched_active_is_main(void);
const char *sched_process_name(Process *p);
/* Every live process (linked through allNext). */
Process *sched_all_processes(void);
extern Process *sched_all; /* the same list's head, for sqvm_debug_offsets */
void sched_scan_roots(void (*visit)(Value *));

/* ---- For the primitives ----
 * args[0] is the primitive's receiver and its result slot. Each answers what the
 * primitive answers: PRIM_ACTIVATED when another process runs now (the caller's
 * result is then what args[0] holds when it runs again). */
Process *sched_process_of(Value processObject);     /* NULL: not a live process */
Value sched_new_process(Value block);               /* suspended, at the active one's priority */
PrimResult sched_resume(Process *p, Value *args);
PrimResult sched_suspend(Process *p, Value *args);
PrimResult sched_terminate(Process *p, Value *args);
PrimResult sched_set_priority(Process *p, int priority, Value *args);
PrimResult sched_give_turn(Value *args);
PrimResult sched_terminate_active_prim(void);
PrimResult sched_semaphore_wait(Value *args);
PrimResult sched_semaphore_signal(Value *args);
PrimResult sched_delay(Value *args, uint64_t ns);
/* The active process waits on fd (io.c has made it the fd's waiter) until
 * sched_io_wake, or for at most timeoutNs (0: no limit); its primitive then answers
 * true (woken) or false (timed out). op is the io__wait probe's operation. */
PrimResult sched_io_wait(Value *args, int fd, int op, uint64_t timeoutNs);
/* io.c: the fd p waits on is ready (or was closed): p joins its ready queue. */
void sched_io_wake(Process *p);

#endif

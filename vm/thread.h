// SPDX-License-Identifier: BSD-2-Clause
/* thread.h - the VM's helper thread: the event loop's watcher (io.c), started with every
 * signal blocked. The interpreter runs on one thread; the watcher only watches and sets
 * flags. (The batch ticker, record.c, is a timer signal, not a thread.) */
#ifndef SQVM_THREAD_H
#define SQVM_THREAD_H

/* Starts fn(NULL) on a detached thread named name, with a 64 KiB stack and every signal
 * blocked, so that signals (SIGINT, a fuzzer's or a profiler's timers) keep going to the
 * VM's own thread. Answers 0, or pthread_create's error number. */
int thread_start_helper(void *(*fn)(void *), const char *name);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* io.h - the event loop under the scheduler: one epoll set for every socket, the table
 * of the file descriptors the program owns (closed with their handle, at exit, or when
 * the collector finds the handle unreachable), the waits of processes on them, and the
 * watcher thread that interrupts a computing process when a higher-priority waiter's
 * I/O or timer is due. Used by sched.c (the loop) and prim_io.c (the handles). */
#ifndef SQVM_IO_H
#define SQVM_IO_H

#include "interp.h"

/* The io__wait/io__ready probes' operations (probes/squeak.d). */
enum { IO_OP_READ, IO_OP_WRITE, IO_OP_ACCEPT, IO_OP_CONNECT };
/* The direction an operation waits in: read and accept for input, write and connect
 * for output. */
enum { IO_DIR_READ, IO_DIR_WRITE };
static inline int io_op_dir(int op) { return op == IO_OP_READ || op == IO_OP_ACCEPT ? IO_DIR_READ : IO_DIR_WRITE; }

void io_init(void);
#ifdef SQVM_FUZZ
void io_fuzz_reset(void);
#endif

/* ---- The loop (sched.c) ---- */
/* Collects the I/O events and wakes the processes they concern (sched_io_wake);
 * block: sleeps until there is one, or the alarm goes off. */
void io_poll(bool block);
/* The alarm goes off no later than ns (CLOCK_MONOTONIC): the earliest timer. It is in
 * the epoll set, so it ends io_poll's sleep and wakes the watcher. */
void io_alarm_by(uint64_t ns);
/* Some process waits on a file descriptor. */
bool io_has_waiters(void);
/* p stops waiting on its fd (it timed out, or was terminated or suspended). */
void io_cancel(Process *p);
/* The watcher thread sets sched_attention as soon as the alarm goes off (WATCH_ALARM),
 * or the epoll set has any event (WATCH_EVENTS); WATCH_NONE, it costs nothing. The
 * scheduler turns it on only while a process waiting on a timer or on I/O outranks
 * the running one: only then can the event preempt. */
enum { WATCH_NONE, WATCH_ALARM, WATCH_EVENTS };
void io_watch(int what);
/* The watcher fired and the scheduler has looked: it may fire again. */
void io_watch_rearm(void);

/* ---- The handles (prim_io.c) ---- */
/* Takes fd into the table for the handle object owner (not yet returned to Smalltalk);
 * pollable fds (sockets) join the epoll set. Answers 0, or -errno (fd is then closed). */
int io_adopt(int fd, Value owner, bool pollable);
/* The open fd of a handle object, or -1 (closed, or not a handle the table knows). */
int io_fd_of(Value handle);
/* Closes fd and forgets it; processes waiting on it wake (and find it closed). */
int io_close(int fd);
/* A socket (in the epoll set), not a file. */
bool io_is_socket(int fd);
/* io__batch's kind of descriptor fd of the table (SQ_IO_FILE, SQ_IO_TCP, SQ_IO_OTHER:
 * probes/event_batch.h), found once (fstat; a socket the VM made is TCP) and kept until
 * fd is closed. */
int io_fd_kind(int fd);
/* The same of a descriptor not in the table yet (open's new one), kept for the
 * io_adopt that must follow. */
int io_fd_kind_new(int fd);
/* An operation on fd answered EAGAIN: readiness in dir is used up. */
void io_not_ready(int fd, int dir);
/* The active process waits until fd is ready for op; see sched_io_wait. A wait that
 * finds the readiness already there answers true at once. Processes waiting in the
 * same direction all wake together, in the order they came. */
PrimResult io_wait(Value *args, int fd, int op, uint64_t timeoutNs);
/* Before making a new fd: when many handles were opened since the last look, a full
 * collection closes those the program dropped (so dropping handles cannot run the
 * process out of descriptors). force: the last open failed with EMFILE/ENFILE. */
void io_reclaim(bool force);

#endif

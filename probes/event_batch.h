/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * event_batch.h - the records of the batch probes (squeak:alloc__batch, call__batch, sched__batch,
 * req__batch, io__batch):
 * part of the probe contract, as squeak.d and debug_offsets.h are. Plain C with fixed-width
 * types, included by the VM (vm/batch.c) and by the tools' BPF programs (bpf/sqbatch.bpf.h).
 *
 * While a batch probe is enabled the VM writes each event of its kind as one record into a
 * buffer in its own memory, in the order the events happen, and fires the batch probe
 * once per batch with the address of the first record and their number: one uprobe hit
 * for up to SQ_BATCH_MAX events instead of one per event. probes/README.md ("Event
 * batches") gives the flush rules. Every record has the same size, so that a reader
 * copies a batch in fixed chunks; a kind uses the words it needs (the others hold
 * anything).
 * The layout is versioned by SQ_BATCH_VERSION: new kinds may be added (a reader skips a
 * kind it does not know), a kind's words never change meaning.
 */
#ifndef SQVM_EVENT_BATCH_H
#define SQVM_EVENT_BATCH_H

#define SQ_BATCH_VERSION 1

/* Records per batch, at most: a full buffer is flushed. */
#define SQ_BATCH_MAX 256

/* A record older than this when the next one is written is flushed first (ns), so that
 * a tool's interval report is never more than about this far behind a busy VM. */
#define SQ_BATCH_AGE_NS 2000000

/* The kinds (SqEventRecord.kind). */
enum {
	SQ_EV_NONE = 0,
	/* alloc__batch: an object was allocated (object__alloc's event).
	 * a[0] class name (char *), a[1] bytes (header included), a[2] the allocating
	 * method's class name (char *), a[3] its selector (char *). */
	SQ_EV_ALLOC = 1,
	/* call__batch: an activation begins or ends (method__entry, method__return,
	 * block__entry, block__return). arg: depth (as the probes'); a[0] receiver class
	 * name, a[1] selector, a[2] defining class name (char *, as the probes'), a[3] frame,
	 * a[4] the caller's frame (0: the outermost), a[5] the frame's Method *, a[6] the
	 * caller's Method * (0: none). */
	SQ_EV_METHOD_ENTRY = 2,
	SQ_EV_METHOD_RETURN = 3,
	SQ_EV_BLOCK_ENTRY = 4,
	SQ_EV_BLOCK_RETURN = 5,
	/* call__batch: the scheduler transfers control to a green process (process__activate's
	 * event, so that call times can leave out time switched out). arg: its priority;
	 * a[0] its id, a[3] its name (sched__batch, below). */
	SQ_EV_PROCESS_ACTIVATE = 6,
	/* sched__batch: the scheduler's events (req__batch: the requests' too, and a
	 * process's while it has one open; io__batch: io__ready's), each with its per-event
	 * probe's arguments (squeak.d). A process's records (activate included) hold its name
	 * in a[3] (char *): a Smalltalk string, which a collection may move, so the VM
	 * flushes the buffer before every collection and a reader reads the name while it
	 * handles the batch. Every record of this batch (and activate's) holds the VM's
	 * allocation totals at the event, a[4] objects and a[5] bytes (as sqvm_debug_offsets
	 * adds them up), and a wait's (PROCESS_WAIT, IO_WAIT) a[6] the Method * of the
	 * running process's innermost frame: what a reader of the batch can no longer read
	 * as it was. SQ_EV_PROCESS_ACTIVATE is in this batch too while sched__batch is
	 * enabled (one record for both batch probes). */
	/* process__ready: arg the reason (0 resumed .. 4 io); a[0] the id. */
	SQ_EV_PROCESS_READY = 7,
	/* process__wait: a[0] the id, a[1] the Semaphore's identity hash (0: a Delay),
	 * a[2] the timeout (ns; the Delay's length). */
	SQ_EV_PROCESS_WAIT = 8,
	/* process__create: arg the priority; a[0] the id. */
	SQ_EV_PROCESS_CREATE = 9,
	/* process__exit: a[0] the id. */
	SQ_EV_PROCESS_EXIT = 10,
	/* io__wait: arg the op (0 read, 1 write, 2 accept, 3 connect); a[0] the id, a[1] the
	 * fd, a[2] the timeout (ns, 0: none). (io__batch has the whole wait in
	 * SQ_EV_IO_READY's records.) */
	SQ_EV_IO_WAIT = 11,
	/* io__ready (io__batch's alone: sched__batch's process__ready, reason 4, follows at
	 * the same time): arg the op; a[0] the id, a[1] the fd, a[2] timedout (0 or 1),
	 * a[6] when the wait began (its io__wait; 0 if
	 * io__batch was not enabled then: then nothing follows) and an SQ_EV_IO_FRAMES
	 * record (below) follows with the waiting process's Methods (its frames are as they
	 * were when it began to wait) and the descriptor's kind: the whole wait, for a
	 * reader that keeps nothing between the two. */
	SQ_EV_IO_READY = 12,
	/* request__begin: a[0] the request's id, a[1] the route (char *, interned), a[2] the
	 * process's id. req__batch gets it late, with its own time, only once its process
	 * stops running (or a collection begins) before the request ends; otherwise the
	 * request is one SQ_EV_REQUEST_RUN. */
	SQ_EV_REQUEST_BEGIN = 13,
	/* request__end: arg the status (int32, -1 and -2 as request__end's); a[0] the id,
	 * a[1] the route, a[2] the process's id. */
	SQ_EV_REQUEST_END = 14,
	/* io__batch: one system call of an I/O primitive (a handle's read, write or send,
	 * accept4, connect, open, close; not the event loop's own calls), stamped with the
	 * time it began. arg: the op (bits 0-7: 0 read, 1 write, 2 accept, 3 connect,
	 * 4 open, 5 close) and the descriptor's kind (bits 8-15: 0 a regular file, 1 a TCP
	 * socket, 2 other; accept's and open's are the new descriptor's when the call
	 * succeeded, else the listener's and a file's). a[0] the running process's id, a[1]
	 * the descriptor (accept's and open's new one when the call succeeded, else the
	 * listener and -1; connect's new socket), a[2] the result (bytes read or written,
	 * accept's and open's new descriptor, 0; or -errno: EAGAIN is a
	 * failure), a[3] the time in the call (ns), a[4..6] the running process's innermost
	 * three Methods (the primitive's sender first; 0 past the bottom frame). */
	SQ_EV_IO = 15,
	/* io__batch: (more of) the innermost SQ_EV_IO_DEPTH Methods of the record right
	 * before it (an SQ_EV_IO or SQ_EV_IO_READY of the same batch: the VM writes the two
	 * together). arg: the index in the stack of a[0]'s Method (bits 0-7: 3 after
	 * SQ_EV_IO, 0 after SQ_EV_IO_READY) and the descriptor's kind (bits 8-15, as
	 * SQ_EV_IO's); a[0..] the Methods from there outwards, up to the SQ_EV_IO_DEPTH-th
	 * of the stack (0 past it or past the bottom frame). Written after an SQ_EV_IO only
	 * when its stack is deeper than the three it holds. */
	SQ_EV_IO_FRAMES = 16,
	/* req__batch: a request that began and ended in one run of its process (no
	 * scheduler record of its process, and no collection, in between), written at its
	 * end instead of an SQ_EV_REQUEST_BEGIN and an SQ_EV_REQUEST_END: the VM holds a
	 * begin record back while its process runs. ts: the end; arg the status (as SQ_EV_REQUEST_END's);
	 * a[0] the id, a[1] the route, a[2] the process's id, a[3] when it began (ns), a[4]
	 * the objects and a[5] the bytes it allocated (not totals). A request whose begin
	 * was written has SQ_EV_REQUEST_END: the begin record carries its own time and the
	 * allocation totals of its moment. */
	SQ_EV_REQUEST_RUN = 17,
};

/* SQ_EV_IO's ops (io__wait's four, then open and close) and descriptor kinds. */
enum { SQ_IO_READ, SQ_IO_WRITE, SQ_IO_ACCEPT, SQ_IO_CONNECT, SQ_IO_OPEN, SQ_IO_CLOSE };
enum { SQ_IO_FILE, SQ_IO_TCP, SQ_IO_OTHER };

/* SQ_EV_IO's and SQ_EV_IO_FRAMES's arg. */
#define SQ_EV_IO_ARG(op, kind) ((uint32_t)(op) | (uint32_t)(kind) << 8)
#define SQ_EV_IO_OP(arg) ((arg) & 0xff)
#define SQ_EV_IO_KIND(arg) (((arg) >> 8) & 0xff)
/* The innermost Methods of a call or a wait the records hold (a reader that wants
 * more frames walks the stack itself), and those an SQ_EV_IO holds. */
#define SQ_EV_IO_DEPTH 6
#define SQ_EV_IO_METHODS 3

/* The strings a record points to are the VM's permanent names (class names, selectors):
 * they never move and stay readable after the event. Frames and Methods are addresses,
 * for pairing and naming only: by the time a batch is read a frame may hold another
 * activation. */
typedef struct SqEventRecord {
	uint32_t kind;		/* SQ_EV_* */
	uint32_t arg;		/* the kind's small argument */
	uint64_t ts;		/* CLOCK_MONOTONIC, ns (bpf_ktime_get_ns's clock) */
	uint64_t a[7];		/* the kind's words */
} SqEventRecord;		/* 72 bytes */

#endif

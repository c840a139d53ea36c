/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * event_batch.h - the records of the batch probes (squeak:alloc__batch, call__batch, sched__batch,
 * req__batch, io__batch, sample__batch):
 * part of the probe contract, as squeak.d and debug_offsets.h are. Plain C with fixed-width
 * types, included by the VM (vm/record.c) and by the tools' BPF programs (bpf/sqbatch.bpf.h).
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

/* The kinds (SqEventRecord.kind); each kind's words are the struct named beside it (below). */
enum {
	SQ_EV_NONE = 0,
	SQ_EV_ALLOC = 1,		/* SqEvAlloc: r->alloc */
	SQ_EV_METHOD_ENTRY = 2,		/* SqEvCall: r->call */
	SQ_EV_METHOD_RETURN = 3,
	SQ_EV_BLOCK_ENTRY = 4,
	SQ_EV_BLOCK_RETURN = 5,
	SQ_EV_PROCESS_ACTIVATE = 6,	/* SqEvProcess: r->process */
	SQ_EV_PROCESS_READY = 7,
	SQ_EV_PROCESS_WAIT = 8,
	SQ_EV_PROCESS_CREATE = 9,
	SQ_EV_PROCESS_EXIT = 10,
	SQ_EV_IO_WAIT = 11,
	SQ_EV_IO_READY = 12,
	SQ_EV_REQUEST_BEGIN = 13,	/* SqEvRequest: r->req */
	SQ_EV_REQUEST_END = 14,
	SQ_EV_IO = 15,			/* SqEvIo: r->io */
	SQ_EV_IO_FRAMES = 16,		/* SqEvIoFrames: r->frames */
	SQ_EV_REQUEST_RUN = 17,		/* SqEvRequest: r->req */
	SQ_EV_REQUEST_TRACE = 18,	/* SqEvTrace: r->trace */
	SQ_EV_ALLOC_SAMPLE = 19,	/* SqEvAllocSample: r->sample */
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

/* The words of each kind. Every word is a uint64_t: strings (char *), frames and Methods
 * are the VM's addresses, written as integers (the layout is the same for the VM and
 * for BPF). The strings a record points to are the VM's permanent names (class names,
 * selectors): they never move and stay readable after the event. Frames and Methods
 * are addresses, for pairing and naming only: by the time a batch is read a frame may
 * hold another activation. */

/* alloc__batch: an object was allocated (object__alloc's event). */
typedef struct SqEvAlloc {
	uint64_t cls;		/* its class's name (char *) */
	uint64_t bytes;		/* its size, header included */
	uint64_t alloc_cls;	/* the allocating method's class name (char *) */
	uint64_t alloc_sel;	/* its selector (char *) */
} SqEvAlloc;

/* call__batch: an activation begins or ends (method__entry, method__return,
 * block__entry, block__return: SQ_EV_METHOD_ENTRY .. SQ_EV_BLOCK_RETURN). arg: depth
 * (as the probes'). */
typedef struct SqEvCall {
	uint64_t recv_cls;	/* the receiver's class name (char *, as the probes') */
	uint64_t selector;	/* (char *) */
	uint64_t def_cls;	/* the defining class's name (char *) */
	uint64_t frame;		/* the activation's frame */
	uint64_t caller;	/* the caller's frame (0: the outermost) */
	uint64_t method;	/* the frame's Method * */
	uint64_t caller_method;	/* the caller's Method * (0: none) */
} SqEvCall;

/* The VM's allocation totals at an event, objects and bytes (as sqvm_debug_offsets adds
 * them up): what a reader of the batch can no longer read as they were. Every
 * SqEvProcess and SqEvRequest holds them in the same words (SQ_EV_REQUEST_RUN: the
 * request's own, not totals). */
typedef struct SqEvAllocs {
	uint64_t objects;
	uint64_t bytes;
} SqEvAllocs;

/* A green process's records, each with its per-event probe's arguments (squeak.d):
 * sched__batch takes the scheduler's events (SQ_EV_PROCESS_ACTIVATE .. SQ_EV_IO_WAIT;
 * req__batch those of a process while it has a request open; io__batch SQ_EV_IO_READY).
 * Every one holds the process's id, its name and the allocation totals in the same
 * words, so that a reader may take them from any of these kinds alike.
 *
 * The name is a Smalltalk string, which a collection may move, so the VM flushes the
 * buffer before every collection and a reader reads the name while it handles the
 * batch. A wait's (SQ_EV_PROCESS_WAIT, SQ_EV_IO_WAIT) method is the running process's
 * innermost frame's Method *: what a reader of the batch can no longer read as it was.
 *
 * SQ_EV_PROCESS_ACTIVATE (call__batch too): the scheduler transfers control to a green
 * process (process__activate's event, so that call times can leave out time switched
 * out); arg its priority. It is in sched__batch too while that is enabled (one record
 * for both batch probes).
 * SQ_EV_PROCESS_READY (process__ready): arg the reason (0 resumed .. 4 io); method, for
 * reason 1 (a Semaphore's signal), the running process's innermost frame's Method *:
 * where the signaller sent it; 0 for the other reasons.
 * SQ_EV_PROCESS_WAIT (process__wait): semaphore, timeout, method; arg, for a Semaphore,
 * the id (its low 31 bits) of the process that last took a signal of it (a wait that
 * did not block, or the waiter a signal woke), 0 if none: a mutex's holder.
 * SQ_EV_PROCESS_CREATE (process__create): arg the priority.
 * SQ_EV_PROCESS_EXIT (process__exit).
 * SQ_EV_IO_WAIT (io__wait): arg the op (0 read, 1 write, 2 accept, 3 connect); fd,
 * timeout, method. (io__batch has the whole wait in SQ_EV_IO_READY's records.)
 * SQ_EV_IO_READY (io__ready; io__batch's alone: sched__batch's process__ready, reason 4,
 * follows at the same time): arg the op; fd, timedout, wait_began (0 if io__batch was
 * not enabled then: then nothing follows), and an SQ_EV_IO_FRAMES record follows with
 * the waiting process's Methods (its frames are as they were when it began to wait) and
 * the descriptor's kind: the whole wait, for a reader that keeps nothing between the
 * two. */
typedef struct SqEvProcess {
	uint64_t id;			/* the process's id */
	union {
		uint64_t semaphore;	/* PROCESS_WAIT: the Semaphore's identity hash (0: a Delay) */
		uint64_t fd;		/* IO_WAIT, IO_READY: the descriptor */
	};
	union {
		uint64_t timeout;	/* PROCESS_WAIT: ns, the Delay's length; IO_WAIT: ns, 0: none */
		uint64_t timedout;	/* IO_READY: 0 or 1 */
	};
	uint64_t name;			/* the process's name (char *) */
	SqEvAllocs allocs;		/* the totals at the event */
	union {
		uint64_t method;	/* PROCESS_WAIT, IO_WAIT: the Method * it waits in;
					 * PROCESS_READY: the signaller's (reason 1) */
		uint64_t wait_began;	/* IO_READY: when the wait began (its io__wait), ns */
	};
} SqEvProcess;

/* req__batch's requests (and sched__batch's, which takes the requests' records too).
 * SQ_EV_REQUEST_BEGIN (request__begin): req__batch gets it late, with its own time and
 * the allocation totals of its moment, only once its process stops running (or a
 * collection begins) before the request ends; otherwise the request is one
 * SQ_EV_REQUEST_RUN.
 * SQ_EV_REQUEST_END (request__end): arg the status (int32, -1 and -2 as request__end's).
 * A request whose begin was written has an SQ_EV_REQUEST_END.
 * SQ_EV_REQUEST_RUN: a request that began and ended in one run of its process (no
 * scheduler record of its process, and no collection, in between), written at its end
 * instead of an SQ_EV_REQUEST_BEGIN and an SQ_EV_REQUEST_END: the VM holds a begin
 * record back while its process runs. ts: the end; arg the status (as
 * SQ_EV_REQUEST_END's); began; allocs the objects and bytes it allocated (not totals). */
typedef struct SqEvRequest {
	uint64_t id;		/* the request's id */
	uint64_t route;		/* char *, interned */
	uint64_t process;	/* its process's id */
	uint64_t began;		/* REQUEST_RUN: when it began (ns); the others: 0 */
	SqEvAllocs allocs;	/* the totals at the event (REQUEST_RUN: its own) */
} SqEvRequest;

/* req__batch (and sched__batch): the W3C trace context of a request that has one
 * (Probe beginRequest:traceparent: with a valid traceparent), written right before the
 * request's SQ_EV_REQUEST_BEGIN or SQ_EV_REQUEST_RUN, in the same batch or at the end
 * of the one before: a reader keeps it by the request's id until that record comes.
 * arg: the trace flags (bit 0: sampled). ts: as the record it comes before. */
typedef struct SqEvTrace {
	uint64_t id;		/* the request's id */
	uint64_t trace_hi;	/* the 16-byte trace id, its first 8 bytes (big-endian) */
	uint64_t trace_lo;	/* and its last 8 */
	uint64_t parent;	/* the caller's span (traceparent's parent-id) */
	uint64_t span;		/* the request's own span, the VM's (traceresponse's) */
	uint64_t process;	/* the request's process's id */
} SqEvTrace;

/* io__batch: one system call of an I/O primitive (a handle's read, write or send,
 * accept4, connect, open, close; not the event loop's own calls), stamped with the
 * time it began. arg: the op (bits 0-7: 0 read, 1 write, 2 accept, 3 connect,
 * 4 open, 5 close) and the descriptor's kind (bits 8-15: 0 a regular file, 1 a TCP
 * socket, 2 other; accept's and open's are the new descriptor's when the call
 * succeeded, else the listener's and a file's). */
typedef struct SqEvIo {
	uint64_t process;	/* the running process's id */
	uint64_t fd;		/* the descriptor (int): accept's and open's new one when the call
				 * succeeded, else the listener and -1; connect's new socket */
	uint64_t result;	/* (int64) bytes read or written, accept's and open's new
				 * descriptor, 0; or -errno: EAGAIN is a failure */
	uint64_t ns;		/* the time in the call */
	uint64_t methods[SQ_EV_IO_METHODS];	/* the running process's innermost Methods (the
						 * primitive's sender first; 0 past the bottom frame) */
} SqEvIo;

/* io__batch: (more of) the innermost SQ_EV_IO_DEPTH Methods of the record right before
 * it (an SQ_EV_IO or SQ_EV_IO_READY of the same batch: the VM writes the two together).
 * arg: the index in the stack of methods[0] (bits 0-7: SQ_EV_IO_METHODS after SQ_EV_IO,
 * 0 after SQ_EV_IO_READY) and the descriptor's kind (bits 8-15, as SQ_EV_IO's). Written
 * after an SQ_EV_IO only when its stack is deeper than the methods it holds. */
typedef struct SqEvIoFrames {
	uint64_t methods[SQ_EV_IO_DEPTH];	/* from there outwards, up to the SQ_EV_IO_DEPTH-th
						 * of the stack (0 past it or past the bottom frame) */
} SqEvIoFrames;

/* sample__batch: the sampler's allocation (object__alloc__sample's event, the same
 * samples while both are enabled), with what the probe's reader would have to read
 * itself: the running process and its innermost frame's Method. */
typedef struct SqEvAllocSample {
	uint64_t cls;		/* its class's name (char *) */
	uint64_t bytes;		/* its size, header included */
	uint64_t alloc_cls;	/* the allocating method's class name (char *; "" if none) */
	uint64_t alloc_sel;	/* its selector (char *; "" if none) */
	uint64_t weight;	/* the bytes it stands for (the sampler's, as the probe's) */
	uint64_t process;	/* the running process's id */
	uint64_t method;	/* the allocating Method * (0: none) */
} SqEvAllocSample;

/* Words per record. */
#define SQ_EV_WORDS 7

typedef struct SqEventRecord {
	uint32_t kind;		/* SQ_EV_* */
	uint32_t arg;		/* the kind's small argument */
	uint64_t ts;		/* CLOCK_MONOTONIC, ns (bpf_ktime_get_ns's clock) */
	union {			/* the kind's words (a kind's unused words hold anything) */
		SqEvAlloc alloc;
		SqEvCall call;
		SqEvProcess process;
		SqEvRequest req;
		SqEvTrace trace;
		SqEvIo io;
		SqEvIoFrames frames;
		SqEvAllocSample sample;
		uint64_t word[SQ_EV_WORDS];	/* all of them, for what handles a record whatever
						 * its kind (zeroing, tests): never a field by number */
	};
} SqEventRecord;		/* 72 bytes */

/* The wire layout, checked where the header is compiled (the VM, the BPF programs):
 * every field at the offset it has always had (word n at 16 + 8 n), for the tools and
 * the bpftrace scripts that read records by offset. */
#define SQ_EV_AT(field, off) \
	_Static_assert(__builtin_offsetof(SqEventRecord, field) == (off), "SqEventRecord." #field " at " #off)
#define SQ_EV_WORD(field, n) SQ_EV_AT(field, 16 + 8 * (n))
_Static_assert(sizeof(SqEventRecord) == 72, "SqEventRecord is 72 bytes");
SQ_EV_AT(kind, 0);
SQ_EV_AT(arg, 4);
SQ_EV_AT(ts, 8);
SQ_EV_WORD(word, 0);
SQ_EV_WORD(alloc.cls, 0);
SQ_EV_WORD(alloc.bytes, 1);
SQ_EV_WORD(alloc.alloc_cls, 2);
SQ_EV_WORD(alloc.alloc_sel, 3);
SQ_EV_WORD(call.recv_cls, 0);
SQ_EV_WORD(call.selector, 1);
SQ_EV_WORD(call.def_cls, 2);
SQ_EV_WORD(call.frame, 3);
SQ_EV_WORD(call.caller, 4);
SQ_EV_WORD(call.method, 5);
SQ_EV_WORD(call.caller_method, 6);
SQ_EV_WORD(process.id, 0);
SQ_EV_WORD(process.semaphore, 1);
SQ_EV_WORD(process.fd, 1);
SQ_EV_WORD(process.timeout, 2);
SQ_EV_WORD(process.timedout, 2);
SQ_EV_WORD(process.name, 3);
SQ_EV_WORD(process.allocs.objects, 4);
SQ_EV_WORD(process.allocs.bytes, 5);
SQ_EV_WORD(process.method, 6);
SQ_EV_WORD(process.wait_began, 6);
SQ_EV_WORD(req.id, 0);
SQ_EV_WORD(req.route, 1);
SQ_EV_WORD(req.process, 2);
SQ_EV_WORD(req.began, 3);
SQ_EV_WORD(req.allocs.objects, 4);
SQ_EV_WORD(req.allocs.bytes, 5);
SQ_EV_WORD(trace.id, 0);
SQ_EV_WORD(trace.trace_hi, 1);
SQ_EV_WORD(trace.trace_lo, 2);
SQ_EV_WORD(trace.parent, 3);
SQ_EV_WORD(trace.span, 4);
SQ_EV_WORD(trace.process, 5);
SQ_EV_WORD(io.process, 0);
SQ_EV_WORD(io.fd, 1);
SQ_EV_WORD(io.result, 2);
SQ_EV_WORD(io.ns, 3);
SQ_EV_WORD(io.methods, 4);
SQ_EV_WORD(frames.methods, 0);
SQ_EV_WORD(sample.cls, 0);
SQ_EV_WORD(sample.bytes, 1);
SQ_EV_WORD(sample.alloc_cls, 2);
SQ_EV_WORD(sample.alloc_sel, 3);
SQ_EV_WORD(sample.weight, 4);
SQ_EV_WORD(sample.process, 5);
SQ_EV_WORD(sample.method, 6);
_Static_assert(sizeof(((SqEventRecord *)0)->io) == 8 * (4 + SQ_EV_IO_METHODS), "SqEvIo's methods end the record");
_Static_assert(sizeof(((SqEventRecord *)0)->frames) == 8 * SQ_EV_IO_DEPTH, "SqEvIoFrames's methods");
_Static_assert(sizeof(((SqEventRecord *)0)->word) == 72 - 16, "the words fill the record");
#undef SQ_EV_WORD
#undef SQ_EV_AT

#endif
